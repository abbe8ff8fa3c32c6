"""Answer time against accuracy for one new reward at 1e4 new points (Pendulum-Angle expert, the
README's main job): every answer of ``zero_shot.py``'s JSON lines given, and per-reward FQE's
training time to its MSE (where it stopped: the MSE reached, or its budget), as one picture.

    cd results/answer-times && python pareto.py zero-shot-pendulum-angle-expert-blocks-long-fqe.jsonl \
        zero-shot-pendulum-angle-expert-operators-blocks.jsonl zero-shot-pendulum-angle-expert-reach.jsonl \
        zero-shot-pendulum-angle-expert-bank.jsonl zero-shot-pendulum-angle-expert-main-job-long-fqe.jsonl \
        --methods favor,fb,favor+k10,favor+k30,favor+b400+k30,fb+k400 --out pareto.png

A bank's answer with ``reach`` (each point stopping where the bank reaches it) is its own point.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"operator": ("o", "tab:gray"), "expansion": ("s", "tab:blue"), "bank": ("D", "tab:red"),
         "kauto": ("^", "tab:purple"), "student": ("v", "tab:green")}


def kind(method: str) -> str:
    if "+b" in method:
        return "bank"
    if "+d" in method:
        return "student"
    if "+kauto" in method:
        return "kauto"
    return "expansion" if "+k" in method else "operator"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--methods", default=None, help="the answers shown, comma-separated (default: all)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows, fqe = {}, set()
    for f in args.files:
        for line in Path(f).read_text().splitlines():
            r = json.loads(line)
            if args.methods is None or r["method"] in args.methods.split(","):
                name = r["method"] + (f", reach {r['reach']:g}" if r.get("reach") else "")
                rows.setdefault(name, r)                           # the first file's line for an answer
            fqe.add((r["fqe_seconds"], r["fqe_mse"], r["fqe_steps"]))
    fig, ax = plt.subplots(figsize=(7.5, 5))
    seen = set()
    for method, r in rows.items():
        marker, colour = STYLE[kind(method)]
        ax.scatter(r["answer_ms"] / 1e3, r["mse"], marker=marker, color=colour, s=40,
                   label=None if kind(method) in seen else kind(method))
        seen.add(kind(method))
        ax.annotate(method, (r["answer_ms"] / 1e3, r["mse"]), fontsize=7, xytext=(4, 2), textcoords="offset points")
    pts = sorted(fqe)
    ax.plot([p[0] for p in pts], [p[1] for p in pts], "k--", marker="x", label="per-reward FQE (training time)")
    for s, m, steps in pts[-2:]:                                   # the longest trainings
        ax.annotate(f"FQE {steps // 1000}k steps", (s, m), fontsize=7, xytext=(4, -9), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("seconds to a new reward's answer at 1e4 new points (FQE: to train)")
    ax.set_ylabel("MSE at the reset points")
    ax.set_title("Pendulum-Angle expert: answer time against accuracy, one new reward")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)


if __name__ == "__main__":
    main()
