"""`resolvent sweep` on a local Ray: a worker killed mid-run is retried and resumes to the same
numbers as an uninterrupted run; finished runs are skipped; the run lock holds; TensorBoard
events match metrics.jsonl; the spec is checked; `resolvent report` on the finished sweep."""
import csv
import dataclasses
import json
import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
import ray
import scipy.stats
from click.testing import CliRunner
from rliable import metrics
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from resolvent.cli import main
from resolvent.experiments import RunDir
from resolvent.experiments.rundir import finished
from resolvent.experiments.report import Cell, interval_estimates, iqm, read_sweep, report, table
from resolvent.experiments.spec import load_spec, parse_spec, run_one, run_state, write_manifest
from resolvent.experiments.sweep import run_sweep

from sweep_cases import SPEC, TINY, assert_a_second_sweep_skips, final, killed_mid_run, rows

OPT_TINY = {"family": "pendulum-angle", "dataset": "replay", "methods": ["maxout", "vanilla"], "steps": 20,
            "eval_every": 10, "checkpoint_every": 10, "m": 16, "n_train_rewards": 8, "hidden": [16], "features": 8,
            "heads": 2, "eval_episodes": 2, "n_return_rewards": 2, "batch_size": 32}


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=100 * 2**20)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def killed(local_ray, tmp_path_factory):
    """An uninterrupted run of seed 0, then the 2-run sweep whose seed-0 worker is killed (SIGKILL)
    right after its first checkpoint."""
    return killed_mid_run(lambda grid: run_sweep(grid, progress=False), tmp_path_factory.mktemp("sweep"))


def test_killed_worker_is_retried_and_resumes_to_the_uninterrupted_result(killed):
    root, summary = killed["root"], killed["summary"]
    assert killed["pid"] != os.getpid() and killed["midway"]
    assert killed["reference"].ran == [str(root / "reference" / "run" / "seed-0")]
    assert summary.failed == {} and summary.skipped == []
    assert summary.resumed == [str(root / "killed" / "run" / "seed-0")]     # the retry resumed
    assert summary.ran == [str(root / "killed" / "run" / "seed-1")]
    done, ref = root / "killed" / "run" / "seed-0", root / "reference" / "run" / "seed-0"
    assert rows(done) == rows(ref) and final(done) == final(ref)
    assert [r["step"] for r in rows(done)] == list(range(0, 1001, 50))
    assert rows(root / "killed" / "run" / "seed-1") != rows(ref)                # another experiment seed
    assert json.loads((done / "config.json").read_text())["seed"] == 0
    assert not (done / "run.lock").exists()


def test_tensorboard_events_match_metrics_after_the_resume(killed):
    done = killed["root"] / "killed" / "run" / "seed-0"
    assert len(list((done / "tb" / "linear-seed0").glob("events.out.tfevents.*"))) == 2   # killed + resumed
    acc = EventAccumulator(str(done / "tb" / "linear-seed0"))
    acc.Reload()
    for key in ("test_mse", "train_r2", "loss"):
        events = acc.Scalars(key)
        want = [(r["step"], r[key]) for r in RunDir(done).read_metrics() if r[key] is not None]
        assert [(e.step, pytest.approx(e.value, rel=1e-6)) for e in events] == want, key


def test_second_sweep_skips_finished_runs(killed):
    assert_a_second_sweep_skips(parse_spec(SPEC, out=killed["root"] / "killed"),
                                lambda grid: run_sweep(grid, progress=False))


