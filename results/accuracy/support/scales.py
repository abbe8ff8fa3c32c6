"""The scales behind the action-support check's threshold T = max(3 m_K, 0.5 s_A)
(``resolvent/evaluation/support.py``), on every family dataset at seed 0: m_K (the data's own
actions' d_K, median over data states), s_A (the median distance between two of the data's
actions), and d_K of pi's actions over s_A at 64 dataset states (the draw of the runs' dataset
points), and on HalfCheetah at 200 upright and 200 upside-down (|root angle| > pi / 2) states:

    python results/accuracy/support/scales.py > results/accuracy/support/scales.md

In one action dimension (Pendulum) m_K is near 0 (100 neighbours' actions nearly always hold pi's):
s_A's floor keeps T at the action space's scale there.
"""
import numpy as np

from resolvent.data.dataset import load_transitions
from resolvent.evaluation.support import SupportConfig, build_support
from resolvent.experiments.problem import input_stats
from resolvent.families import get_family
from resolvent.policies import load_target_policy

DATASETS = (("pendulum-angle", ("expert", "replay", "medium")), ("halfcheetah-vel", ("replay", "expert", "medium")),
            ("ant-dir", ("expert", "replay", "medium")))


def main() -> None:
    print("| dataset | m_K | s_A | T / s_A | d_K / s_A at 64 dataset states: largest five (median); over T | "
          "HalfCheetah: upside-down states' d_K / s_A, median (10th percentile); over T | upright: median "
          "(90th, 97th percentile); over T |")
    print("|---|---|---|---|---|---|---|")
    for name, kinds in DATASETS:
        fam = get_family(name)
        actor = load_target_policy(fam.name)
        for kind in kinds:
            data = load_transitions(fam, kind, 0, actor)
            obs, act = np.asarray(data["obs"], np.float32), np.asarray(data["action"], np.float32)
            ds = obs.shape[1]
            sup = build_support(obs, act, input_stats(np.concatenate([obs, act], 1))[1][:ds], SupportConfig(), 0)
            s_a, t = sup.action_spread, sup.threshold
            idx = np.sort(np.random.default_rng([0, 3]).choice(len(obs), 64, replace=False))
            d = sup.distances(obs[idx], np.asarray(actor(obs[idx]))) / s_a                       # (64,)
            cells = [f"{name} {kind}", f"{sup.unit:.4f}", f"{s_a:.3f}", f"{t / s_a:.3f}",
                     f"{', '.join(f'{v:.3f}' for v in np.sort(d)[::-1][:5])} ({np.median(d):.3f}); "
                     f"{(d > t / s_a).sum()}/64"]
            flip = np.abs(obs[:, 1]) > np.pi / 2 if name == "halfcheetah-vel" else np.zeros(len(obs), bool)
            if flip.sum() >= 200:
                rng = np.random.default_rng(2)
                fi, ui = (rng.choice(np.flatnonzero(m), 200, replace=False) for m in (flip, ~flip))
                df, du = (sup.distances(obs[i], np.asarray(actor(obs[i]))) / s_a for i in (fi, ui))
                cells += [f"{np.median(df):.3f} ({np.percentile(df, 10):.3f}); {(df > t / s_a).mean():.2f}",
                          f"{np.median(du):.3f} ({np.percentile(du, 90):.3f}, {np.percentile(du, 97):.3f}); "
                          f"{(du > t / s_a).mean():.2f}"]
            else:
                cells += ["-", "-"]
            print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
