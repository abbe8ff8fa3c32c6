"""A run made with the bank (``--bank.points``) and the trust report: every expansion's and bank
answer's test MSE and probe R^2 at the three kinds of points, their held-out agreement with
per-reward FQE and their Bellman residual on its transitions (the means over the held-out rewards
auto reads), what auto's rule keeps with and without the bank's answers as candidates, and what
the product keeps (``trust.with_bank``: the bank's answer in place of auto's pick where its
residual is no larger and its agreement in auto's band), and what each operator's answers alone
would give.

    resolvent evaluate pendulum-angle --methods favor,fb --seeds 1 --bank.points 2048 --trust on --out runs/bank-trust
    cd results/accuracy/bank/pendulum-trust && python auto.py ../../../../runs/bank-trust/results.json > auto.txt
    python results/accuracy/bank/pendulum-trust/auto.py results/accuracy/bank/pendulum-trust-reach/results.json \
        > results/accuracy/bank/pendulum-trust-reach/auto.txt
    resolvent evaluate halfcheetah-vel --dataset expert --methods favor,fb --seeds 1 --trust on \
        --bank.points 2048 --out runs/hc-bank-trust
    python results/accuracy/bank/pendulum-trust/auto.py runs/hc-bank-trust/results.json \
        > results/accuracy/bank/halfcheetah-vel-expert-trust/auto.txt
    python examples/mountaincar.py
    resolvent evaluate --data examples/mountaincar-pump-v0 --policy examples/mountaincar.py:policy \
        --probes examples/mountaincar_probes.py --terminal examples/mountaincar.py:terminal \
        --methods favor,fb --seeds 1 --steps 10000 --trust on --bank.points 2048 --out runs/mc-bank-trust
    python results/accuracy/bank/pendulum-trust/auto.py runs/mc-bank-trust/results.json \
        > results/accuracy/bank/mountaincar-trust/auto.txt
    python examples/halfcheetah.py
    resolvent evaluate --data examples/halfcheetah-noisy-v0 --policy examples/halfcheetah.py:policy \
        --probes examples/halfcheetah_probes.py --methods favor,fb --seeds 1 --steps 15000 --trust on \
        --bank.points 2048 --out runs/hcn-bank-trust
    python results/accuracy/bank/pendulum-trust/auto.py runs/hcn-bank-trust/results.json \
        > results/accuracy/bank/halfcheetah-noisy-trust/auto.txt
    resolvent evaluate ant-dir --dataset expert --methods fb,sf --seeds 1 --trust on --bank.points 2048 \
        --out runs/ant-bank-trust
    python results/accuracy/bank/pendulum-trust/auto.py runs/ant-bank-trust/results.json \
        > results/accuracy/bank/ant-dir-expert-trust/auto.txt
    resolvent evaluate pendulum-angle --dataset replay --methods auto --trust on --seeds 1 --out runs/par-bank-trust
    python results/accuracy/bank/pendulum-trust/auto.py runs/par-bank-trust/results.json \
        > results/accuracy/bank/pendulum-replay-trust/auto.txt
    resolvent evaluate pendulum-angle --dataset medium --methods auto --trust on --seeds 1 --out runs/pam-bank-trust
    python results/accuracy/bank/pendulum-trust/auto.py runs/pam-bank-trust/results.json \
        > results/accuracy/bank/pendulum-medium-trust/auto.txt

(the last two, a later session's: auto's own operators, favor, fb, sf and attention, and its default bank
of 2048 states, with the rollouts' cycles repeated, ``onestep.cycle``); and with with_bank's third
condition (G_K's spread, a later session still):

    resolvent evaluate pendulum-angle --dataset replay --methods auto --trust on --seeds 1 --out runs/par-spread
    python results/accuracy/bank/pendulum-trust/auto.py runs/par-spread/results.json \
        > results/accuracy/bank/pendulum-replay-spread/auto.txt
    resolvent evaluate pendulum-angle --dataset medium --methods auto --trust on --seeds 1 --out runs/pam-spread
    python results/accuracy/bank/pendulum-trust/auto.py runs/pam-spread/results.json \
        > results/accuracy/bank/pendulum-medium-spread/auto.txt
    resolvent evaluate pendulum-angle --methods favor,fb --seeds 1 --bank.points 2048 --bank.reach 0 --trust on \
        --out runs/pa-reach0-spread
    python results/accuracy/bank/pendulum-trust/auto.py runs/pa-reach0-spread/results.json \
        > results/accuracy/bank/pendulum-expert-spread/auto.txt
    python examples/halfcheetah.py
    resolvent evaluate --data examples/halfcheetah-noisy-v0 --policy examples/halfcheetah.py:policy \
        --probes examples/halfcheetah_probes.py --methods favor,fb --seeds 1 --steps 15000 --trust on \
        --bank.points 2048 --out runs/hcn-spread
    python results/accuracy/bank/pendulum-trust/auto.py runs/hcn-spread/results.json \
        > results/accuracy/bank/halfcheetah-noisy-spread/auto.txt
    resolvent evaluate halfcheetah-vel --dataset replay --methods auto --trust on --seeds 1 --out runs/hcr-auto
    python results/accuracy/bank/pendulum-trust/auto.py runs/hcr-auto/results.json \
        > results/accuracy/bank/halfcheetah-vel-replay-auto/auto.txt
"""
from __future__ import annotations

