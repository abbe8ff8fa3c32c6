"""A per-point rule from ``action_support.py``'s signal, scored offline on the committed runs whose
answers sit beside a per-reward FQE oracle at the same points (``kauto_rule.ORACLES``): at a
dataset state where pi's action is more than TAU from every action the data took at its K nearest
states, answer by the operator alone (no model steps), elsewhere by the expansion,

    Q(s, a) = G[r](s, a)          if d_K(s) > TAU    (d_K as in action_support.py)
              G_k[r](s, a)        otherwise

    python results/accuracy/horizon/per-point/support_rule.py > support-rule.md

Only the dataset points: their states are the data's own, recomputed here from the run's seed
(``evaluation.points.load_points``'s draw); the other kinds' states are not in the committed files.
A run made on a user's dataset (the noisy HalfCheetah) is left out (its data is not rebuilt here).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "trust-signals"))
from action_support import support  # noqa: E402
from kauto_rule import ORACLES, TIE, oracle_mse  # noqa: E402

from resolvent.data.dataset import load_transitions  # noqa: E402
from resolvent.experiments.evaluate_config import AUTO_CANDIDATES, EvaluateConfig  # noqa: E402
from resolvent.experiments.rundir import RunDir  # noqa: E402
from resolvent.experiments.trust import choose_method  # noqa: E402
from resolvent.families import get_family  # noqa: E402
from resolvent.model import split_method  # noqa: E402
from resolvent.policies import load_target_policy  # noqa: E402

K = 100
TAUS = (0.6, 0.8, 1.0)
TOP = 8               # the least supported points whose share of the error is shown


def dataset_support(run: str) -> tuple[np.ndarray, np.ndarray] | None:
    """d_K (b,) at the run's dataset points and whether each is a flipped cheetah (b,); None for a user's dataset."""
    cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
    if cfg.data is not None:
        return None
    fam = get_family(cfg.family)
    actor = load_target_policy(fam.name)
    data = load_transitions(fam, cfg.dataset, cfg.data_seed, actor)
    pc = cfg.points_config()
    obs, act = np.asarray(data["obs"], np.float32), np.asarray(data["action"], np.float32)
    idx = np.sort(np.random.default_rng([pc.seed, 3]).choice(len(obs), min(pc.n, len(obs)), replace=False))
    z = obs / (obs.std(0) + 1e-6)                                                   # (n, ds)
    pi_a = np.asarray(actor(obs[idx]))                                               # (b, da)
    d = np.array([support(z, act, i, a, K) for i, a in zip(idx, pi_a)])            # (b,)
    flipped = np.abs(obs[idx, 1]) > np.pi / 2 if "halfcheetah" in cfg.family else np.zeros(len(idx), bool)
    return d, flipped


def error_share(z, pick: str, d: np.ndarray) -> str:
    """Of the pick's test-reward error at the dataset points (each point's squared error over the
    reward's variance across them, mean over rewards), the share at the TOP points of largest d,
    and Spearman's rho between d and that error."""
    truth, pred = z[f"{pick}|test|dataset|truth"], z[f"{pick}|test|dataset|pred"]
    truth, pred = truth.reshape(-1, truth.shape[-1]), pred.reshape(-1, pred.shape[-1])   # (R, b)
    err = ((pred - truth) ** 2 / truth.var(1, keepdims=True)).mean(0)                     # (b,)
    rank = lambda v: np.argsort(np.argsort(v))  # noqa: E731
    rho = np.corrcoef(rank(d), rank(err))[0, 1]
    return f"{err[np.argsort(-d)[:TOP]].sum() / err.sum():.2f} (chance {TOP / len(d):.3f}), rho {rho:.2f}"


def main() -> None:
    shares = []
    print(f"| run | d_{K} at the dataset points: largest five (median) | method | "
          + " | ".join(["as answered"] + [f"TAU = {t}" for t in TAUS]) + " |")
    print("|---|---|---|" + "---|" * (1 + len(TAUS)))
    for run in ORACLES:
        found = dataset_support(run)
        if found is None:
            continue
        d, flipped = found
        with open(f"{run}/results.json") as f:
            res = json.load(f)
        methods = res["methods"]
        candidates = tuple(m for m in methods if split_method(m)[0] in AUTO_CANDIDATES)
        pick = choose_method(methods, candidates, TIE)["chosen"]
        fqe = oracle_mse(f"{ORACLES[run]}/probe-vs-oracle.md", res["probes"])["dataset"]   # (P,)
        z = np.load(f"{run}/predictions.npz")
        shares.append(f"| {run} | {pick} | {error_share(z, pick, d)} |")
        top = np.sort(d)[::-1][:5]
        head = (f"{', '.join(f'{x:.2f}' for x in top)} ({np.median(d):.2f}); {flipped.sum()} flipped, "
                f"their d {', '.join(f'{x:.2f}' for x in np.sort(d[flipped])[::-1])}" if flipped.any() else
                f"{', '.join(f'{x:.2f}' for x in top)} ({np.median(d):.2f})")
        for m in dict.fromkeys((pick, "favor+k400", "fb+k400")):
            base = split_method(m)[0]
            if f"{m}|probe|dataset|pred" not in z.files or f"{base}|probe|dataset|pred" not in z.files:
                continue
            truth, pred = z[f"{m}|probe|dataset|truth"], z[f"{m}|probe|dataset|pred"]     # (P, b)
            alone = z[f"{base}|probe|dataset|pred"]                                      # (P, b)
            cells = []
            for tau in (np.inf, *TAUS):
                q = np.where(d > tau, alone, pred)                                        # (P, b)
                ratio = ((q - truth) ** 2).mean(1) / fqe                                  # (P,)
                cells.append(f"{(ratio <= 1.5).sum()}/{len(ratio)}, {np.exp(np.log(ratio).mean()):.2f}x, "
                             f"worst {ratio.max():.2f}x ({int((d > tau).sum())} points)")
            print(f"| {run} | {head} | {m}{' (auto)' if m == pick else ''} | " + " | ".join(cells) + " |")
            head = ""
    print(f"\n| run | auto's pick | its test-reward error at the {TOP} points of largest d_{K}: share, "
          f"Spearman with d_{K} |\n|---|---|---|")
    print("\n".join(shares))


if __name__ == "__main__":
    main()
