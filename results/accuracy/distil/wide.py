"""A wider student trained apart from its targets: the targets made where the run is (this CPU),
the training where a GPU is lent, the scoring here again.

    python results/accuracy/distil/wide.py targets RUN --out DATA.npz
    python results/accuracy/distil/wide.py train RUN DATA.npz --heads 32 --steps 60000 --n-refs 4096 --out S.params
    python results/accuracy/distil/wide.py score RUN S.params --heads 32 --tails 30,60 --out ROWS.json

``targets``: ``evaluate.distil_data`` for the run's favor with G_400 and the distillation's
defaults (4096 points, the family's training rewards and 256 generic draws), saved as arrays.
``train``: the teacher widened to ``--heads`` kernels (``OperatorModel.widened``: it starts as the teacher)
and trained by ``distil.train`` on them. ``score``: the student alone and as the tail of G_k
(``study.score_of``), beside the teacher.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np

from resolvent.algorithms import distil
from resolvent.algorithms.distil import DistilConfig, DistilData
from resolvent.algorithms.expansion import Rollouts
from resolvent.experiments import EvaluateConfig, RunDir, prepare
from resolvent.experiments.evaluate import distil_data, named_key
from resolvent.model import OperatorModel

sys.path.insert(0, str(Path(__file__).parent))
from study import score_of  # noqa: E402

HORIZON = 400


def run_config(run: Path) -> EvaluateConfig:
    cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
    return dataclasses.replace(cfg, distil=DistilConfig(horizon=HORIZON))


def teacher_of(run: Path, p=None) -> OperatorModel:
    teacher = OperatorModel.load(run / "models", "favor")
    if p is not None:
        teacher.onestep, teacher.target_policy, teacher.rollouts = p.pi.model, p.source.policy, Rollouts()
    return teacher


def targets(args) -> None:
    cfg = run_config(args.run)
    p = prepare(cfg)
    data = distil_data(cfg, p, teacher_of(args.run, p))
    np.savez(args.out, **{k: np.asarray(v) for k, v in data._asdict().items()})


def train(args) -> None:
    with np.load(args.data) as z:
        data = DistilData(**{k: jnp.asarray(z[k]) for k in DistilData._fields})
    start = teacher_of(args.run).widened(args.heads, jax.random.PRNGKey(7))
    config = DistilConfig(horizon=HORIZON, steps=args.steps, n_refs=args.n_refs, lr=args.lr)
    t0 = time.perf_counter()
    params, losses = distil.train(start.params, start.network, config, data,
                                  named_key(run_config(args.run).seed, "favor", "distil"))
    losses = np.asarray(losses)
    print(json.dumps({"heads": args.heads, "steps": args.steps, "n_refs": args.n_refs, "lr": args.lr,
                      "seconds": round(time.perf_counter() - t0, 1), "device": str(jax.devices()[0]),
                      "loss_first_last": [float(losses[:, :100].mean()), float(losses[:, -100:].mean())]}), flush=True)
    Path(args.out).write_bytes(flax.serialization.msgpack_serialize(jax.tree_util.tree_map(np.asarray, params)))
    np.save(Path(args.out).with_suffix(".losses.npy"), losses)


def score(args) -> None:
    cfg = run_config(args.run)
    p = prepare(cfg)
    raw = np.asarray(p.y) * p.x_std + p.x_mean
    obs, act = raw[:, :p.features["obs"].shape[1]], raw[:, p.features["obs"].shape[1]:]
    teacher = teacher_of(args.run, p)
    start = teacher.widened(args.heads, jax.random.PRNGKey(7))
    params = flax.serialization.msgpack_restore(Path(args.params).read_bytes())
    student = dataclasses.replace(start, params=jax.tree_util.tree_map(jnp.asarray, params))
    student.rollouts = teacher.rollouts
    tails = [int(k) for k in args.tails.split(",") if k.strip()]
    rows = {}
    for label, model, k in ((f"favor+k{HORIZON}", teacher, HORIZON), *((f"favor+k{k}", teacher, k) for k in tails),
                            (f"student {args.heads} kernels", student, 0),
                            *((f"student {args.heads} kernels +k{k}", student, k) for k in tails)):
        rows[label] = score_of(model, p, obs, act, k)
        print(label, json.dumps(rows[label]), flush=True)
    Path(args.out).write_text(json.dumps({"params": str(args.params), "heads": args.heads, "rows": rows}, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    t = sub.add_parser("targets")
    t.add_argument("run", type=Path)
    t.add_argument("--out", required=True)
    tr = sub.add_parser("train")
    tr.add_argument("run", type=Path)
    tr.add_argument("data")
    tr.add_argument("--heads", type=int, default=32)
    tr.add_argument("--steps", type=int, default=60_000)
    tr.add_argument("--n-refs", type=int, default=4096)
    tr.add_argument("--lr", type=float, default=3e-4)
    tr.add_argument("--out", required=True)
    s = sub.add_parser("score")
    s.add_argument("run", type=Path)
    s.add_argument("params")
    s.add_argument("--heads", type=int, default=32)
    s.add_argument("--tails", default="30,60")
    s.add_argument("--out", required=True)
    args = ap.parse_args()
    {"targets": targets, "train": train, "score": score}[args.what](args)


if __name__ == "__main__":
    main()