import json
import sys

import numpy as np

from resolvent.experiments.evaluate_config import AUTO_CANDIDATES, EvaluateConfig
from resolvent.experiments.trust import choose_method, mean_over_heldout, with_bank
from resolvent.model import split_bank, split_method

SHOWN = ("test_mse", "traj_test_mse", "data_test_mse", "probe_r2", "traj_probe_r2", "data_probe_r2")


def main() -> None:
    methods = json.loads(open(sys.argv[1]).read())["methods"]
    # a dataset of one's own has no test rewards: its own reward (train) in their place
    shown = SHOWN if "test_mse" in next(iter(methods.values())) else tuple(k.replace("test", "train") for k in SHOWN)
    print("| answer | " + " | ".join(shown) + " | held-out rel. RMSE against FQE | Bellman residual |")
    print("|---" * (len(shown) + 3) + "|")
    for m, e in methods.items():
        if "trust_rel_rmse_each" in e:
            cells = [f"{float(np.mean(e[k])):.3g}" for k in shown]
            bellman = mean_over_heldout(e, "trust_bellman_each")
            print(f"| {m} | " + " | ".join(cells) + f" | {mean_over_heldout(e, 'trust_rel_rmse_each'):.4f} | "
                  + ("-" if bellman is None else f"{bellman:.4f}") + " |")
    tie = EvaluateConfig().auto_tie
    operator = lambda m: split_bank(split_method(m)[0])[0]  # noqa: E731 - favor+b400+k30 -> favor
    usual = tuple(m for m in methods if split_method(m)[0] in AUTO_CANDIDATES)
    banked = tuple(m for m in methods if operator(m) in AUTO_CANDIDATES and "+d" not in m)
    for label, candidates in (("auto's candidates", usual), ("and the bank's answers", banked)):
        print(f"\n{label}: {choose_method(methods, candidates, tie)['chosen']}")
    print(f"\nauto's pick, the bank's answer in its place where as consistent (with_bank): "
          f"{with_bank(methods, choose_method(methods, usual, tie), tie)['chosen']}")
    for name in dict.fromkeys(operator(m) for m in methods if "+b" in m):    # each operator with a bank alone
        alone = tuple(m for m in usual if split_method(m)[0] == name)
        pick = choose_method(methods, alone, tie)
        print(f"{name}'s answers alone: {pick['chosen']} -> with_bank {with_bank(methods, pick, tie)['chosen']}")


if __name__ == "__main__":
    main()
