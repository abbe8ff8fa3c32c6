"""The job lists that drive_jobs.py ran on lent GPU machines, each run with the configuration its
spec gives it:

- ``h200``: the second session of 2026-11-26 on an H200: the HalfCheetah-Vel control seeds 3, 8
  and 9 of opi-halfcheetah.toml, and the Pendulum-Angle runs of ope-operators-pendulum.toml that no
  CPU was training (expert seed 9, replay and medium seeds 0-9).
- ``halfcheetah``: the third session, on an H100: the HalfCheetah-Vel runs of ope-operators.toml
  that no CPU had finished (replay seeds 4-9, expert and medium seeds 0-9).
- ``ant``: the fourth session, on an H100: the Ant-Dir runs of ope-operators.toml not yet
  committed, expert and medium first, then replay from seed 9 down (this CPU runs replay from seed 4
  up).
- ``rest``: every run of ope-operators.toml whose small files are not yet committed under
  results/ope-operators (for the next machine lent).

    python results/ope-operators/gpu/make_jobs.py .gpu/jobs/jobs.json halfcheetah
"""
import json
import sys
from pathlib import Path

from resolvent.experiments.spec import load_spec


def select(spec: str, task: str, group: str, keep) -> list[dict]:
    """The runs of ``spec`` for which ``keep(cell, seed)`` holds, as drive_jobs.py's jobs."""
    folder = Path(load_spec(spec).out).name
    return [{"name": f"{group}-{r.cell}-seed-{r.seed}", "task": task, "group": group,
             "config": json.loads(json.dumps(r.config.to_dict())), "path": f"{folder}/{r.cell}/seed-{r.seed}"}
            for r in load_spec(spec).runs if keep(r.cell, r.seed)]


def uncommitted(cell: str, seed: int) -> bool:
    """Whether the run's small files are not yet committed under results/ope-operators."""
    return not Path(f"results/ope-operators/{cell}/seed-{seed}/results.json").is_file()


def replay_last_from_seed_9(job: dict) -> tuple:
    """The ``ant`` order: the other datasets first (in the spec's order), then replay from seed 9 down."""
    replay = job["config"]["dataset"] == "replay"
    return replay, -job["config"]["seed"] if replay else 0


LISTS = {
    "h200": lambda: (select("results/opi-halfcheetah.toml", "optimize", "opi", lambda c, s: s in (3, 8, 9))
                     + select("results/ope-operators-pendulum.toml", "evaluate", "ope",
                              lambda c, s: not c.endswith("expert") or s == 9)),
    "halfcheetah": lambda: select("results/ope-operators.toml", "evaluate", "ope",
                                  lambda c, s: c.startswith("halfcheetah-vel")
                                  and not (c.endswith("replay") and s < 4)),
    "ant": lambda: sorted(select("results/ope-operators.toml", "evaluate", "ope",
                                 lambda c, s: c.startswith("ant-dir") and uncommitted(c, s)),
                          key=replay_last_from_seed_9),
    "rest": lambda: select("results/ope-operators.toml", "evaluate", "ope", uncommitted),
}


if __name__ == "__main__":
    path, which = Path(sys.argv[1]), sys.argv[2]
    jobs = LISTS[which]()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(jobs))
    print(f"{path}: {len(jobs)} runs")
