"""Every script in benchmarks/ runs, at smoke sizes (``--tiny``), and prints its JSON lines.

The numbers are not checked (timings are never tested): that each script still runs against the
package as it is now, and says what it measures in the fields its docstring names.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"

# script -> (its arguments beside --tiny, fields every JSON line of a result holds)
RUNS = {
    "throughput.py": (["--methods", "attention"], {"method", "steps_per_s"}),
    "control_throughput.py": ([], {"steps_per_s", "seeds"}),
    "zero_shot.py": (["--methods", "attention,sf"], {"method", "answer_ms", "encode_ms", "forward_ms", "ratio"}),
    "ablation.py": (['{"m": 8}'], {"variant", "method", "test_mse", "test_r2"}),
}


def test_every_benchmark_is_smoke_run():
    assert {p.name for p in BENCHMARKS.glob("*.py")} == set(RUNS)


@pytest.mark.parametrize("script", sorted(RUNS))
def test_benchmark_runs_and_prints_json_lines(script, tmp_path):
    args, fields = RUNS[script]
    if script == "ablation.py":
        args = [*args, "--out", str(tmp_path / "ablation")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(BENCHMARKS.parent), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, str(BENCHMARKS / script), "--tiny", *args], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    results = [r for r in rows if fields <= set(r)]
    assert results, f"no JSON line with {sorted(fields)} in:\n{out.stdout[-2000:]}"
    if script == "zero_shot.py":
        assert [r["method"] for r in results] == ["attention", "sf"]
        for r in results:
            assert 0 < r["forward_ms"] and 0 < r["encode_ms"] and 0 < r["answer_ms"] and r["ratio"] > 0
    if script == "ablation.py":
        assert [r["variant"] for r in results] == [{"m": 8}]
    if script == "control_throughput.py":
        assert [r.get("network", r.get("critic")) for r in results] == ["attention", "maxout", "maxout"]