def test_a_run_is_done_only_once_its_last_entries_are_written(killed, tmp_path):
    """results.json is written after every method, then once more with the entries that need them
    all (an operator's expansions, auto's pick) and ``complete``: a run stopped between the two is
    resumed, not skipped, and not reported. A results.json from before the mark counts by its
    methods."""
    run = killed["grid"].runs[1]
    res = json.loads((run.path / "results.json").read_text())
    assert res["complete"] is True and run_state(run) == "done"
    assert res["device"] == jax.devices()[0].device_kind                 # what trained it ("cpu" here)
    copy = dataclasses.replace(run, path=shutil.copytree(run.path, tmp_path / "run" / "seed-1"))
    RunDir(copy.path).write_json("results.json", {**res, "complete": False})
    assert run_state(copy) == "resume" and not finished(json.loads((copy.path / "config.json").read_text()),
                                                         {**res, "complete": False})
    RunDir(copy.path).write_json("results.json", {k: v for k, v in res.items() if k != "complete"})
    assert run_state(copy) == "done"                                  # before the mark: every method trained
    short = {**res, "methods": {"linear": {**res["methods"]["linear"], "steps": 10}}}
    RunDir(copy.path).write_json("results.json", {k: v for k, v in short.items() if k != "complete"})
    assert run_state(copy) == "resume"


def test_a_run_another_process_writes_is_not_written_twice(local_ray, tmp_path):
    grid = parse_spec({**SPEC, "seeds": [5]}, out=tmp_path)
    with RunDir(grid.runs[0].path).writer():
        summary = run_sweep(grid, progress=False)
    (path, why), = summary.failed.items()
    assert path == str(grid.runs[0].path) and f"in use by process {os.getpid()}" in why
    assert not (grid.runs[0].path / "config.json").exists()


def test_report_of_the_sweep(killed, tmp_path):
    root = killed["root"] / "killed"
    written = report(root, tmp_path, reps=500, copy=True)
    assert set(written) == {"report.md", "report.csv", "ope.png"}
    assert written["ope.png"].stat().st_size > 10_000
    table = list(csv.DictReader(written["report.csv"].open()))
    got = {r["metric"]: r for r in table}
    finals = [final(root / "run" / f"seed-{s}")["linear"]["test_mse"][0] for s in (0, 1)]
    assert got["test_mse"]["seeds"] == "2" and got["test_mse"]["expected_seeds"] == "2"
    assert float(got["test_mse"]["iqm"]) == pytest.approx(np.mean(finals))      # two seeds: nothing trimmed
    assert min(finals) <= float(got["test_mse"]["ci_low"]) <= float(got["test_mse"]["ci_high"]) <= max(finals)
    assert "| linear | 2/2 |" in written["report.md"].read_text()
    data = [final(root / "run" / f"seed-{s}")["linear"]["data_test_r2"][0] for s in (0, 1)]   # where Q varies
    assert float(got["data_test_r2"]["iqm"]) == pytest.approx(np.mean(data))
    assert "test R^2, data states" in written["report.md"].read_text()
    # the copied small files report again to the same table
    again = report(tmp_path, tmp_path / "again", reps=500)
    assert again["report.csv"].read_text() == written["report.csv"].read_text()
    # and count as finished runs: a sweep over them (another session's folder) skips them
    assert [run_state(r) for r in parse_spec(SPEC, out=tmp_path).runs] == ["done", "done"]


