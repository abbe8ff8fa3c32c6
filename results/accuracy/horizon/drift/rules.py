"""Choice rules for kauto's horizon scored on ``signals.py``'s lines: for each kind of points,
the geometric mean over rewards and operators of the chosen k's MSE over the best candidate k's
(1.00: always the best k), the worst such ratio, and fixed horizons beside them.

    python results/accuracy/horizon/drift/rules.py LINES.jsonl [LINES.jsonl ...]

Every rule is k*(r) = argmin_k e(r, k) + gamma^(2k) e_op(r) with its own e:

- ``spread`` (kauto's today): the members' spread under pi at the query points;
- ``stretch``: the model's error along the data's stretches (the first rule);
- ``calibrated``: the spread scaled by how far the members' spread along the stretches
  under-states their error there, max(1, stretch_err / stretch_spread), per reward and k;
- ``max``: the larger of the spread and the error along the stretches;
- ``tail``: the spread, and the operators' variance where G_k's tail is taken, at
  (s_k, pi(s_k)), in place of e_op at the query points: k*(r) = argmin_k e_model(r, k) +
  gamma^(2k) e_op(r, k).
"""
import json
import sys
from collections import defaultdict

import numpy as np

GAMMA = 0.99


def score(rule: str, line: dict) -> np.ndarray:
    """The rule's e_model(r, k) + gamma^(2k) e_op(r, k) at each candidate k (K,)."""
    k = np.asarray(line["k"])
    spread, err, along = (np.asarray(line[key]) for key in ("spread", "stretch_err", "stretch_spread"))
    e_op = np.asarray(line["e_op_k"]) if rule == "tail" else line["e_op"]
    e_model = {"spread": spread, "tail": spread, "stretch": err, "max": np.maximum(spread, err),
               "calibrated": spread * np.maximum(1.0, np.divide(err, along, out=np.ones_like(err), where=along > 0))}
    return e_model[rule] + GAMMA ** (2.0 * k) * e_op


RULES = ("spread", "stretch", "calibrated", "max", "tail")


def main() -> None:
    lines = [json.loads(x) for f in sys.argv[1:] for x in open(f) if x.strip()]
    ratios = defaultdict(list)                       # (kind, rule) -> MSE over the best k's
    for line in lines:
        chosen = {rule: int(np.argmin(score(rule, line))) for rule in RULES}
        fixed = {f"k={kk}": i for i, kk in enumerate(line["k"])}
        for op, mse in line["mse"].items():
            mse = np.asarray(mse)
            for rule, i in {**chosen, **fixed}.items():
                ratios[(line["kind"], rule)].append(mse[i] / mse.min())
    kinds = sorted({kind for kind, _ in ratios})
    names = list(RULES) + [f"k={kk}" for kk in lines[0]["k"]]
    print("| kind | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for kind in kinds:
        cells = [f"{np.exp(np.mean(np.log(ratios[(kind, n)]))):.2f} ({max(ratios[(kind, n)]):.1f})" for n in names]
        print(f"| {kind} | " + " | ".join(cells) + " |")
    print("\ngeometric mean over rewards and operators of MSE / the best k's MSE (worst in brackets)")


if __name__ == "__main__":
    main()
