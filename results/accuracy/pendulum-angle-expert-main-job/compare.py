"""The largest relative difference of every metric between two runs' results.json (timings aside):
the README's main job rerun against the committed run.

    python results/accuracy/pendulum-angle-expert-main-job/compare.py \
        results/accuracy/pendulum-angle-expert-main-job/rerun-aec00da-results.json \
        results/accuracy/pendulum-angle-expert-main-job/results.json
"""
from __future__ import annotations

import json
import sys

TIMINGS = ("seconds", "time")   # in a key: a timing (and a key ending in _ms; test_mse is not one)


def walk(a, b, path: tuple, worst: dict) -> None:
    """worst[metric] = (largest |a - b| / |b|, where), over the values both runs hold."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in a.keys() & b.keys():
            walk(a[k], b[k], path + (k,), worst)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for u, v in zip(a, b):
            walk(u, v, path, worst)
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and path:
        if any(t in path[-1] for t in TIMINGS) or path[-1].endswith("_ms"):
            return
        d = abs(a - b) / max(abs(b), 1e-12)
        if d > worst.get(path[-1], (-1.0,))[0]:
            worst[path[-1]] = (d, "/".join(map(str, path[:3])))


def main() -> None:
    new, old = (json.load(open(p)) for p in sys.argv[1:3])
    worst: dict = {}
    walk(new, old, (), worst)
    for metric, (d, where) in sorted(worst.items(), key=lambda t: -t[1][0]):
        print(f"{metric:30s} {d:.2e}  {where}")


if __name__ == "__main__":
    main()
