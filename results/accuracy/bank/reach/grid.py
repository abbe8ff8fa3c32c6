"""The bank with reach on a finished run, for a grid of its settings: how many starting states
(``points``), how many steps of each rollout are bank states (``steps``), how many neighbours
answer (``neighbours``), how they are weighted (``weights``: the product's 1 / distance,
``inverse2`` 1 / distance^2, ``uniform``), and the fewest model steps (``least``), each against
G_30 and G_400 of the same operator. Every row is written as it comes.

    python results/accuracy/bank/reach/grid.py RUN --method favor --out FILE.json \
        --grid '[{}, {"neighbours": 16}, {"weights": "uniform"}, {"points": 4096}, {"least": 10}]'

A grid entry names the settings that differ from the product's (``BankConfig``; ``tails``: the
k's of ``METHOD+b400+kk`` scored, default [30]).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from resolvent.algorithms.bank import Bank, BankConfig, bank_starts
from resolvent.experiments import open_run
from resolvent.experiments.evaluate import horizon_answers, set_answers
from resolvent.keys import name_id
from study import row_writer   # beside this script

SHOWN = tuple(f"{kind}{s}_{m}" for kind in ("", "traj_", "data_") for s, m in (("test", "mse"), ("probe", "r2")))
WEIGHTS = ("inverse", "inverse2", "uniform")


class WeightedBank(Bank):
    """The bank with its neighbours weighted otherwise than by 1 / distance (still >= 0, summing to 1,
    so the answer keeps its exact properties)."""

    def __init__(self, cfg: BankConfig, starts: np.ndarray, weights: str):
        super().__init__(cfg, starts)
        self.weighting = weights

    def neighbours_of(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        i, w = super().neighbours_of(obs)                                           # (n, N) each
        if self.weighting == "uniform":
            w = np.full_like(w, 1.0 / w.shape[1])
        elif self.weighting == "inverse2":
            w = w ** 2 / (w ** 2).sum(1, keepdims=True)
        return i, w


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--method", default="favor")
    ap.add_argument("--grid", default="[{}]", help="a JSON list of settings, each differing from BankConfig's")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    run, path, grid = Path(args.run), Path(args.out), json.loads(args.grid)
    cfg, p = open_run(run)
    obs, act = p.raw_points()
    out: dict = {"run": str(run), "args": vars(args), "rows": {}}

    row = row_writer(out, path, p, SHOWN)

    model = p.expansion_model(run / "models", args.method)
    for k in (30, 400):
        row(f"{args.method}+k{k}", set_answers(model, p, obs, act, k))
    for g in grid:
        g = dict(g)
        tails, weights = g.pop("tails", [30]), g.pop("weights", "inverse")
        if weights not in WEIGHTS:
            raise ValueError(f"weights must be one of {WEIGHTS}, got {weights!r}")
        bcfg = BankConfig(**{"points": 2048, **g})
        t0 = time.perf_counter()
        model.bank = WeightedBank(bcfg, bank_starts(p.features, bcfg, name_id(f"{cfg.seed}-bank")), weights)
        model.bank.build(p.pi.model, p.source.policy)
        built = time.perf_counter() - t0
        t0 = time.perf_counter()
        answers = horizon_answers(model, p, obs, act, tails)
        seconds = time.perf_counter() - t0
        label = " ".join(f"{a}={v}" for a, v in {**g, **({"weights": weights} if weights != "inverse" else {})}.items())
        for k in tails:
            row(f"{args.method}+b{bcfg.horizon}+k{k} {label}".strip(), answers[k], bank_seconds=round(built, 2),
                seconds=round(seconds, 2), bank_states=len(model.bank))
        model.bank = None


if __name__ == "__main__":
    main()