def test_several_sweep_folders_are_reported_as_one(killed, tmp_path):
    """A grid run into several folders: one table whose rows are each folder's own report's, to the
    digit, and a joined sweep.json in --out that draws it again (runs in place, or copied)."""
    a = killed["root"] / "killed"
    b = tmp_path / "b"
    shutil.copytree(a / "run", b / "other")                     # the same runs as another cell
    manifest = json.loads((a / "sweep.json").read_text())
    manifest["runs"] = [{**r, "cell": "other", "path": r["path"].replace("run/", "other/")} for r in manifest["runs"]]
    (b / "sweep.json").write_text(json.dumps(manifest))
    own = [report(d, tmp_path / f"own-{d.name}", reps=300)["report.csv"].read_text().splitlines() for d in (a, b)]
    joined = report([a, b], tmp_path / "grid", reps=300)
    lines = joined["report.csv"].read_text().splitlines()
    assert lines == own[0] + own[1][1:] and set(joined) == {"report.md", "report.csv", "ope.png"}
    again = report(tmp_path / "grid", tmp_path / "again", reps=300)             # from the joined manifest
    assert again["report.csv"].read_text().splitlines() == lines
    copied = report([a, b], tmp_path / "copied", reps=300, copy=True)
    assert (tmp_path / "copied" / "other" / "seed-1" / "results.json").is_file()
    assert report(tmp_path / "copied", reps=300)["report.csv"].read_text() == copied["report.csv"].read_text()
    with pytest.raises(ValueError, match="an --out folder of their own"):
        report([a, b], reps=300)
    with pytest.raises(ValueError, match=r"cells \['run'\] are in more than one"):
        report([a, shutil.copytree(a, tmp_path / "twin")], tmp_path / "x", reps=300)
    with pytest.raises(ValueError, match="already joins several sweep folders"):
        report([tmp_path / "grid", b], tmp_path / "x", reps=300)
    (tmp_path / "bare").mkdir()
    with pytest.raises(FileNotFoundError, match="bare has no sweep.json: not a sweep folder"):
        report([a, tmp_path / "bare"], tmp_path / "x", reps=300)
    c = shutil.copytree(b, tmp_path / "c")                          # b's run paths, under another cell name
    (c / "sweep.json").write_text(json.dumps({**manifest, "runs": [{**r, "cell": "third"} for r in manifest["runs"]]}))
    with pytest.raises(ValueError, match="runs at the same paths"):
        report([b, c], tmp_path / "clash", reps=300, copy=True)
    assert not (tmp_path / "clash").exists()                         # refused before anything was written
    (tmp_path / "opt").mkdir()
    (tmp_path / "opt" / "sweep.json").write_text(json.dumps({"task": "optimize", "runs": []}))
    res = CliRunner().invoke(main, ["report", str(a), str(tmp_path / "opt"), "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "different tasks (evaluate, optimize)" in res.output


def test_cli_dry_run_and_report(killed, tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text('task = "evaluate"\nseeds = 2\n[fixed]\n'
                    + "".join(f"{k} = {json.dumps(v)}\n" for k, v in TINY.items()))
    res = CliRunner().invoke(main, ["sweep", str(spec), "--out", str(killed["root"] / "killed"), "--dry-run"])
    assert res.exit_code == 0, res.output
    assert res.output.split() == ["done", str(killed["root"] / "killed" / "run" / "seed-0"),
                                  "done", str(killed["root"] / "killed" / "run" / "seed-1")]
    res = CliRunner().invoke(main, ["report", str(killed["root"] / "killed"), "--out", str(tmp_path / "r"),
                                    "--reps", "200"])
    assert res.exit_code == 0, res.output
    assert "IQM over seeds" in res.output and (tmp_path / "r" / "report.csv").is_file()


def test_spec_expands_into_cells_and_seeds(tmp_path):
    grid = parse_spec({"task": "evaluate", "seeds": [3, 7], "fixed": TINY,
                       "axes": {"dataset": ["replay", "expert"], "fqe": {"tau": [0.005, 0.05]}}}, out=tmp_path)
    assert [r.cell for r in grid.runs[::2]] == ["replay-tau=0.005", "replay-tau=0.05", "expert-tau=0.005",
                                                "expert-tau=0.05"]
    assert [r.seed for r in grid.runs[:2]] == [3, 7]
    run = grid.runs[1]
    assert run.path == tmp_path / "replay-tau=0.005" / "seed-7"
    assert (run.config.seed, run.config.seeds, run.config.fqe.tau, run.config.dataset) == (7, 1, 0.005, "replay")
    assert run.config.prior.kind == "family"            # the paper preset's prior, its tau overridden
    grids = parse_spec({"task": "optimize", "seeds": 1, "fixed": {"methods": ["maxout"]},
                        "grid": [{"axes": {"family": ["pendulum-angle"]}, "fixed": {"dataset": "replay"}},
                                 {"axes": {"family": ["ant-dir"]}, "seeds": 2, "fixed": {"steps": 3000}}]},
                       out=tmp_path)
    assert [(r.cell, r.seed, r.config.dataset, r.config.steps) for r in grids.runs] == [
        ("pendulum-angle", 0, "replay", 15000), ("ant-dir", 0, "expert", 3000), ("ant-dir", 1, "expert", 3000)]


@pytest.mark.parametrize("spec, message", [
    ({"task": "evaluate", "fixd": {}}, r"unknown key \['fixd'\]"),
    ({"task": "train"}, "task must be one of"),
    ({"task": "evaluate", "fixed": {"stepz": 10}}, r"\[fixed\]: evaluate option: unknown key \['stepz'\]"),
    ({"task": "evaluate", "axes": {"seed": [0, 1]}}, "set by the sweep's seed axis"),
    ({"task": "evaluate", "axes": {"steps": 100}}, "steps must be a non-empty list"),
    ({"task": "evaluate", "seeds": 0}, "seeds must be a count >= 1"),
    ({"task": "evaluate", "fixed": {"fqe": {"taux": 1}}}, r"unknown fqe config keys \['taux'\]"),
    ({"task": "evaluate", "axes": {"family": ["pendulum-angle", "moon"]}}, "cell 'moon'"),
    ({"task": "optimize", "fixed": {"preset": "paper"}}, r"optimize option: unknown key \['preset'\]"),
    ({"task": "evaluate", "axes": {"dataset": ["expert"]}, "grid": []}, "not both"),
])
def test_spec_rejects_bad_keys_and_values_by_name(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_spec(spec)


RESULTS = Path(__file__).resolve().parents[2] / "results"


def test_some_cells_of_a_folder_are_reported_and_copied_alone(killed, tmp_path):
    """--cells: a folder holding several cells (runs/opi holds every control cell) reports, and
    copies into --out with a manifest of their own, only the cells that match."""
    two = shutil.copytree(killed["root"] / "killed", tmp_path / "two")
    shutil.copytree(two / "run", two / "other")
    manifest = json.loads((two / "sweep.json").read_text())
    manifest["runs"] += [{**r, "cell": "other", "path": r["path"].replace("run/", "other/")} for r in manifest["runs"]]
    (two / "sweep.json").write_text(json.dumps(manifest))
    both = report(two, tmp_path / "both", reps=200)["report.csv"].read_text().splitlines()
    one = report(two, tmp_path / "one", reps=200, copy=True, cells=["oth*"])["report.csv"].read_text().splitlines()
    assert len(one) - 1 == (len(both) - 1) // 2 and set(one) <= set(both)
    copied = json.loads((tmp_path / "one" / "sweep.json").read_text())
    assert {r["cell"] for r in copied["runs"]} == {"other"} and len(copied["runs"]) == 2
    assert (tmp_path / "one" / "other" / "seed-1" / "results.json").is_file()
    assert not (tmp_path / "one" / "run").exists()
    assert report(tmp_path / "one", reps=200)["report.csv"].read_text().splitlines() == one   # drawn again alone
    with pytest.raises(ValueError, match=r"no cell matches 'nope'; the cells: run, other"):
        report(two, tmp_path / "x", reps=200, cells=["nope"])
    assert not (tmp_path / "x").exists()
    res = CliRunner().invoke(main, ["report", str(two), "--cells", "run", "--out", str(tmp_path / "cli")])
    assert res.exit_code == 0 and (tmp_path / "cli" / "report.md").is_file()


@pytest.mark.parametrize("spec", sorted(p.name for p in RESULTS.glob("*.toml")))
def test_every_committed_spec_expands(spec, tmp_path):
    """The grids under results/ parse and expand into valid run configurations (nothing runs)."""
    sweep = load_spec(RESULTS / spec, out=tmp_path)
    assert sweep.runs and all(r.path.parent.parent == tmp_path for r in sweep.runs)


@pytest.mark.parametrize("folder", sorted(p.parent.name for p in RESULTS.glob("*/report.md")))
def test_every_committed_report_can_be_made_again(folder):
    """A report under results/ comes with the manifest that lists every run whose files it holds
    (or, joining other folders, theirs), so ``resolvent report results/FOLDER`` redraws all its
    cells from what is committed."""
    listed = {r["path"] for r in json.loads((RESULTS / folder / "sweep.json").read_text())["runs"]}
    held = {str(p.parent.relative_to(RESULTS / folder)) for p in (RESULTS / folder).glob("*/seed-*/results.json")}
    assert held <= listed and any((RESULTS / folder / p / "results.json").is_file() for p in listed)


def test_the_ope_grid_table_is_made_from_the_joined_report():
    """results/ope/table.py: a row per family, dataset and preset of the grid, every network's test
    MSE in it, each row's lowest in bold."""
    out = subprocess.run([sys.executable, str(RESULTS / "ope" / "table.py")], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    rows = out[2:]
    assert len(rows) == 18 and all(r.count("[") == 4 and r.count("**") == 2 for r in rows)
    assert rows[0].startswith("| pendulum-angle / replay | paper | 10 |")


def test_the_ten_seed_status_in_results_readme_is_the_committed_one(tmp_path):
    """results/status.py: every cell of the 10-seed grids, counted from the committed runs; the table
    results/README.md shows is what it prints today (a seed committed since updates both)."""
    out = subprocess.run([sys.executable, str(RESULTS / "status.py")], capture_output=True, text=True,
                         check=True).stdout
    assert out in (RESULTS / "README.md").read_text()
    rows = out.splitlines()[2:]
    assert len(rows) == 9 and rows[0].split(" | ")[3] == "6 of 6"     # the OPE grid: 18 cells at 10 seeds
    stale = tmp_path / "README.md"                                     # --write mends a stale table in place
    text = (RESULTS / "README.md").read_text()
    stale.write_text(text.replace(rows[0], rows[0].replace("6 of 6", "5 of 6"), 1))
    status = runpy.run_path(str(RESULTS / "status.py"))
    status["write"](stale)
    assert stale.read_text() == text
    # the minutes a seed of this CPU (a run from before the device was recorded ran here), then each other device's
    cfg = {"methods": ["a"]}
    seeds = [(cfg, {"methods": {"a": {"seconds": s}}, **({"device": d} if d else {})}, None, None)
             for s, d in [(60, None), (180, "cpu"), (120, "cpu"), (30, "NVIDIA H200")]]
    assert status["minutes_text"](seeds) == "2 (NVIDIA H200: 0)"
    assert status["minutes_text"](seeds[3:]) == "- (NVIDIA H200: 0)"


def test_a_folder_of_another_configuration_is_refused(tmp_path):
    run = parse_spec(SPEC, out=tmp_path).runs[0]
    RunDir(run.path).write_json("config.json", {**run.config.to_dict(), "steps": 4000})
    with pytest.raises(ValueError, match=r"another configuration \(differs in \['steps'\]\)"):
        run_state(run)
    older = {k: v for k, v in run.config.to_dict().items() if k != "oracle_rewards"}   # before the field
    RunDir(run.path).write_json("config.json", older)
    assert run_state(run) == "resume"   # a field added since takes its default: the same run
    # the one-step model's fields are read only by methods of the policy encoding (favor, fb)
    model = {**run.config.to_dict(), "onestep": {**run.config.to_dict()["onestep"], "steps": 7}, "horizons": [3]}
    RunDir(run.path).write_json("config.json", model)
    assert run.config.methods == ("linear",) and run_state(run) == "resume"
    favor = dataclasses.replace(run, config=dataclasses.replace(run.config, methods=("favor",)))
    RunDir(run.path).write_json("config.json", {**model, "methods": ["favor"]})
    with pytest.raises(ValueError, match=r"differs in \['horizons', 'onestep'\]"):
        run_state(favor)
    # auto's band is read only by auto (the Pendulum runs of results/ope-10seeds predate its default)
    RunDir(run.path).write_json("config.json", {**run.config.to_dict(), "auto_tie": 0.1})
    assert run_state(run) == "resume"
    assert "auto_tie" not in dataclasses.replace(run.config, auto=True).inert_fields()
    res = CliRunner().invoke(main, ["sweep", "/nonexistent.toml"])
    assert res.exit_code == 2


def test_cli_names_a_bad_spec(tmp_path):
    spec = tmp_path / "bad.toml"
    spec.write_text('task = "evaluate"\n[fixed]\nstepz = 3\n')
    res = CliRunner().invoke(main, ["sweep", str(spec)])
    assert res.exit_code == 2 and "error:" in res.output and "stepz" in res.output
    spec.write_text('task = "evaluate"\n[fixed\n')
    res = CliRunner().invoke(main, ["sweep", str(spec)])
    assert res.exit_code == 2 and "not valid TOML" in res.output


def test_iqm_of_known_arrays():
    x = np.arange(1.0, 9.0)[:, None]                          # (8 runs, 1 task): drops 1, 2 and 7, 8
    assert iqm(x) == pytest.approx([4.5])
    assert iqm(np.array([[1.0], [2.0], [3.0], [100.0]])) == pytest.approx([2.5])   # the outlier trimmed
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(10, 1, 7))                          # (runs, tasks, steps)
    assert iqm(scores) == pytest.approx([metrics.aggregate_iqm(scores[..., t]) for t in range(7)])
    assert iqm(scores) == pytest.approx(scipy.stats.trim_mean(scores[:, 0], 0.25, axis=0))
    for runs in (1, 2, 3, 7, 10, 33):                             # SciPy's trimmed mean to the bit
        y = rng.normal(size=(runs, 1, 5)) * 1e3
        assert np.array_equal(iqm(y), scipy.stats.trim_mean(y[:, 0], 0.25, axis=0))
    y = rng.normal(size=(10, 1, 3))
    y[4, 0, 1] = np.nan
    assert np.array_equal(np.isnan(iqm(y)), [False, True, False])  # a NaN propagates, as in SciPy
    const = interval_estimates({"c": np.full((5, 1), 3.0)}, reps=200)["c"]
    assert [float(v[0]) for v in const] == [3.0, 3.0, 3.0]
    (mid, lo, hi), = interval_estimates({"x": x}, reps=2000).values()
    assert mid[0] == pytest.approx(4.5) and 1.0 <= lo[0] < 4.5 < hi[0] <= 8.0
    again = interval_estimates({"x": x}, reps=2000)["x"]
    assert float(again[1][0]) == float(lo[0]) and float(again[2][0]) == float(hi[0])   # seeded: the same
    beside = interval_estimates({"y": -x, "x": x}, reps=2000)["x"]             # each key its own seed: its
    assert float(beside[1][0]) == float(lo[0]) and float(beside[2][0]) == float(hi[0])   # interval, whatever is beside
    renamed = interval_estimates({"z": x}, reps=2000)["z"]                        # a draw of another name
    assert (float(renamed[1][0]), float(renamed[2][0])) != (float(lo[0]), float(hi[0]))
    curve = interval_estimates({"s": scores}, reps=500)["s"]
    assert curve[0].shape == curve[1].shape == (7,) and np.all(curve[1] <= curve[0]) and np.all(curve[0] <= curve[2])


def test_a_cell_reports_its_operators_expansions_too():
    """The methods of a cell are those its runs scored: an operator's expansions (favor+k400,
    favor+kauto) get rows beside it, over the runs that scored them."""
    runs = [{"methods": {"favor": {"test_mse": [2.0 + s]}, "favor+k400": {"test_mse": [0.5 + s]},
                         **({"favor+kauto": {"test_mse": [0.25]}} if s else {})}} for s in range(4)]
    cell = Cell("c", {"family": "pendulum-angle"}, 4, [], [{"methods": ["favor"]}] * 4, runs)
    got = {r.method: (r.seeds, r.values["test_mse"][0]) for r in table("evaluate", [cell], reps=100)}
    assert got == {"favor": (4, 3.5), "favor+k400": (4, 2.0), "favor+kauto": (3, 0.25)}


def test_report_of_an_optimize_sweep_draws_the_opi_figure(tmp_path):
    grid = parse_spec({"task": "optimize", "seeds": 2, "fixed": OPT_TINY}, out=tmp_path)
    for run in grid.runs:                      # the sweep's task, here in-process
        assert run_one("optimize", run.config.to_dict(), str(run.path)) is False
    (tmp_path / "sweep.json").write_text(json.dumps(grid.manifest()))
    written = report(tmp_path, reps=300)
    assert set(written) == {"report.md", "report.csv", "opi.png"}
    got = {(r["method"], r["metric"]): r for r in csv.DictReader(written["report.csv"].open())}
    assert set(got) == {(m, k) for m in ("maxout", "vanilla") for k in ("return", "test_return")}
    res = [json.loads((r.path / "results.json").read_text())["methods"]["maxout"] for r in grid.runs]
    assert float(got[("maxout", "return")]["iqm"]) == pytest.approx(np.mean([r["return"][0] for r in res]))
    tests = [np.mean([v[0] for v in r["test_returns"].values()]) for r in res]
    assert float(got[("maxout", "test_return")]["iqm"]) == pytest.approx(np.mean(tests))


def test_sweeps_of_several_specs_into_one_folder_are_reported_together(tmp_path):
    """sweep.json keeps the runs of every sweep into the folder (the spec, the latest): a second
    spec into it adds its cells, a rerun of the first keeps the same runs, and the report sees both."""
    first = parse_spec({**SPEC, "axes": {"dataset": ["expert"]}}, out=tmp_path)
    second = parse_spec({**SPEC, "seeds": [0], "axes": {"dataset": ["replay"]}}, out=tmp_path)
    write_manifest(first)
    both = write_manifest(second)
    assert both["spec"] == second.spec
    assert [r["path"] for r in both["runs"]] == ["expert/seed-0", "expert/seed-1", "replay/seed-0"]
    assert write_manifest(first)["runs"] == both["runs"][2:] + both["runs"][:2]
    task, cells = read_sweep(tmp_path)
    assert task == "evaluate" and sorted((c.name, c.expected) for c in cells) == [("expert", 2), ("replay", 1)]


def test_a_sweep_of_another_task_into_the_folder_is_refused(tmp_path):
    write_manifest(parse_spec(SPEC, out=tmp_path))
    before = (tmp_path / "sweep.json").read_bytes()
    with pytest.raises(ValueError, match="holds the runs of an 'evaluate' sweep"):
        write_manifest(parse_spec({"task": "optimize", "seeds": 1, "fixed": OPT_TINY}, out=tmp_path))
    assert (tmp_path / "sweep.json").read_bytes() == before


def test_a_dry_run_and_the_status_need_no_ray(tmp_path):
    """spec.py expands a spec and reads its runs' state without Ray: `sweep --dry-run` (and
    results/status.py) work where Ray is not installed; running the sweep names what is missing."""
    spec = tmp_path / "s.toml"
    spec.write_text(f'task = "evaluate"\nout = "{tmp_path / "runs"}"\nseeds = 2\n[fixed]\nfamily = "pendulum-angle"\n')
    code = ("import sys; sys.modules['ray'] = None; from resolvent.cli import main; "
            f"main(['sweep', {str(spec)!r}] + sys.argv[1:])")
    dry = subprocess.run([sys.executable, "-c", code, "--dry-run"], capture_output=True, text=True)
    assert dry.returncode == 0 and dry.stdout.split() == ["new", str(tmp_path / "runs/run/seed-0"),
                                                          "new", str(tmp_path / "runs/run/seed-1")], dry.stderr
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 2 and "`resolvent sweep` needs Ray" in run.stderr and "resolvent[sweep]" in run.stderr
