"""One lever at a time: accuracy of the attention operator under configuration changes.

    python benchmarks/ablation.py [--family pendulum-angle] [--dataset expert] [--steps 15000] [--tiny]
        '{"preset": "paper"}' '{}' '{"prior": {"kind": "generic"}}' '{"fqe": {"tau": 0.02}}' ...

Each argument is one variant, a JSON object of overrides of the default configuration
(``EvaluateConfig.preset("default")``): ``preset`` picks another base, ``prior`` and ``fqe``
override fields of the reward prior and of operator FQE, any other key a field of the
experiment (``m``, ``ref_sampling``, ``steps``, ``methods``...). Every variant trains 1 seed
(attention unless ``methods`` says otherwise) into ``runs/ablation/`` (a killed variant resumes,
a finished one is read back) and prints one JSON line
with its MSE and R^2 on the training, test and probe rewards and each probe's R^2.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import time
from pathlib import Path

import numpy as np

from resolvent.experiments import EvaluateConfig, run_evaluate


TINY = dict(steps=20, log_every=10, checkpoint_every=20, m=16, n_initial=4, n_train_rewards=8, n_test_rewards=2,
            hidden=(16,), features=8, gt_tol=1e-3, eval_points=("reset",))


def variant(spec: dict, family: str, dataset: str, steps: int, tiny: bool = False) -> EvaluateConfig:
    spec = dict(spec)
    prior, fqe, preset = spec.pop("prior", {}), spec.pop("fqe", {}), spec.pop("preset", "default")
    spec["methods"] = tuple(spec.get("methods", ("attention",)))
    base = {**dict(family=family, dataset=dataset, seeds=1, steps=steps, log_every=1500, checkpoint_every=steps),
            **(TINY if tiny else {})}
    cfg = EvaluateConfig.preset(preset, **{**base, **spec})
    return dataclasses.replace(cfg, fqe=dataclasses.replace(
        cfg.fqe, prior=dataclasses.replace(cfg.prior, **prior), **fqe))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("variants", nargs="+", help="JSON overrides, one variant each")
    ap.add_argument("--family", default="pendulum-angle")
    ap.add_argument("--dataset", default="expert")
    ap.add_argument("--steps", type=int, default=15_000)
    ap.add_argument("--out", default="runs/ablation")
    ap.add_argument("--tiny", action="store_true", help="smoke sizes: checks the script, not the numbers")
    args = ap.parse_args()
    for text in args.variants:
        cfg = variant(json.loads(text), args.family, args.dataset, args.steps, args.tiny)
        out = f"{args.out}/{args.family}-{args.dataset}-{hashlib.md5(text.encode()).hexdigest()[:8]}"
        t0 = time.time()
        res = run_evaluate(cfg, out, resume=Path(out, "config.json").is_file(), plot=False)  # resumable
        for method, r in res["methods"].items():
            mean = {k: round(float(np.mean(v)), 3) for k, v in r.items() if k.endswith(("mse", "r2"))}
            each = {k: round(float(np.mean(v)), 2) for k, v in r.get("probe_r2_each", {}).items()}
            print(json.dumps({"variant": json.loads(text), "family": args.family, "dataset": args.dataset,
                              "method": method, "steps": r["steps"], **mean, "probe_r2_each": each,
                              "seconds": round(time.time() - t0)}), flush=True)


if __name__ == "__main__":
    main()
