"""Where the 10-seed grids stand: per grid spec, the cells whose seeds are all committed under
results/ and the cells not yet (finished / in the spec), read from the committed sweep folders.

    python results/status.py            # the table at the top of results/README.md
    python results/status.py --write    # and put it there (after committing a seed)

A seed counts when a committed folder holds its run finished, of the spec's configuration (the
sweep's own check, ``run_state``: ``done``). The minutes are the median of the
finished seeds' training time, summed over their methods, on this 2-core CPU with other work
beside it (a rough guide to what the rest costs; a run also fits its one-step model, answers its
expansions and evaluates, which the training time leaves out); seeds trained elsewhere (a GPU,
results.json's ``device``) have their own median in brackets.
"""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from statistics import median

from resolvent.experiments.report import read_sweep
from resolvent.experiments.spec import SweepRun, load_spec, run_state

RESULTS = Path(__file__).resolve().parent
GRIDS = {"ope.toml": "OPE, the paper's four networks under both presets",
         "opi.toml": "control (OPI), operator DQN / BCQ, max-out and vanilla",
         "ope-operators.toml": "OPE, the default's operators (favor, fb) and their expansions"}


def committed() -> dict[tuple, tuple[dict, Path, Path]]:
    """(task, cell, seed) -> (results, run, folder) of every finished run committed under results/
    (in folders that hold their own runs, not in those joining others)."""
    runs = {}
    for manifest in sorted(RESULTS.glob("*/sweep.json")):
        if "joined" in json.loads(manifest.read_text()):
            continue
        task, cells = read_sweep(manifest.parent)
        for cell in cells:
            for run, cfg, res in zip(cell.runs, cell.configs, cell.results):
                runs.setdefault((task, cell.name, cfg["seed"]), (res, run, manifest.parent))
    return runs


def done_as_specified(run: SweepRun, path: Path) -> bool:
    """Whether the committed run at ``path`` is the spec's ``run``, finished."""
    try:
        return run_state(dataclasses.replace(run, path=path)) == "done"
    except ValueError:            # a run of another configuration
        return False


def minutes(cfg: dict, res: dict) -> float:
    """A finished run's training time, summed over its configuration's methods (an expansion's
    entry repeats its operator's)."""
    return sum(res["methods"][m].get("seconds", 0.0) for m in cfg["methods"] if m in res["methods"]) / 60


def minutes_text(got: list) -> str:
    """The median training minutes of the seeds trained on this CPU (results.json's ``device``,
    absent before it was recorded: ``cpu``), then those of each other device in brackets."""
    by: dict[str, list[float]] = {}
    for want, res, _, _ in got:
        by.setdefault(res.get("device", "cpu"), []).append(minutes(want, res))
    cpu = f"{median(by.pop('cpu')):.0f}" if "cpu" in by else "-"
    return cpu + "".join(f" ({device}: {median(m):.0f})" for device, m in sorted(by.items()))


def rows() -> list[list[str]]:
    runs = committed()
    out = []
    for spec, what in GRIDS.items():
        sweep = load_spec(RESULTS / spec)
        families: dict[str, dict[str, list]] = {}
        for run in sweep.runs:
            want = run.config.to_dict()
            got = runs.get((sweep.task, run.cell, run.seed))
            same = got is not None and done_as_specified(run, got[1])
            label = " ".join(str(v) for k, v in run.values.items() if k != "family") or want["dataset"]
            families.setdefault(want["family"], {}).setdefault(label, []).append((want, *got) if same else None)
        for family, cells in families.items():
            done = [c for c, seeds in cells.items() if all(seeds)]
            rest = [f"{c} ({sum(map(bool, seeds))}/{len(seeds)})" for c, seeds in cells.items() if not all(seeds)]
            got = [g for seeds in cells.values() for g in seeds if g]
            folders = sorted({f"[`{g[3].name}/`]({g[3].name}/)" for g in got})
            first = family == next(iter(families))
            out.append([f"[`{spec}`]({spec})" if first else "", what if first else "", family,
                        f"{len(done)} of {len(cells)}", ", ".join(done) or "-",
                        ", ".join(rest) or "-", minutes_text(got) if got else "-",
                        ", ".join(folders) or "-"])
    return out


def table() -> str:
    head = ["spec", "grid", "family", "cells with 10 seeds", "those cells", "not yet (seeds committed)",
            "training minutes a seed here", "committed in"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows()]) + "\n"


def write(readme: Path = RESULTS / "README.md") -> None:
    """Replace the table in ``readme`` (its header line to the first blank line) by today's."""
    text, new = readme.read_text(), table()
    start = text.index(new.splitlines()[0])
    end = text.index("\n\n", start) + 1
    readme.write_text(text[:start] + new + text[end:])


def main() -> None:
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        print(table(), end="")


if __name__ == "__main__":
    main()
