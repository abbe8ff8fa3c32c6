"""Sweep specs: a grid of ``evaluate`` or ``optimize`` runs, expanded into run directories.

A spec names the task, the seeds and the options of ``evaluate`` or ``optimize`` runs, in the
words of their ``config.json`` (nested FQE settings as ``fqe.tau``, ``fqe.prior.kind``;
``preset`` for evaluate). Options in ``[fixed]`` hold for every run, each list in ``[axes]`` is
one axis of the grid; several ``[[grid]]`` blocks (each with its own ``axes``, ``fixed`` and
optionally ``seeds``) make one sweep of grids that differ in more than their axes::

    task = "evaluate"
    out = "runs/ope"
    seeds = 10                        # the seed axis: experiment seeds 0..9 (or a list)
    [fixed]
    steps = 15000
    methods = ["attention", "linear", "vanilla", "sf"]
    [axes]
    family = ["pendulum-angle", "halfcheetah-vel", "ant-dir"]
    dataset = ["replay", "expert", "medium"]
    preset = ["paper", "default"]

Every cell x seed is an ordinary run directory, ``OUT/CELL/seed-K`` (CELL: the cell's axis
values), one experiment seed each (``seed = K``, ``seeds = 1``): resumable with ``evaluate
--resume`` like any other. A run's state (``run_state``: new, resume, done) is read from its
folder, and ``run_one`` runs it, fresh or resumed. Nothing here needs Ray: ``sweep`` runs the
runs as Ray tasks, ``results/status.py`` counts the committed ones.
"""
from __future__ import annotations

import itertools
import json
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from resolvent.experiments.evaluate import EvaluateConfig, run_evaluate
from resolvent.experiments.optimize import OptimizeConfig, run_optimize
from resolvent.experiments.rundir import RunDir, finished
from resolvent.io import atomic_write_json

TASKS = {"evaluate": (EvaluateConfig, run_evaluate), "optimize": (OptimizeConfig, run_optimize)}
SPEC_KEYS = ("task", "out", "seeds", "fixed", "axes", "grid")
GRID_KEYS = ("axes", "fixed", "seeds")
SEEDED = ("seed", "seeds")   # set by the seed axis, one experiment seed per run


@dataclass(frozen=True)
class SweepRun:
    """One run of a sweep: a cell of the grid at one experiment seed."""

    cell: str        # the cell's name, its axis values joined by "-"
    values: dict     # the cell's axis values, option -> value (dotted for nested options)
    seed: int        # the experiment seed
    path: Path       # its run directory, OUT/CELL/seed-K
    config: object   # its EvaluateConfig or OptimizeConfig


@dataclass(frozen=True)
class Sweep:
    """A spec expanded: its task, folder and runs."""

    task: str
    out: Path
    runs: tuple[SweepRun, ...]
    spec: dict       # the spec as read

    def manifest(self) -> dict:
        """This sweep's part of ``sweep.json``: the spec and every run's cell, seed and folder."""
        return {"task": self.task, "spec": self.spec,
                "runs": [{"cell": r.cell, "values": r.values, "seed": r.seed,
                          "path": str(r.path.relative_to(self.out))} for r in self.runs]}


def option_names(task: str) -> set[str]:
    """The options a spec may give a run of ``task`` (its config's fields, ``preset`` for
    evaluate), less the seeds, which the seed axis sets."""
    names = {f.name for f in fields(TASKS[task][0])} - set(SEEDED)
    return names | {"preset"} if task == "evaluate" else names


def flatten(d: dict, prefix: str = "") -> dict:
    """Nested tables as dotted keys: {"fqe": {"tau": [..]}} -> {"fqe.tau": [..]}."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def nest(flat: dict) -> dict:
    """Dotted keys back to nested dicts."""
    out: dict = {}
    for key, v in flat.items():
        *path, last = key.split(".")
        node = out
        for p in path:
            node = node.setdefault(p, {})
        node[last] = v
    return out


def merge(base: dict, over: dict) -> dict:
    """``base`` with ``over`` laid on it, nested dicts merged key by key."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def build_config(task: str, options: dict, seed: int):
    """The config of one run: the task's defaults (evaluate: the ``preset``'s), the options
    (nested ones merged into the defaults' tables), ``seed`` and one network seed."""
    cls = TASKS[task][0]
    options = dict(options)
    base = EvaluateConfig.preset(options.pop("preset", "default")) if task == "evaluate" else cls()
    return cls.from_dict(merge(base.to_dict(), {**options, "seed": seed, "seeds": 1}))


def check_keys(d: dict, known, where: str) -> None:
    unknown = sorted(set(d) - set(known))
    if unknown:
        raise ValueError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {unknown}; known: {sorted(known)}")


def check_options(d: dict, task: str, where: str) -> None:
    """Top-level option names against the task's config; the seeds belong to the seed axis."""
    seeded = sorted(set(d) & set(SEEDED))
    if seeded:
        raise ValueError(f"{where}: {seeded} are set by the sweep's seed axis (`seeds = N` or a list "
                         f"at the top of the spec, or in a [[grid]]), one experiment seed per run")
    check_keys(d, option_names(task), f"{where}: {task} option")


def seed_list(seeds, where: str) -> list[int]:
    """``seeds = N`` (0..N-1) or an explicit list of experiment seeds."""
    if isinstance(seeds, int) and not isinstance(seeds, bool) and seeds >= 1:
        return list(range(seeds))
    if (isinstance(seeds, list) and seeds and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)
            and len(set(seeds)) == len(seeds)):
        return list(seeds)
    raise ValueError(f"{where}: seeds must be a count >= 1 or a list of distinct integers, got {seeds!r}")


