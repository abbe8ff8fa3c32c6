"""TensorBoard event files beside ``metrics.jsonl``: ``tensorboard --logdir runs/`` shows every
run, method and seed of a grid.

Every metric row of a run also goes to ``RUN/tb/METHOD-seedK/`` (one event log per method and
network seed, so that TensorBoard overlays methods and seeds on one chart per metric): each
numeric entry of the row (loss, MSE and R^2 per reward set, returns, seconds; nested dicts as
``key/name``) is a scalar at the row's step. Written with TensorBoard's own event writer, which
needs neither TensorFlow nor torch. A resumed method marks its restart step in a new event file
(TensorBoard's ``SessionLog.START``, as ``purge_step`` does elsewhere): the events written after
the checkpoint by the killed process are hidden, as their rows are dropped from metrics.jsonl.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.summary.writer.event_file_writer import EventFileWriter

SKIP = ("method", "seed", "step")


def scalars(row: dict, prefix: str = "") -> list[tuple[str, float]]:
    """(tag, value) of every finite number of a metric row; nested dicts give ``key/name`` tags."""
    out = []
    for key, value in row.items():
        if not prefix and key in SKIP:
            continue
        if isinstance(value, dict):
            out += scalars(value, f"{prefix}{key}/")
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out.append((f"{prefix}{key}", float(value)))
    return out


def after_existing(folder: Path) -> None:
    """Wait, if need be, until the clock's second is past the newest event file's in ``folder``:
    TensorBoard reads a folder's files in name order, whose first key is the creation second and
    whose last is a per-process counter compared as text ("10" < "9"), so a file opened in the
    same second as an earlier one (a resume in the same process) could sort before it."""
    stamps = [int(p.name.split(".")[3]) for p in folder.glob("events.out.tfevents.*")
              if p.name.split(".")[3].isdigit()]
    while stamps and int(time.time()) <= max(stamps):
        time.sleep(0.05)


class EventLog:
    """The event writers of one run directory, opened on the first row of each method and seed."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._writers: dict[tuple[str, int], EventFileWriter] = {}
        self._restart: dict[str, int] = {}

    def restart(self, method: str, step: int) -> None:
        """``method`` resumes and logs again from ``step``: earlier events at steps >= ``step``
        are hidden (the writers opened from now on start with TensorBoard's restart marker)."""
        self._restart[method] = step

    def _writer(self, method: str, seed: int) -> EventFileWriter:
        key = (method, seed)
        if key not in self._writers:
            after_existing(self.root / f"{method}-seed{seed}")
            writer = EventFileWriter(str(self.root / f"{method}-seed{seed}"), flush_secs=30)
            if method in self._restart:
                writer.add_event(Event(wall_time=time.time(), step=self._restart[method],
                                       session_log=SessionLog(status=SessionLog.START)))
            self._writers[key] = writer
        return self._writers[key]

    def write(self, rows: list[dict]) -> None:
        """Each row's numbers as scalars at its step, flushed to disk."""
        touched = set()
        for row in rows:
            writer = self._writer(row["method"], int(row["seed"]))
            values = [Summary.Value(tag=tag, simple_value=v) for tag, v in scalars(row)]
            writer.add_event(Event(wall_time=time.time(), step=int(row["step"]), summary=Summary(value=values)))
            touched.add(writer)
        for writer in touched:
            writer.flush()

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
