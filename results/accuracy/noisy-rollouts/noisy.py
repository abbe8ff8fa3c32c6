"""The expansion's rollout with the one-step model's own error put back at every step
(``--onestep.noise c``, ``--onestep.copies R``; ``expansion.rollout``): each model step's next state
moved by c sigma eps, sigma the model's residual std per state dimension on the data's own
transitions (``onestep.residual_std``, in-sample), the answer the mean over R such rollouts: Q under
the model's uncertainty (PETS's trajectory sampling, Chua et al. 2018, with a fitted model's
residual as the noise). Where the closed loop is sensitive, the copies part and their mean moves
toward what the copies share: a shrinkage per reward and per point, from the run alone.

Each column is one setting, ``cxR`` (c the noise, R the copies; ``cxR@K`` with ``noise_cap`` K, 0
uncapped, else the run's own, the product's 0.1) or ``open`` (the exact rollout with no cycle looked
for), each probe's MSE over per-reward FQE's at the same points (ORACLE ``-``: the
MSE itself; kinds of points the oracle lacks are skipped). On fresh runs with their models beside
the committed per-reward FQE oracles on the probes (the same points and truth on this machine: the
script stops where they are not): HalfCheetah-Vel replay and expert, the noisy HalfCheetah and
Ant-Dir expert (their oracles' MSE from a probe-vs-oracle.md table, the truth from a committed run),
Reacher; and against the truth itself (ORACLE ``-``), MountainCar (its committed runs have no FQE
at their points) and the README's main job (Pendulum-Angle expert):

    resolvent evaluate halfcheetah-vel --dataset replay --methods favor,fb --seeds 1 --out runs/hc-replay-js
    python results/accuracy/noisy-rollouts/noisy.py runs/hc-replay-js \\
        results/accuracy/halfcheetah-vel-replay-probe-oracle favor+k400 open,0.01x16,0.03x16,0.1x16,0.3x16,1x16,3x16 \\
        > results/accuracy/noisy-rollouts/replay.txt
    python results/accuracy/noisy-rollouts/noisy.py runs/hc-replay-js \\
        results/accuracy/halfcheetah-vel-replay-probe-oracle favor+k400 0.3x4,0.3x8,0.3x16,0.3x32 \\
        > results/accuracy/noisy-rollouts/replay-copies.txt
    resolvent evaluate halfcheetah-vel --dataset expert --methods favor,fb --seeds 1 --trust on \\
        --out runs/hc-expert-trust
    python results/accuracy/noisy-rollouts/noisy.py runs/hc-expert-trust \\
        results/accuracy/halfcheetah-vel-probe-oracle favor+k400 open,0.1x16,0.3x16,1x16 \\
        > results/accuracy/noisy-rollouts/expert.txt
    resolvent evaluate pendulum-angle --out runs/main-job
    python results/accuracy/noisy-rollouts/noisy.py runs/main-job - favor+k400 open,0.1x16,0.3x16,1x16 \\
        > results/accuracy/noisy-rollouts/pendulum.txt
    python examples/halfcheetah.py
    resolvent evaluate --data examples/halfcheetah-noisy-v0 --policy examples/halfcheetah.py:policy \\
        --probes examples/halfcheetah_probes.py --methods favor,fb --seeds 1 --steps 15000 --out runs/hc-noisy
    python results/accuracy/noisy-rollouts/noisy.py runs/hc-noisy \\
        results/accuracy/halfcheetah-noisy/probe-vs-oracle.md \\
        favor+k400 open,0.1x16,0.3x16 results/accuracy/halfcheetah-noisy-auto/rerun \\
        > results/accuracy/noisy-rollouts/halfcheetah-noisy.txt              # and fb+k400: halfcheetah-noisy-fb.txt
    resolvent evaluate ant-dir --dataset expert --methods favor,fb --seeds 1 --out runs/ant-dir
    python results/accuracy/noisy-rollouts/noisy.py runs/ant-dir \\
        results/accuracy/ant-dir-probe-oracle/probe-vs-oracle.md \\
        favor+k400 open,0.1x16,0.3x16 results/accuracy/ant-dir-expert-auto/rerun \\
        > results/accuracy/noisy-rollouts/ant-dir.txt                        # and fb+k400: ant-dir-fb.txt
    python examples/reacher.py
    resolvent evaluate --data examples/reacher-jt-v0 --policy examples/reacher.py:policy \\
        --probes examples/reacher_probes.py --methods favor,fb --seeds 1 --steps 10000 --out runs/reacher
    python results/accuracy/noisy-rollouts/noisy.py runs/reacher results/accuracy/reacher-kauto favor+k400 \\
        open,0.1x16,0.3x16 > results/accuracy/noisy-rollouts/reacher.txt
    python examples/mountaincar.py
    resolvent evaluate --data examples/mountaincar-pump-v0 --policy examples/mountaincar.py:policy \\
        --probes examples/mountaincar_probes.py --methods favor,fb --seeds 1 --steps 10000 --out runs/mountaincar
    python results/accuracy/noisy-rollouts/noisy.py runs/mountaincar - favor+k400 \\
        open,0.1x16,0.3x16 > results/accuracy/noisy-rollouts/mountaincar.txt

The tables above were made before the cap (``noise_cap``, 0.1 by default since): give each noisy
setting ``@0`` to make them again uncapped (its column then reads ``cxR@0``); where no dimension's c
sigma_d passes 0.1 of its std (HalfCheetah at c <= 0.3, Reacher, MountainCar, Pendulum) the capped
answer is the same to the bit. Ant-Dir expert with and without the cap, on a fresh run:

    resolvent evaluate ant-dir --dataset expert --methods favor,fb --seeds 1 --out runs/ant-dir-cap
    python results/accuracy/noisy-rollouts/noisy.py runs/ant-dir-cap \\
        results/accuracy/ant-dir-probe-oracle/probe-vs-oracle.md \\
        favor+k400 0.3x16@0,0.3x16 results/accuracy/ant-dir-expert-auto/rerun \\
        > results/accuracy/noisy-rollouts/ant-dir-cap.txt
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import resolvent
from resolvent.algorithms.onestep import residual_ratio, residual_std
from resolvent.experiments.problem import open_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "trust-signals"))
from kauto_rule import oracle_mse  # noqa: E402


def settings(spec: str) -> list[tuple[str, dict]]:
    """``open,0.3x16,0.3x16@0,...`` -> [(column name, the one-step model's fields to replace)]:
    ``cxR`` with the run's own ``noise_cap`` (the product's 0.1), ``cxR@K`` with cap K (0: uncapped)."""
    out = []
    for item in spec.split(","):
        if item == "open":
            out.append((item, {"cycle": 0.0, "noise": 0.0}))
        else:
            setting, _, cap = item.partition("@")
            c, copies = setting.split("x")
            out.append((item, {"noise": float(c), "copies": int(copies), **({"noise_cap": float(cap)} if cap else {})}))
    return out


def answers(model, rewards, obs, act) -> np.ndarray:
    """(probes, n) the model's answers for every probe at (obs, act), from one fresh rollout."""
    model.rollouts._last = None
    return np.stack([np.asarray(model.q_values(r, obs, act, seed=None)).mean(0) for _, r in rewards])


def oracle_at(oracle: str, truth: str | None, probes: list[str]) -> tuple[dict, dict] | None:
    """Per kind of points, per-reward FQE's MSE on each probe (P,) and the truth it was measured
    against (P, n): from ORACLE's predictions.npz, or (ORACLE a probe-vs-oracle.md table, whose
    "FQE oracle (its MSE)" rows hold the MSE alone) the truth from TRUTH's predictions.npz, a
    committed run of the same data and points. None: ORACLE ``-``."""
    if oracle == "-":
        return None
    if oracle.endswith(".md"):
        if truth is None:
            raise SystemExit(f"{oracle} holds FQE's MSE alone: name a committed run with its truth (predictions.npz)")
        z = np.load(f"{truth}/predictions.npz")
        pick = next(k.split("|")[0] for k in z.files if k.endswith("|probe|reset|truth"))
        fqe = oracle_mse(oracle, probes)
        return fqe, {kind: z[f"{pick}|probe|{kind}|truth"] for kind in fqe}
    z = np.load(f"{oracle}/predictions.npz")
    kinds = [k.split("|")[2] for k in z.files if k.startswith("fqe|probe|") and k.endswith("|truth")]
    return ({kind: ((z[f"fqe|probe|{kind}|pred"] - z[f"fqe|probe|{kind}|truth"]) ** 2).mean(1) for kind in kinds},
            {kind: z[f"fqe|probe|{kind}|truth"] for kind in kinds})


def main(run: str, oracle: str, method: str = "favor+k400", spec: str = "open,0.3x16,1x16",
         truth: str | None = None) -> None:
    _, p = open_run(run)
    rewards = p.source.rewards["probe"]
    o = oracle_at(oracle, truth, [name for name, _ in rewards])
    model = resolvent.load(run, method)
    base = model.onestep._replace(residual=residual_std(model.onestep, p.features))
    columns = settings(spec)
    print(f"{run}, {method}: each probe's MSE" + (" over per-reward FQE's" if o is not None else "") + ", the "
          f"exact rollout and each setting (cxR: noise c, R copies; @K: capped at K std, else at the run's "
          f"{base.noise_cap:g}); sigma over the data's state std: "
          f"{' '.join(f'{x:.3g}' for x in residual_ratio(base))}\n")
    print(f"{'points':10s} {'probe':18s} {'exact':>7s} " + " ".join(f"{name:>7s}" for name, _ in columns))
    form = ".3g" if o is None else ".2f"                  # an MSE itself spans decades; a ratio to FQE does not
    for kind, gt in p.source.points.items():
        if o is not None and kind not in o[0]:
            print(f"{kind:10s} (no oracle at these points)\n", flush=True)
            continue
        obs, act = np.asarray(gt.obs0), np.asarray(gt.action0)
        t = np.stack([gt.q(r) for _, r in rewards])                               # (probes, n) this run's truth
        if o is None:
            fm = np.ones(len(t))                                                  # no oracle: the MSE itself
        else:
            fm, known = o[0][kind], o[1][kind]                                    # (probes,) (probes, n)
            if not np.allclose(known, t, rtol=1e-4, atol=1e-3):
                raise SystemExit(f"{run}'s truth at the {kind} points is not {truth or oracle}'s (off by up to "
                                 f"{np.abs(known - t).max():.3g}): the data or the points differ on this machine")
        model.onestep = base
        got = [answers(model, rewards, obs, act)]
        for _, fields in columns:
            model.onestep = base._replace(**fields)
            got.append(answers(model, rewards, obs, act))
        model.onestep = base
        ratios = np.stack([((q - t) ** 2).mean(1) / fm for q in got])             # (1 + settings, probes)
        for i, (name, _) in enumerate(rewards):
            print(f"{kind:10s} {name:18s} " + " ".join(f"{x:7{form}}" for x in ratios[:, i]))
        print(f"{kind:10s} {'geometric mean':18s} " + " ".join(f"{x:7{form}}" for x in np.exp(np.log(ratios).mean(1))))
        if o is not None:
            print(f"{kind:10s} {'within 1.5x':18s} " + " ".join(f"{f'{int((x <= 1.5).sum())}/{len(x)}':>7s}"
                                                                 for x in ratios))
        print(flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
