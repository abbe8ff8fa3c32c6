"""The product's rule for auto's answer on every committed run with its answers (predictions.npz)
and the trust report, scored reward by reward as in ``per_reward.py`` (each reward's MSE over the
best single candidate's, geometric mean):

    python results/accuracy/intervals/product_rule.py > results/accuracy/intervals/product-rule.md

The rule is the evaluation's own (``run_evaluate``'s finish): ``choose_method``, then ``with_bank``
(the pick's operator with the data's bank, where it is as consistent with the data), then
``with_partners`` (an expansion kept averaged with the same expansion of the operators tied with
it), over the run's results.json. ``pair_average.py`` scored the averaging on ``choose_method``'s
pick alone; here a pick the bank replaces stands as the product answers it, the bank's answer
(scored where predictions.npz holds it). The runs were made before the rule: their results.json
has no mean, which is built here from its members' answers (the mean over seeds of each, then
over the members: the same numbers as the product's mean, which is linear).
"""
from __future__ import annotations

from pair_average import mean_of
from per_reward import TIE, over_runs, runs, scores

from resolvent.experiments.trust import choose_method, with_bank, with_partners
from resolvent.model import split_mean


def main() -> None:
    print("| run | choose_method | with_bank | with_partners: the answer | the pick alone | the product's answer |\n"
          "|---|---|---|---|---|---|")
    ratios = {"pick": [], "product": []}
    for run, methods, pick, z, have in runs():
        candidates = tuple(have)
        banked = with_bank(methods, choose_method(methods, candidates, TIE), TIE)
        final = with_partners(banked, TIE)
        members = split_mean(final["chosen"])
        if not all(any(k.startswith(f"{m}|") for k in z.files) for m in members):
            print(f"| {run} | {pick} | {banked['chosen']} | {final['chosen']} | - | not in predictions.npz |")
            continue
        per, _ = scores(z, have, {"answer": mean_of(z, list(members))})
        best = min(per[m] for m in have)
        ratios["pick"].append(per[pick] / best)
        ratios["product"].append(per["answer"] / best)
        row = {k: v[-1] for k, v in ratios.items()}
        print(f"| {run} | {pick} | {banked['chosen']} | {final['chosen']} | {row['pick']:.3f}x "
              f"| {row['product']:.3f}x |")
    print("\nover the runs scored (geometric mean; worst): " + over_runs(ratios))


if __name__ == "__main__":
    main()
