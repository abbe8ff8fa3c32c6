"""What JAX's persistent compilation cache (``paths.compile_cache``) saves a fresh process: the
run's saved answer loaded, its first test reward's truth prepared, and its first answer at 1e4 of
the dataset's state-actions, then a second answer at other new points, in seconds; each in a
fresh process, one after the other: the cache off, then on with an empty folder (it fills), then
on again (it reads).

    python results/answer-times/compile_cache.py RUN [--answer fb+k400] [--points 10000]

The processes get a copy of ``$RESOLVENT_HOME`` (default ``~/.cache/resolvent``) without its
compiled programs, so the real cache is neither read nor changed. One line of JSON per process.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import dataclasses, json, sys, time
t0 = time.perf_counter()
import numpy as np
import resolvent
from resolvent.experiments import EvaluateConfig, RunDir, prepare
run, answer, points = sys.argv[1], sys.argv[2], int(sys.argv[3])
model = resolvent.load(run, answer)
cfg = EvaluateConfig.from_dict(RunDir(run).read_config())
p = prepare(dataclasses.replace(cfg, seeds=1, n_test_rewards=1, methods=("fqe",), eval_points=("reset",),
                                trust="off"))
idx = np.random.default_rng(0).choice(len(p.x), min(points, len(p.x)), replace=False)
obs, act = p.features["obs"][idx], p.features["action"][idx]
name, reward = p.source.rewards["test"][0]
t1 = time.perf_counter()
model.q_values(reward, obs, act)
t2 = time.perf_counter()
model.q_values(reward, obs + 1e-5, act)
t3 = time.perf_counter()
print(json.dumps({"load_and_prepare_s": round(t1 - t0, 2), "first_answer_s": round(t2 - t1, 2),
                  "second_answer_s": round(t3 - t2, 2)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--answer", default="fb+k400")
    ap.add_argument("--points", type=int, default=10_000)
    args = ap.parse_args()
    home = Path(os.environ.get("RESOLVENT_HOME", Path.home() / ".cache" / "resolvent"))
    with tempfile.TemporaryDirectory(prefix="compile-cache-") as tmp:
        copy = Path(tmp) / "home"
        shutil.copytree(home, copy, ignore=lambda d, names: ["jax"] if Path(d) == home else [])
        for cache in ("off", "on", "on"):
            env = {**os.environ, "RESOLVENT_HOME": str(copy), "RESOLVENT_COMPILE_CACHE": cache}
            env.pop("JAX_COMPILATION_CACHE_DIR", None)
            out = subprocess.run([sys.executable, "-c", CHILD, args.run, args.answer, str(args.points)], env=env,
                                 capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
            files = len(list((copy / "jax").glob("*-cache"))) if (copy / "jax").is_dir() else 0
            print(json.dumps({"cache": cache, "answer": args.answer, "points": args.points, **json.loads(out),
                              "programs_kept": files}), flush=True)


if __name__ == "__main__":
    main()
