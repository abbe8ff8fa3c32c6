"""How far apart the futures of a bank state's nearest bank states lie, over the whole bank: the
scale a tolerance for ``BankConfig.agree`` would be read against on another dataset.

    python results/accuracy/bank/agree/spreads.py RUN [RUN ...] > results/accuracy/bank/agree/spreads.txt

For every bank state (the run's bank configuration, 2048 states, reach 0.1), its ``neighbours``
nearest bank states (itself among them) and the largest distance of their futures F from their
mean (``Bank.futures``, the run's gamma): the quantiles of that spread over the bank.
"""
from __future__ import annotations

import dataclasses
import sys

import numpy as np

from resolvent.algorithms.bank import Bank, bank_starts
from resolvent.experiments import open_run
from resolvent.keys import name_id


def main() -> None:
    for run in sys.argv[1:]:
        cfg, p = open_run(run)
        bc = dataclasses.replace(cfg.bank, points=2048, reach=0.1, agree=0.0)
        bank = Bank(bc, bank_starts(p.features, bc, name_id(f"{cfg.seed}-bank"))).build(p.pi.model, p.source.policy)
        f = bank.futures(cfg.gamma)[bank.rows]                                          # (B, ds)
        _, i = bank.tree.query(bank.path[bank.rows], k=bc.neighbours, eps=bc.eps, workers=-1)
        near = f[i]                                                                     # (B, N, ds)
        spread = np.linalg.norm(near - near.mean(1, keepdims=True), axis=-1).max(1)     # (B,)
        q = np.quantile(spread, [0.1, 0.5, 0.9, 0.99])
        print(f"{run} ({cfg.family} {cfg.dataset}, {f.shape[1]} state dimensions, {len(f):,} bank states): "
              f"spread quantiles 10/50/90/99% {' / '.join(f'{v:.4f}' for v in q)}; "
              f"F's standard deviation over the bank {f.std(0).mean():.3f}", flush=True)


if __name__ == "__main__":
    main()
