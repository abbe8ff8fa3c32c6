"""The bank with reach, with and without its futures' agreement (``BankConfig.agree``), on a
finished run: each operator's ``METHOD+bK+kk`` answers at the run's points (every reward set,
every kind of points) and the mean number of model steps a point takes, for each value of agree
and of ``--agree-spread`` (``BankConfig.agree_spread``: the tolerance in the bank's own scale).

    python results/accuracy/bank/agree/agree.py RUN --methods favor --horizons 400 --agree 0,0.03 \
        [--agree-spread 4] --out results/accuracy/bank/agree/NAME.json

The bank is the run's own configuration (``--points`` P, reach as the run's), made once per
agree value; G_k (no bank) beside it for k of ``--horizons``.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from resolvent.algorithms.bank import Bank, bank_starts
from resolvent.experiments import open_run
from resolvent.experiments.evaluate import horizon_answers
from resolvent.keys import name_id

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reach"))
from study import SHOWN, row_writer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--methods", default="favor")
    ap.add_argument("--horizons", default="400")
    ap.add_argument("--points", type=int, default=2048)
    ap.add_argument("--agree", default="0,0.03")
    ap.add_argument("--agree-spread", default="")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    run, path = Path(args.run), Path(args.out)
    cfg, p = open_run(run)
    obs, act = p.raw_points()
    bcfg = dataclasses.replace(cfg.bank, points=args.points)
    starts = bank_starts(p.features, bcfg, name_id(f"{cfg.seed}-bank"))
    ks = [int(k) for k in args.horizons.split(",")]
    out: dict = {"run": str(run), "args": vars(args), "bank": dataclasses.asdict(bcfg), "rows": {}}
    row = row_writer(out, path, p, SHOWN)
    for name in args.methods.split(","):
        model = p.expansion_model(run / "models", name)
        for k, pred in horizon_answers(model, p, obs, act, ks).items():
            row(f"{name}+k{k}", pred)
        tolerances = [(f"agree={float(a):g}", dict(agree=float(a), agree_spread=0.0)) for a in args.agree.split(",")]
        tolerances += [(f"agree_spread={float(c):g}", dict(agree=0.0, agree_spread=float(c)))
                       for c in args.agree_spread.split(",") if c]
        for label, tolerance in tolerances:
            t0 = time.perf_counter()
            model.bank = Bank(dataclasses.replace(bcfg, **tolerance), starts).build(model.onestep, model.target_policy)
            answers = horizon_answers(model, p, obs, act, ks)
            for k in ks:
                ends = model.expansion(obs, act, k).ends
                row(f"{name}+b{bcfg.horizon}+k{k} {label}", answers[k],
                    seconds=round(time.perf_counter() - t0, 1), spread=model.bank.spread(cfg.gamma),
                    mean_k={kind: float(ends[rows].mean()) for kind, rows in p.slices.items()})
            model.bank = None


if __name__ == "__main__":
    main()