def slug(key: str, value) -> str:
    """A cell name's part for one axis value: a string as it is, anything else as key=value."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        value = "+".join(str(v) for v in value)
    return f"{key.split('.')[-1]}={value}"


def parse_spec(spec: dict, where: str = "spec", out: str | Path | None = None) -> Sweep:
    """Expand a spec (a parsed TOML table) into its runs, every config built and checked."""
    check_keys(spec, SPEC_KEYS, where)
    task = spec.get("task")
    if task not in TASKS:
        raise ValueError(f"{where}: task must be one of {sorted(TASKS)}, got {task!r}")
    if "axes" in spec and "grid" in spec:
        raise ValueError(f"{where}: give [axes] or [[grid]] blocks, not both")
    fixed = spec.get("fixed", {})
    if not isinstance(fixed, dict):
        raise ValueError(f"{where}: [fixed] must be a table of options")
    check_options(fixed, task, f"{where} [fixed]")
    grids = spec.get("grid", [{"axes": spec.get("axes", {})}])
    if not isinstance(grids, list):
        raise ValueError(f"{where}: grid must be [[grid]] blocks")
    folder = Path(out if out is not None else spec.get("out", f"runs/{Path(where).stem}"))
    runs, names = [], {}
    for g, grid in enumerate(grids):
        at = f"{where} [[grid]] {g + 1}" if "grid" in spec else where
        if not isinstance(grid, dict):
            raise ValueError(f"{at}: a [[grid]] block must be a table")
        check_keys(grid, GRID_KEYS, at)
        axes, own = grid.get("axes", {}), grid.get("fixed", {})
        if not isinstance(axes, dict) or not isinstance(own, dict):
            raise ValueError(f"{at}: axes and fixed must be tables")
        check_options(axes, task, f"{at} [axes]")
        check_options(own, task, f"{at} [fixed]")
        axes = flatten(axes)
        for key, values in axes.items():
            if not isinstance(values, list) or not values:
                raise ValueError(f"{at} [axes]: {key} must be a non-empty list of values, got {values!r}")
        seeds = seed_list(grid.get("seeds", spec.get("seeds", 1)), at)
        base = merge(fixed, own)
        for combo in itertools.product(*axes.values()):
            values = dict(zip(axes, combo))
            cell = "-".join(slug(k, v) for k, v in values.items()) or "run"
            if cell in names and names[cell] != values:
                raise ValueError(f"{at}: two cells are both named {cell!r} ({names[cell]} and {values}); "
                                 f"make their axis values differ")
            if cell in names:
                raise ValueError(f"{at}: cell {cell!r} appears twice")
            names[cell] = values
            options = merge(base, nest(values))
            for seed in seeds:
                try:
                    config = build_config(task, options, seed)
                except (ValueError, TypeError) as e:
                    raise ValueError(f"{at}, cell {cell!r}: {e}") from None
                runs.append(SweepRun(cell, values, seed, folder / cell / f"seed-{seed}", config))
    return Sweep(task, folder, tuple(runs), spec)


def load_spec(path: str | Path, out: str | Path | None = None) -> Sweep:
    """Read and expand a TOML spec (``out``, when given, wins over the spec's own)."""
    path = Path(path)
    try:
        spec = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path} is not valid TOML: {e}") from None
    return parse_spec(spec, str(path), out)


def run_state(run: SweepRun) -> str:
    """``done`` (every method trained to its steps), ``resume`` (a run with checkpoints to
    continue) or ``new``; a folder holding a run of another configuration is refused (one that
    differs only in fields its methods never read is the same run)."""
    folder = RunDir(run.path)
    if not folder.config_path.is_file():
        return "new"
    want = json.loads(json.dumps(run.config.to_dict()))
    try:   # read as the task's config: a field added since the run was made takes its default
        have = json.loads(json.dumps(type(run.config).from_dict(folder.read_config()).to_dict()))
    except (TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"{folder.config_path} is not a run configuration: {type(e).__name__}: {e}") from None
    inert = run.config.inert_fields()   # fields the run's methods never read
    differ = sorted(k for k in set(have) | set(want) if have.get(k) != want.get(k) and k not in inert)
    if differ:
        raise ValueError(f"{run.path} holds a run of another configuration (differs in {differ}); "
                         f"move it away or give the sweep another --out")
    return "done" if finished(have, folder.read_results()) else "resume"


def run_one(task: str, config: dict, path: str) -> bool:
    """One run of a sweep (in a Ray worker, or any process): fresh, or resumed from its
    checkpoints when its folder already holds its config.json (a retried task, or a sweep started
    again). True if resumed."""
    cls, runner = TASKS[task]
    resume = RunDir(path).config_path.is_file()
    runner(cls.from_dict(config), path, resume=resume)
    return resume


def write_manifest(sweep: Sweep) -> dict:
    """``OUT/sweep.json``: this sweep's runs joined to those already listed there by earlier sweeps
    into the same folder (several specs build one grid, e.g. ``results/ope-*.toml`` into
    ``runs/ope``, and ``resolvent report`` covers them all), the spec the latest. A folder holds
    one task's runs: a sweep of another task into it is refused."""
    path = sweep.out / "sweep.json"
    new = sweep.manifest()
    if path.is_file():
        old = json.loads(path.read_text())
        if old["task"] != sweep.task:
            raise ValueError(f"{sweep.out} holds the runs of an {old['task']!r} sweep; give the {sweep.task!r} "
                             f"sweep another folder (its spec's `out`)")
        mine = {r["path"] for r in new["runs"]}
        new["runs"] = [r for r in old["runs"] if r["path"] not in mine] + new["runs"]
    sweep.out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, new)
    return new
