"""The job list that drive_jobs.py ran on a lent H200 (2026-11-26, second session): the
HalfCheetah-Vel control seeds 3, 8 and 9 of opi-halfcheetah.toml, and the Pendulum-Angle runs of
ope-operators-pendulum.toml that no CPU was training (expert seed 9, replay and medium seeds 0-9),
each with the configuration its spec gives it.

    python results/ope-operators/gpu/make_jobs.py .gpu/jobs/jobs.json
"""
import json
import sys
from pathlib import Path

from resolvent.experiments.spec import load_spec


def jobs() -> list[dict]:
    out = []
    for r in load_spec("results/opi-halfcheetah.toml").runs:
        if r.seed in (3, 8, 9):
            out.append({"name": f"opi-{r.cell}-seed-{r.seed}", "task": "optimize", "group": "opi",
                        "config": json.loads(json.dumps(r.config.to_dict())), "path": f"opi/{r.cell}/seed-{r.seed}"})
    for r in load_spec("results/ope-operators-pendulum.toml").runs:
        if not r.cell.endswith("expert") or r.seed == 9:
            out.append({"name": f"ope-{r.cell}-seed-{r.seed}", "task": "evaluate", "group": "ope",
                        "config": json.loads(json.dumps(r.config.to_dict())),
                        "path": f"ope-operators/{r.cell}/seed-{r.seed}"})
    return out


if __name__ == "__main__":
    path = Path(sys.argv[1])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(jobs()))
    print(f"{path}: {len(jobs())} runs")
