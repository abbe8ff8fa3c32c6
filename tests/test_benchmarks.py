"""Every script in benchmarks/ runs, at smoke sizes (``--tiny``), and prints its JSON lines
(results/trust/check.py, which reads finished runs, on a committed one: its markdown table).

The numbers are not checked (timings are never tested): that each script still runs against the
package as it is now, and says what it measures in the fields its docstring names.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
TRUST_RUN = BENCHMARKS.parent / "results" / "trust" / "pendulum-angle-expert"

# script -> (its arguments, fields every JSON line of a result holds)
RUNS = {
    "throughput.py": (["--tiny", "--methods", "attention"], {"method", "steps_per_s"}),
    "control_throughput.py": (["--tiny"], {"steps_per_s", "seeds"}),
    "zero_shot.py": (["--tiny", "--methods", "favor,sf", "--bank", "64", "--agree", "0,0.03", "--cycle", "0,1e-4"],
                     {"method", "answer_ms", "encode_ms", "forward_ms", "ratio"}),
    "ablation.py": (["--tiny", '{"m": 8}'], {"variant", "method", "test_mse", "test_r2"}),
    "expansion.py": (["--tiny", "--onestep-steps", "30"],
                     {"method", "horizon", "set", "points", "r2", "rel_rmse", "mse"}),
}


def run(script: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(BENCHMARKS.parent), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, str(BENCHMARKS / script), *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=900)


def test_every_benchmark_is_smoke_run():
    assert {p.name for p in BENCHMARKS.glob("*.py")} == set(RUNS)


def test_trust_check_tables_a_committed_run(tmp_path):
    out = run(str(TRUST_RUN.parent / "check.py"), [str(TRUST_RUN)], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "| method |" in out.stdout and "Spearman" in out.stdout


@pytest.mark.parametrize("script", sorted(RUNS))
def test_benchmark_runs_and_prints_json_lines(script, tmp_path):
    args, fields = RUNS[script]
    if script == "ablation.py":
        args = [*args, "--out", str(tmp_path / "ablation")]
    if script == "zero_shot.py":   # FQE's curve logged as it trains
        args = [*args, "--fqe-log", str(tmp_path / "fqe.jsonl")]
    if script == "expansion.py":   # the refit kept in a file, every answer written
        args = [*args, "--onestep-file", str(tmp_path / "model.npz"), "--predictions", str(tmp_path / "answers.npz")]
    out = run(script, args, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    results = [r for r in rows if fields <= set(r)]
    assert results, f"no JSON line with {sorted(fields)} in:\n{out.stdout[-2000:]}"
    if script == "zero_shot.py":
        # TINY's horizons (2,), and favor's distilled G_2, alone and as G_2's tail, and its bank (K = 3)
        # as G_2's tail with each agree (SF is not of the policy encoding) (and each operator's horizon
        # chosen per reward: an ensemble, two operators); every expansion with the rollout's cycles off and on;
        # the mean of the two operators' answers at the longest horizon and by kauto
        assert [r["method"] for r in results] == ["favor", "favor+d2", "favor+k2", "favor+d2+k2", "favor+k2",
                                                  "favor+d2+k2", "favor+b3+k2", "favor+b3+k2", "favor+kauto", "sf",
                                                  "sf+k2", "sf+k2", "sf+kauto", "favor+k2~sf+k2",
                                                  "favor+kauto~sf+kauto"]
        assert [r["agree"] for r in results if "+b" in r["method"]] == [0.0, 0.03]
        assert [r["cycle"] for r in results if r["method"].endswith("+k2") and "+b" not in r["method"]
                and "~" not in r["method"]] == [0.0, 0.0, 1e-4, 1e-4, 0.0, 1e-4]
        assert [r["members"] for r in results if "~" in r["method"]] == [2, 2]
        for r in results:
            assert 0 < r["forward_ms"] and 0 < r["encode_ms"] and 0 < r["answer_ms"] and r["ratio"] > 0
        assert len({r["reward"] for r in results}) == 1                    # one new reward, named on every line
        for r in (r for r in results if "+k2" in r["method"]):   # an expansion's: the whole answer at new points
            assert r["rollout_ms"] > 0 and r["rolled_ms"] > 0     # timed whole, beside its rollout and a reward's
            assert r["rolled_ratio"] > 0 and r["ratio"] > 0       # answer at points rolled out
            assert "+b" in r["method"] or r["rolled_written_ms"] > 0   # and the reward as a plain callable
        bank = next(r for r in results if "+b3" in r["method"])
        assert bank["bank_ms"] > 0 and bank["bank_states"] > 0 and bank["near_ms"] > 0
        for r in (r for r in results if "+kauto" in r["method"]):   # the choice's rollout at new points
            assert r["chosen"] in (0, 2) and 0 < r["rolled_ms"]
        log = [json.loads(line) for line in (tmp_path / "fqe.jsonl").read_text().splitlines()]
        assert [a["method"] for a in log[0]["answers"]] == [r["method"] for r in results]   # the answers, then
        assert [c["fqe_steps"] for c in log[1:]] == [10 * (i + 1) for i in range(len(log) - 1)] and len(log) > 1
        assert log[-1]["fqe_seconds"] == max(r["fqe_seconds"] for r in results)           # FQE's chunks as it went
    if script == "ablation.py":
        assert [r["variant"] for r in results] == [{"m": 8}]
    if script == "expansion.py":
        with np.load(tmp_path / "answers.npz") as z:
            assert {"favor|k2|probe|reset", "favor|kauto|probe|reset", "truth|probe|reset"} <= set(z.files)
            assert z["favor|k2|probe|reset"].shape == z["truth|probe|reset"].shape
        assert (tmp_path / "model.npz").is_file()
    if script == "control_throughput.py":
        assert [r.get("network", r.get("critic")) for r in results] == ["attention", "maxout", "maxout"]
