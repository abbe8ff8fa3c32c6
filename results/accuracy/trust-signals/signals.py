"""The trust report's two signals against the truth, for every candidate of a finished run.

    python results/accuracy/trust-signals/signals.py RUN OUT.json [--onestep-steps N]

For each operator of RUN and each expansion horizon k (0, 10, 30, 60, 150, 400): its agreement
with the run's per-reward FQE oracle on the held-out rewards at the trust transitions (relative
RMSE), its Bellman residual on those transitions, and its true relative RMSE on the same
rewards at every evaluation point kind with Monte-Carlo truth. ``--onestep-steps N`` fits the
one-step model again with N Adam steps (a run made with the 3000-step model, scored as if made
with today's default); the operators and the oracle are the run's, unchanged. The run is read
from a copy (its oracle checkpoint is reloaded there, not retrained). Writes one JSON object
per candidate: ``agreement``, ``bellman``, ``true`` (point kind -> relative RMSE).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import tempfile

import numpy as np

from resolvent.experiments import EvaluateConfig, RunDir
from resolvent.experiments.evaluate import PREFIX, entry_of, prepare, score, trust_truth

HORIZONS = (0, 10, 30, 60, 150, 400)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("out")
    ap.add_argument("--onestep-steps", type=int)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp()
    shutil.copytree(a.run, tmp, dirs_exist_ok=True)
    run = RunDir(tmp)
    cfg = EvaluateConfig.from_dict(run.read_config())
    if a.onestep_steps:
        cfg = dataclasses.replace(cfg, onestep=dataclasses.replace(cfg.onestep, steps=a.onestep_steps))
    p = prepare(cfg)
    trust_truth(cfg, p, run)                                   # the run's oracle, reloaded
    raw = np.asarray(p.y) * p.x_std + p.x_mean
    ds = p.features["obs"].shape[1]
    rewards = p.source.rewards["heldout"]
    out = {}
    for name in (m for m in cfg.methods if m != "fqe"):
        model = p.expansion_model(run.path / "models", name)
        for k in HORIZONS:
            pred = np.stack([model.q_values(r, raw[:, :ds], raw[:, ds:], seed=None, horizon=k)
                             for _, r in rewards], 1)           # (S, H, n_all)
            e = entry_of(score({"heldout": pred}, p), p)
            label = f"{name}+k{k}" if k else name
            true = {kind: float(np.mean(e[f"{pre}heldout_rel_rmse"]))
                    for kind, pre in PREFIX.items() if f"{pre}heldout_rel_rmse" in e}
            out[label] = {"agreement": float(np.mean(e["trust_rel_rmse"])),
                          "bellman": float(np.mean(e["trust_bellman"])), "true": true}
            print(f"{label:16s} agreement {out[label]['agreement']:.4f}  bellman {out[label]['bellman']:.4f}  true "
                  + " ".join(f"{kk} {v:.4f}" for kk, v in true.items()), flush=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
