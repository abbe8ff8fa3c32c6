"""Per-reward FQE's whole training curve against the zero-shot answers, from ``zero_shot.py``'s
``--fqe-log`` (its first line the answers measured, then FQE's (steps, seconds, MSE) every chunk):
FQE's MSE at the ground-truth points along its training time, each answer's MSE as a line and its
time at 1e4 new points as a point, and per answer the bound on the ratio (FQE's whole training
time over the answer's, where FQE never came down to the answer's MSE).

    cd results/answer-times && python long_fqe.py zero-shot-pendulum-angle-expert-long-fqe-log.jsonl \
        --out long-fqe.png > long-fqe.txt
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("log")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    lines = [json.loads(line) for line in Path(args.log).read_text().splitlines()]
    answers, curve = lines[0]["answers"], lines[1:]
    steps, seconds, mse = ([c[k] for c in curve] for k in ("fqe_steps", "fqe_seconds", "fqe_mse"))
    best = min(range(len(curve)), key=mse.__getitem__)
    print(f"per-reward FQE: {steps[-1]} steps in {seconds[-1]:.0f} s ({1e3 * seconds[-1] / steps[-1]:.3f} ms a step), "
          f"MSE {mse[-1]:.4g} at the end, lowest {mse[best]:.4g} (step {steps[best]})")
    for k in (len(curve) // 4, len(curve) // 2, 3 * len(curve) // 4):
        print(f"  at {steps[k]} steps ({seconds[k]:.0f} s): MSE {mse[k]:.4g}")
    print("| answer | MSE | answer at 1e4 new points (s) | FQE first at its MSE | ratio |")
    print("|---|---|---|---|---|")
    for a in answers:
        reached = next((i for i, m in enumerate(mse) if m <= a["mse"]), None)
        at = "never" if reached is None else f"{steps[reached]} steps, {seconds[reached]:.0f} s"
        ratio = (seconds[-1] if reached is None else seconds[reached]) / (a["answer_ms"] / 1e3)
        print(f"| {a['method']} | {a['mse']:.4g} | {a['answer_ms'] / 1e3:.3g} | {at} | "
              f"{'>= ' if reached is None else ''}{ratio:.0f}x |")
    fig, ax = plt.subplots(figsize=(7.5, 5))
    ax.plot(seconds, mse, "k-", lw=1, label="per-reward FQE (DOPE's recipe), MSE along its training")
    for a, colour in zip(answers, ("tab:gray", "tab:blue", "tab:red", "tab:purple", "tab:green")):
        ax.axhline(a["mse"], color=colour, ls=":", lw=1)
        ax.scatter(a["answer_ms"] / 1e3, a["mse"], color=colour, s=40, zorder=3,
                   label=f"{a['method']}: MSE {a['mse']:.3g}, {a['answer_ms'] / 1e3:.3g} s at 1e4 new points")
    ax.set(xscale="log", yscale="log", xlabel="seconds (FQE: training; an answer: at 1e4 new points)",
           ylabel="MSE at the ground-truth points",
           title=f"One new reward: FQE for {steps[-1] / 1e6:.3g}M steps against the zero-shot answers")
    ax.legend(fontsize=7, loc="center right")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)


if __name__ == "__main__":
    main()
