"""The product's action-support check (``resolvent/evaluation/support.py``, saved with every run
since this session) on the committed runs whose answers sit beside a per-reward FQE oracle at the
same points: at each kind of points, which are unsupported (pi's action farther than T from every
action the data took at the 100 nearest data states), and how the answers' error sits there.

    python results/accuracy/support/measure.py > results/accuracy/support/measure.md

The check is rebuilt as ``resolvent evaluate`` builds it (``experiments.evaluate.data_support``:
the run's data, its seed, the networks' state unit); the points are the run's own
(``evaluation.points.load_points``, the same to the bit as the committed answers'). Family runs only
(a dataset of one's own is not rebuilt here).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "trust-signals"))
from kauto_rule import TIE  # noqa: E402

from resolvent.data.dataset import load_transitions  # noqa: E402
from resolvent.evaluation.points import load_points  # noqa: E402
from resolvent.experiments.evaluate import data_support  # noqa: E402
from resolvent.experiments.evaluate_config import AUTO_CANDIDATES, EvaluateConfig  # noqa: E402
from resolvent.experiments.problem import input_stats  # noqa: E402
from resolvent.experiments.rundir import RunDir  # noqa: E402
from resolvent.experiments.trust import choose_method  # noqa: E402
from resolvent.families import get_family  # noqa: E402
from resolvent.model import split_method  # noqa: E402
from resolvent.policies import load_target_policy  # noqa: E402
from resolvent.policies.actor import policy_hash  # noqa: E402

R = "results/accuracy"
RUNS = {   # a run with its answers committed -> the per-reward FQE oracle's run at the same points (None: none)
    f"{R}/trust-signals/hc-replay-fresh": f"{R}/halfcheetah-vel-replay-probe-oracle",
    f"{R}/intervals/hc-replay-512": f"{R}/intervals/hc-replay-512-oracle",
    f"{R}/trust-signals/hc-expert-fresh": f"{R}/halfcheetah-vel-probe-oracle",
    f"{R}/few-rollouts/hc-expert-trust": f"{R}/halfcheetah-vel-probe-oracle",
    f"{R}/ant-dir-expert-auto/rerun": None,
    f"{R}/intervals/pa-medium-mean": None,
}
KINDS = ("reset", "trajectory", "dataset")


def run_support(run: str):
    """The run's support check as ``resolvent evaluate`` built it, its evaluation points (by kind)
    and its target policy."""
    cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
    fam = get_family(cfg.family)
    actor = load_target_policy(fam.name)
    data = load_transitions(fam, cfg.dataset, cfg.data_seed, actor)
    x_std = input_stats(np.concatenate([data["obs"], data["action"]], 1))[1]
    support = data_support(cfg, data["obs"], data["action"], x_std)
    return support, load_points(fam, actor, cfg.points_config(), policy_hash(actor), data), actor


def pick_of(methods: dict) -> str:
    """The run's answer under auto's rule (as ``kauto_rule.py``), else its first +kauto."""
    candidates = tuple(m for m in methods if split_method(m)[0] in AUTO_CANDIDATES)
    try:
        return choose_method(methods, candidates, TIE)["chosen"]
    except (KeyError, ValueError):
        return next(m for m in candidates if m.endswith("+kauto"))


def point_error(z, method: str, rewards: str, kind: str) -> np.ndarray:
    """Each point's squared error over each reward's variance across the points, mean over rewards (b,)."""
    truth, pred = z[f"{method}|{rewards}|{kind}|truth"], z[f"{method}|{rewards}|{kind}|pred"]
    truth, pred = truth.reshape(-1, truth.shape[-1]), pred.reshape(-1, pred.shape[-1])         # (R, b)
    return ((pred - truth) ** 2 / truth.var(1, keepdims=True)).mean(0)


def within(z, oracle, method: str, kind: str, keep: np.ndarray) -> str:
    """Probes within 1.5x of per-reward FQE's MSE over the points ``keep`` (b,), and the worst ratio."""
    truth, pred = z[f"{method}|probe|{kind}|truth"][:, keep], z[f"{method}|probe|{kind}|pred"][:, keep]
    fqe = oracle[f"fqe|probe|{kind}|pred"][:, keep]
    ratio = ((pred - truth) ** 2).mean(1) / ((fqe - truth) ** 2).mean(1)                     # (P,)
    return f"{(ratio <= 1.5).sum()}/{len(ratio)} ({ratio.max():.2f}x)"


def main() -> None:
    print("| run | points | unsupported | their rho (largest five) | median rho | answer | its test error there: "
          "share (chance), per point over elsewhere | probes within 1.5x of FQE: all points -> supported |")
    print("|---|---|---|---|---|---|---|---|")
    for run, oracle_run in RUNS.items():
        support, points, actor = run_support(run)
        with open(f"{run}/results.json") as f:
            pick = pick_of(json.load(f)["methods"])
        z = np.load(f"{run}/predictions.npz")
        oracle = np.load(f"{oracle_run}/predictions.npz") if oracle_run else None
        name = run
        for kind in KINDS:
            obs = np.asarray(points[kind].obs0, np.float32)
            check = support.check(obs, np.asarray(actor(obs)))
            bad = check.unsupported
            rewards = "test" if f"{pick}|test|{kind}|truth" in z.files else "probe"   # a run that kept probes alone
            err = point_error(z, pick, rewards, kind)
            rho = np.sort(check.relative[bad])[::-1][:5]
            if bad.any() and (~bad).any():
                there = (f"{err[bad].sum() / err.sum():.2f} ({bad.mean():.3f}), "
                         f"{err[bad].mean() / err[~bad].mean():.1f}x")
            else:
                there = "-"
            fqe = (f"{within(z, oracle, pick, kind, np.ones(len(bad), bool))} -> {within(z, oracle, pick, kind, ~bad)}"
                   if oracle is not None else "-")
            print(f"| {name} | {kind} | {bad.sum()}/{len(bad)} | {', '.join(f'{v:.2f}' for v in rho) or '-'} | "
                  f"{np.median(check.relative):.2f} | {pick}{'' if rewards == 'test' else ' (probes)'} | {there} | "
                  f"{fqe} |", flush=True)
            name = ""
        print(f"| | T = {check.threshold:.3g} (3 x m_K {support.unit:.3g}, 0.5 x s_A {support.action_spread:.3g}) "
              f"| | | | | | |", flush=True)


if __name__ == "__main__":
    main()
