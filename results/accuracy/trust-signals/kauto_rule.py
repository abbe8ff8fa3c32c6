"""auto's pick before and after kauto may take the longest fixed expansion's place, on every
committed run that has kauto candidates, the trust report and Monte-Carlo truth.

    python results/accuracy/trust-signals/kauto_rule.py [MORE_RESULTS_JSON ...] \
        > results/accuracy/trust-signals/kauto_rule.md

Before: of the candidates in auto's bands (150% on agreement with per-reward FQE and on the
Bellman residual, ``trust.tie_bands``) the longest fixed expansion, kauto below every fixed k.
Now (``trust.choose_method``): a kept kauto whose agreement is the better takes its place, the
best such. Each pick's MSE over the best candidate's for every error the run has (test, probe or
training rewards at the reset, trajectory and dataset points; mean over seeds): the worst and the
geometric mean. The bank's replacement (``with_bank``) is left out of both columns alike.

Then, on the runs whose answers are committed (predictions.npz) beside a per-reward FQE oracle
trained on the probes at the same points (``ORACLES``: the issue's MuJoCo target, every probe
within 1.5x of a converged per-reward FQE), each pick's probes within 1.5x of the oracle's MSE
per kind of points, and the worst ratio.
"""
from __future__ import annotations

import glob
import json
import sys

import numpy as np

from resolvent.experiments.evaluate_config import AUTO_CANDIDATES
from resolvent.experiments.trust import choose_method, mean_over_heldout, tie_bands
from resolvent.model import AUTO, horizon_rank, split_method

ERRORS = [f"{kind}{rewards}_mse" for rewards in ("test", "probe", "train") for kind in ("", "traj_", "data_")]
TIE = 1.5
ORACLES = {   # a run with its answers committed -> the probe-vs-oracle table holding per-reward FQE's MSE there
    "results/accuracy/trust-signals/hc-expert-fresh": "results/accuracy/halfcheetah-vel-probe-oracle",
    "results/accuracy/few-rollouts/hc-expert-trust": "results/accuracy/halfcheetah-vel-probe-oracle",
    "results/accuracy/trust-signals/hc-replay-fresh": "results/accuracy/halfcheetah-vel-replay-probe-oracle",
    "results/accuracy/ant-dir-expert-auto/rerun": "results/accuracy/ant-dir-probe-oracle",
    "results/accuracy/halfcheetah-noisy-auto/rerun": "results/accuracy/halfcheetah-noisy",
}
KINDS = ("dataset", "trajectory", "reset")


def before(methods: dict, candidates: tuple[str, ...]) -> str:
    """The rule before: the longest fixed expansion among the tied (kauto below every fixed k)."""
    scores = {m: v for m in candidates if (v := mean_over_heldout(methods[m], "trust_rel_rmse_each")) is not None}
    bellman = {m: v for m in scores if (v := mean_over_heldout(methods[m], "trust_bellman_each")) is not None}
    kept, _ = tie_bands(scores, bellman, TIE)
    tied = sorted({m for ms in kept.values() for m in ms})
    return max(tied, key=lambda m: (horizon_rank(split_method(m)[1]), -scores[m]))


def oracle_mse(table: str, probes: list[str]) -> dict[str, np.ndarray]:
    """Per kind of points, per-reward FQE's MSE on each probe (P,): the "FQE oracle (its MSE)" rows."""
    with open(table) as f:
        rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in f if line.startswith("| ")]
    head = rows[0][2:2 + len(probes)]
    if head != probes:
        raise ValueError(f"{table} scores the probes {head}, the run {probes}")
    return {r[1]: np.array([float(c) for c in r[2:2 + len(probes)]]) for r in rows if r[0] == "FQE oracle (its MSE)"}


def within_oracle(run: str, pick: str) -> str:
    """The pick's probes within 1.5x of per-reward FQE's MSE per kind of points, and the worst ratio."""
    with open(f"{run}/results.json") as f:
        probes = json.load(f)["probes"]
    fqe = oracle_mse(f"{ORACLES[run]}/probe-vs-oracle.md", probes)
    z = np.load(f"{run}/predictions.npz")
    cells = []
    for kind in KINDS:
        truth, pred = z[f"{pick}|probe|{kind}|truth"], z[f"{pick}|probe|{kind}|pred"]       # (P, n)
        ratio = ((pred - truth) ** 2).mean(1) / fqe[kind]                                    # (P,)
        cells.append(f"{(ratio <= 1.5).sum()}/{len(ratio)} ({ratio.max():.2f}x)")
    return f"{pick}: " + ", ".join(cells)


def main() -> None:
    picks = {}
    print("| run | before: pick, worst, geometric mean | now: pick, worst, geometric mean |\n|---|---|---|")
    for path in sorted(set(glob.glob("results/**/results.json", recursive=True)) | set(sys.argv[1:])):
        with open(path) as f:
            methods = json.load(f).get("methods", {})
        candidates = tuple(m for m in methods if split_method(m)[0] in AUTO_CANDIDATES)
        if not (any("trust_rel_rmse_each" in methods[m] for m in candidates)
                and any(split_method(m)[1] == AUTO for m in candidates)):
            continue
        errors = [k for k in ERRORS if all(k in methods[m] for m in candidates)]
        if not errors:
            continue
        best = {k: min(np.mean(methods[m][k]) for m in candidates) for k in errors}
        cells = []
        picks[path.removesuffix("/results.json")] = (before(methods, candidates),
                                                     choose_method(methods, candidates, TIE)["chosen"])
        for pick in picks[path.removesuffix("/results.json")]:
            ratios = [np.mean(methods[pick][k]) / best[k] for k in errors]
            cells.append(f"{pick}: {max(ratios):.2f}x, {np.exp(np.mean(np.log(ratios))):.2f}x")
        now = f"**{cells[1]}**" if cells[0] != cells[1] else cells[1]
        print(f"| {path.removesuffix('/results.json')} | {cells[0]} | {now} |")
    print(f"\n| run, probes within 1.5x of per-reward FQE's MSE (worst) at the {', '.join(KINDS)} points "
          f"| before | now |\n|---|---|---|")
    for run, oracle in ORACLES.items():
        print(f"| {run} (oracle: {oracle}) | " + " | ".join(within_oracle(run, p) for p in picks[run]) + " |")


if __name__ == "__main__":
    main()
