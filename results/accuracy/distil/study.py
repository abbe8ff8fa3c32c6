"""The expansion G_K distilled into the operator (``algorithms/distil.py``), on a finished run:
the operator alone, its expansion G_K and the distilled student, side by side on every reward set
and kind of points, and the student's answer time against the expansion's.

    python results/accuracy/distil/study.py RUN --methods favor,fb --horizon 400 [--steps 3000]
        [--points 2048] [--rewards 256] [--lr 1e-4] [--batch-size 256] [--n-refs 256]
        [--kernel-heads H] [--tails 10,30] --out results/accuracy/distil/NAME.json

``--variants`` (a JSON list) distils once per entry, each a set of DistilConfig overrides; an
entry's ``kernel_heads`` overrides ``--kernel-heads`` for it.

``--kernel-heads H`` (favor, a multiple of the operator's H0): a wider student, H kernels in the
occupancy's mixture instead of H0 (``OperatorModel.widened``, the package's ``distil.kernel_heads``).
It starts as the teacher: every kernel copied H / H0 times, each copy's mixture logit lowered by
log(H / H0), so the mixture is the teacher's, and the copies' features moved by a little noise
(1e-3 of their scale) so that they can part.

``--tails 10,30``: the expansion G_k with the student as its tail, for each k (``METHOD+dK+kk``,
a k-step rollout instead of K steps at new points), beside the teacher's own G_k.
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
    ap.add_argument("--kernel-heads", type=int, default=0,
                    help="a wider student (favor): H kernels (0: the operator's)")
    ap.add_argument("--variants", default="[{}]",
                    help='a JSON list of DistilConfig overrides, each distilled in turn (e.g. [{"lr": 1e-3}])')
    ap.add_argument("--tails", default="",
                    help="horizons k: also score G_k with the student as its tail (and the teacher's G_k)")
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
    base, path = cfg, Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)

    def row(rows: dict, label: str, values: dict) -> None:   # printed, and the file rewritten: a stop loses no row
        rows[label] = values
        print(label, json.dumps(values), flush=True)
        path.write_text(json.dumps(out, indent=1))

    for name in args.methods.split(","):
        teacher = p.expansion_model(run / "models", name, rollouts)
        rows = out[name] = {}
        tails = [int(k) for k in args.tails.split(",") if k.strip()]
        for label, model, k in ((name, teacher, 0), *((f"{name}+k{k}", teacher, k) for k in [args.horizon, *tails])):
            row(rows, label, score_of(model, p, obs, act, k))
        for variant in json.loads(args.variants):
            heads = variant.pop("kernel_heads", args.kernel_heads)
            cfg = dataclasses.replace(base, distil=dataclasses.replace(base.distil, **variant))
            t0 = time.perf_counter()
            start = teacher
            if heads:
                start = teacher.widened(heads, jax.random.PRNGKey(7))
                start.rollouts = rollouts   # the teacher's rollout (replace copies the one-step model and pi)
                row(rows, f"{name} widened to {heads} kernels", score_of(start, p, obs, act, 0))
            student, losses = distil_operator(cfg, p, start)
            student.rollouts = rollouts
            label = f"{name}+d{args.horizon} {json.dumps({**variant, **({'kernel_heads': heads} if heads else {})})}"
            row(rows, label, {**score_of(student, p, obs, act, 0), "distil_seconds": time.perf_counter() - t0,
                              "loss_first_last": [float(losses[:, :100].mean()), float(losses[:, -100:].mean())]})
            for k in tails:   # G_k with the student as its tail
                row(rows, f"{label} +k{k}", score_of(student, p, obs, act, k))
            jax.clear_caches()


if __name__ == "__main__":
    main()
