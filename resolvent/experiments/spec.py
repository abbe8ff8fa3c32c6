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
folder, and ``run_one`` runs it, fresh or resumed. ``plan`` and ``drive`` are the loop every
engine shares (which runs to run, at most so many at once, a summary and a progress bar), and
``task_resources`` what each run gets. Nothing here needs Ray: ``sweep.py`` runs the runs as Ray
tasks, ``local.py`` as processes of one machine, ``results/status.py`` counts the committed ones.
"""
from __future__ import annotations

import itertools
import json
import tomllib
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, fields
from pathlib import Path

from tqdm.auto import tqdm

from resolvent.experiments.evaluate import EvaluateConfig, run_evaluate
from resolvent.experiments.optimize import OptimizeConfig, run_optimize
from resolvent.experiments.rundir import RunDir, finished
from resolvent.model import read_run_json
from resolvent.io import atomic_write_json
from resolvent.paths import compile_cache

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
    again). True if resumed. A worker's compiled programs are kept for the others
    (``paths.compile_cache``): a grid's runs compile the same programs."""
    compile_cache()
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
        old = read_run_json(path)
        if old["task"] != sweep.task:
            raise ValueError(f"{sweep.out} holds the runs of an {old['task']!r} sweep; give the {sweep.task!r} "
                             f"sweep another folder (its spec's `out`)")
        mine = {r["path"] for r in new["runs"]}
        new["runs"] = [r for r in old["runs"] if r["path"] not in mine] + new["runs"]
    sweep.out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, new)
    return new


@dataclass(frozen=True)
class TaskResources:
    """What each run of a sweep gets, and how many run at once."""

    limit: int           # runs at once
    num_gpus: float      # each run's share of a GPU (0 where there is none)
    env: dict            # environment variables of the runs' processes

    def options(self, retries: int) -> dict:
        """A Ray task's options: its resources, and ``retries`` retries of a dead worker only."""
        return {"num_cpus": 1, "num_gpus": self.num_gpus, "max_retries": retries, "retry_exceptions": False,
                **({"runtime_env": {"env_vars": self.env}} if self.env else {})}


def task_resources(resources: dict, max_concurrent: int | None = None, tasks_per_gpu: int = 1) -> TaskResources:
    """One CPU a run, and where the machine or cluster (``{"CPU": n, "GPU": g}``, as
    ``ray.cluster_resources()`` says) has GPUs, 1 / ``tasks_per_gpu`` of one: a run's kernels are
    small (one HalfCheetah control run leaves most of an H200 idle), so several runs share a GPU
    well, best under CUDA MPS. Runs that share a GPU must not each take 75% of its memory up
    front, as JAX does by default. At once: at most ``max_concurrent`` [GPUs x tasks_per_gpu,
    else the CPUs]."""
    if tasks_per_gpu < 1:
        raise ValueError(f"tasks_per_gpu must be at least 1, not {tasks_per_gpu}")
    gpus = int(resources.get("GPU", 0))
    limit = max(1, max_concurrent or gpus * tasks_per_gpu or int(resources.get("CPU", 1)))
    shared = gpus > 0 and tasks_per_gpu > 1
    return TaskResources(limit=limit, num_gpus=1 / tasks_per_gpu if gpus else 0,
                         env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"} if shared else {})


@dataclass
class SweepSummary:
    """What a sweep did with each of its runs (their folders), whichever engine ran it."""

    skipped: list[str] = field(default_factory=list)         # finished before the sweep
    ran: list[str] = field(default_factory=list)             # run from the start
    resumed: list[str] = field(default_factory=list)         # resumed from their checkpoints (a retry too)
    failed: dict[str, str] = field(default_factory=dict)     # run folder -> its error


def plan(sweep: Sweep) -> tuple[list[SweepRun], SweepSummary]:
    """The runs of ``sweep`` left to run (their folders read, a folder of another configuration
    refused, ``OUT/sweep.json`` written), and the summary every engine fills, the finished runs
    in it as skipped."""
    states = {r.path: run_state(r) for r in sweep.runs}
    write_manifest(sweep)
    summary = SweepSummary(skipped=[str(r.path) for r in sweep.runs if states[r.path] == "done"])
    return [r for r in sweep.runs if states[r.path] != "done"], summary


def drive(sweep: Sweep, todo: list[SweepRun], summary: SweepSummary, limit: int,
          start: Callable[[SweepRun], Hashable], wait: Callable[[dict], tuple], progress: bool = True) -> SweepSummary:
    """Run ``todo``, at most ``limit`` at once, in the spec's order, into ``summary``: the loop
    every engine shares. ``start(run)`` launches a run and returns its handle; ``wait(pending)``
    ({handle: run}) blocks until one of them is over, however many times its engine retried it,
    and returns ``(handle, resumed, error)``: ``error`` None where it finished, ``resumed`` whether
    its last attempt resumed a folder."""
    queue, pending = list(todo), {}
    bar = tqdm(total=len(sweep.runs), initial=len(summary.skipped), unit="run", desc="sweep",
               dynamic_ncols=True, disable=not progress)
    while queue or pending:
        while queue and len(pending) < limit:
            run = queue.pop(0)
            pending[start(run)] = run
        handle, resumed, error = wait(pending)
        run = pending.pop(handle)
        if error is None:
            (summary.resumed if resumed else summary.ran).append(str(run.path))
        else:
            summary.failed[str(run.path)] = error
        bar.update(1)
        bar.set_postfix(running=len(pending), failed=len(summary.failed))
    bar.close()
    return summary
