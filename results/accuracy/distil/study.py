"""The expansion G_K distilled into the operator (``algorithms/distil.py``), on a finished run:
the operator alone, its expansion G_K and the distilled student, side by side on every reward set
and kind of points, and the student's answer time against the expansion's.

    python results/accuracy/distil/study.py RUN --methods favor,fb --horizon 400 [--steps 3000]
        [--points 2048] [--rewards 256] [--lr 1e-4] [--batch-size 256] [--n-refs 256]
        --out results/accuracy/distil/NAME.json
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import jax
import numpy as np

from resolvent.algorithms.distil import DistilConfig
from resolvent.algorithms.expansion import Rollouts
from resolvent.experiments import EvaluateConfig, RunDir, prepare
from resolvent.experiments.evaluate import distil_operator, entry_of, score, set_answers
from resolvent.model import OperatorModel

SHOWN = ("test_mse", "test_r2", "probe_r2", "traj_test_r2", "traj_probe_r2", "data_test_r2", "data_probe_r2")


def score_of(model: OperatorModel, p, obs, act, horizon: int) -> dict:
    """The mean over seeds of ``SHOWN`` and the seconds every answer took."""
    t0 = time.perf_counter()
    entry = entry_of(score(set_answers(model, p, obs, act, horizon), p), p)
    return {**{k: float(np.mean(entry[k])) for k in SHOWN if k in entry}, "answer_seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--methods", default="favor,fb")
    ap.add_argument("--horizon", type=int, default=400)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--points", type=int, default=2048)
    ap.add_argument("--rewards", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--n-refs", type=int, default=256)
    ap.add_argument("--variants", default="[{}]",
                    help='a JSON list of DistilConfig overrides, each distilled in turn (e.g. [{"lr": 1e-3}])')
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    run = Path(args.run)
    cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
    cfg = dataclasses.replace(cfg, distil=DistilConfig(horizon=args.horizon, points=args.points, rewards=args.rewards,
                                                       steps=args.steps, lr=args.lr, batch_size=args.batch_size,
                                                       n_refs=args.n_refs))
    p = prepare(cfg)
    raw = np.asarray(p.y) * p.x_std + p.x_mean
    obs, act = raw[:, :p.features["obs"].shape[1]], raw[:, p.features["obs"].shape[1]:]
    rollouts, out = Rollouts(), {"config": dataclasses.asdict(cfg.distil), "run": str(run)}
    base = cfg
    for name in args.methods.split(","):
        teacher = OperatorModel.load(run / "models", name)
        teacher.onestep, teacher.target_policy, teacher.rollouts = p.pi.model, p.source.policy, rollouts
        rows = {}
        for label, model, k in ((name, teacher, 0), (f"{name}+k{args.horizon}", teacher, args.horizon)):
            rows[label] = score_of(model, p, obs, act, k)
            print(label, json.dumps({k: round(v, 4) for k, v in rows[label].items()}), flush=True)
        for variant in json.loads(args.variants):
            cfg = dataclasses.replace(base, distil=dataclasses.replace(base.distil, **variant))
            t0 = time.perf_counter()
            student, losses = distil_operator(cfg, p, teacher)
            label = f"{name}+d{args.horizon} {json.dumps(variant)}"
            rows[label] = {**score_of(student, p, obs, act, 0), "distil_seconds": time.perf_counter() - t0,
                           "loss_first_last": [float(losses[:, :100].mean()), float(losses[:, -100:].mean())]}
            print(label, json.dumps(rows[label]), flush=True)
            jax.clear_caches()
        out[name] = rows
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
