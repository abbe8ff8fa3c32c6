"""Printed tables of an evaluate run's results.json beyond MSE and R^2 at the reset points:
accuracy at every point kind (R^2, relative RMSE, Spearman; the DOPE trio across rewards), the
trust report and the choice of ``method="auto"``."""
from __future__ import annotations

import numpy as np


KINDS = (("reset", ""), ("trajectory", "traj_"), ("dataset", "data_"))
SHORT = {"reset": "reset", "trajectory": "traj", "dataset": "data"}
SETS = ("train", "test", "probe")


def mean(r: dict, key: str) -> float | None:
    v = r.get(key)
    return None if v is None else float(np.mean(v))


def cell(v: float | None, width: int, fmt: str = ".3g") -> str:
    return f" {'-':>{width}}" if v is None else f" {v:>{width}{fmt}}"


def points_lines(results: dict) -> list[str]:
    """Per point kind: R^2, relative RMSE and Spearman of each reward set, and across the test
    rewards (else the probes) DOPE's value error, rank correlation and regret@1."""
    methods = results.get("methods", {})
    lines = []
    for kind, prefix in KINDS:
        sets = [s for s in SETS if any(f"{prefix}{s}_rel_rmse" in r for r in methods.values())]
        if not sets:
            continue
        dope = next((s for s in ("test", "probe", "train")
                     if any(f"{prefix}{s}_regret" in r for r in methods.values())), None)
        n = results.get("eval_points", {}).get(kind, "")
        lines += ["", f"at the {kind} points ({n}), mean over seeds: R^2, relative RMSE (RMSE / RMS of the "
                      f"truth), Spearman over points" + (f"; across the {dope} rewards' values (mean Q over the "
                                                        f"points), DOPE's |error| (normalised), rank "
                                                        f"correlation, regret@1" if dope else "")]
        head = f"{'method':<10}" + "".join(f" {s + ' R2':>9} {'rel':>6} {'rho':>6}" for s in sets)
        if dope:
            head += f" {'|err|':>7} {'rank':>6} {'regret':>7}"
        lines.append(head)
        for m, r in methods.items():
            row = f"{m:<10}"
            for s in sets:
                row += (cell(mean(r, f"{prefix}{s}_r2"), 9) + cell(mean(r, f"{prefix}{s}_rel_rmse"), 6)
                        + cell(mean(r, f"{prefix}{s}_spearman"), 6, ".2f"))
            if dope:
                row += (cell(mean(r, f"{prefix}{dope}_value_error"), 7) + cell(mean(r, f"{prefix}{dope}_value_rank"), 6,
                                                                                ".2f")
                        + cell(mean(r, f"{prefix}{dope}_regret"), 7))
            lines.append(row)
    return lines


def trust_lines(results: dict) -> list[str]:
    """The trust report (agreement with per-reward FQE on held-out rewards at dataset states,
    and where truth exists the same rewards' true R^2), then ``auto``'s choice."""
    methods = {m: r for m, r in results.get("methods", {}).items() if "trust_r2" in r}
    if not methods:
        return []
    held = results.get("heldout_rewards", [])
    n = results.get("eval_points", {}).get("trust", "")
    lines = ["", f"trust report: agreement with per-reward FQE (trained on each reward alone) on {len(held)} "
                 f"held-out rewards at {n} dataset transitions, and each answer's Bellman residual on those "
                 f"transitions (RMS of Q - r - gamma Q' over r's RMS on the data), mean over seeds (no ground truth "
                 f"needed)"]
    truth = [(k, p) for k, p in KINDS if any(f"{p}heldout_r2" in r for r in methods.values())]
    lines.append(f"{'method':<14} {'R^2':>8} {'rel RMSE':>9} {'Bellman':>8}"
                 + "".join(f" {'true R^2 ' + SHORT[k]:>14}" for k, _ in truth))
    for m, r in methods.items():
        lines.append(f"{m:<14}" + cell(mean(r, "trust_r2"), 8) + cell(mean(r, "trust_rel_rmse"), 9)
                     + cell(mean(r, "trust_bellman"), 8)
                     + "".join(cell(mean(r, f"{p}heldout_r2"), 14) for _, p in truth))
    own = results.get("trust_oracle", {}).get("trust_bellman")
    if own is not None:
        lines.append(f"{'(FQE itself)':<14}" + cell(None, 8) + cell(None, 9) + cell(own, 8))
    if held:
        lines.append("held-out rewards: " + ", ".join(held))
    if "auto" in results:
        lines.append(f"auto: chose {results['auto']['chosen']}: {results['auto']['why']}")
    return lines


def support_lines(results: dict) -> list[str]:
    """The action-support check at each kind of evaluation points (results.json's ``support``):
    how many points rest on actions the data never took near them."""
    s = results.get("support")
    if not s:
        return []
    counts = ", ".join(f"{kind} {len(k['unsupported'])}/{len(k['relative'])}" for kind, k in s["kinds"].items())
    return [f"action support (points where pi's action is farther than {s['threshold']:.3g} from every action the "
            f"data took at the {s['neighbours']} nearest data states: their answers are the least trusted, "
            f"`resolvent q` marks them): {counts}"]
