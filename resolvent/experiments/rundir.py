"""Run directories: config.json, metrics.jsonl, checkpoints/, models/, results.json, plots."""
from __future__ import annotations

import json
import os
import socket
import sys
from contextlib import contextmanager
from pathlib import Path

import flax.serialization
import jax
import numpy as np

from resolvent.experiments.events import EventLog
from resolvent.io import DiskFullError, atomic_write_bytes, atomic_write_json
from resolvent.model import CheckpointError, read_run_json


class RunInUseError(RuntimeError):
    """Another live process is writing to the run directory."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _started_after(pid: int, when: float) -> bool:
    """Whether process ``pid`` started after time ``when`` (so it is not the one that wrote a lock
    then: its PID was reused); False where /proc cannot tell."""
    try:
        ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime"))
        return boot + ticks / os.sysconf("SC_CLK_TCK") > when + 1.0
    except (OSError, ValueError, IndexError, StopIteration):
        return False


def trained(methods: dict, method: str, steps: int) -> bool:
    """Whether results.json's ``methods`` holds ``method`` trained to ``steps``."""
    return methods.get(method, {}).get("steps", 0) >= steps


def finished(config: dict, results: dict) -> bool:
    """Whether a run (its config.json, its results.json) is finished: every method of the
    configuration trained to its steps, and every entry that needs them all written (an operator's
    expansions, auto's pick), which the runner's last write of results.json marks ``complete``
    (a results.json from before that mark has no ``complete``: its methods decide)."""
    methods = results.get("methods", {})
    return (all(trained(methods, m, config["steps"]) for m in config["methods"])
            and results.get("complete", True) is True)


class RunDir:
    """One experiment's directory, written so that a killed run loses at most one interval."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.events = EventLog(self.path / "tb")   # TensorBoard's copy of the metric rows

    @property
    def config_path(self) -> Path:
        return self.path / "config.json"

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.jsonl"

    def checkpoint_path(self, method: str) -> Path:
        return self.path / "checkpoints" / f"{method}.ckpt"

    def write_json(self, name: str, obj) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.path / name, obj)

    @property
    def lock_path(self) -> Path:
        return self.path / "run.lock"

    @contextmanager
    def writer(self):
        """Hold the directory's one-writer lock: a second writer (a fresh run or ``--resume``)
        stops at once naming the process that holds it; a lock left by a killed process is
        taken over. The directory is created if needed and removed again if it stays empty."""
        existed = self.path.exists()
        self.path.mkdir(parents=True, exist_ok=True)
        me = f"{os.getpid()} {socket.gethostname()} {' '.join(sys.argv)[:200]}"
        while True:
            try:
                fd = os.open(self.lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                try:
                    pid, host, *cmd = self.lock_path.read_text().split(" ", 2) + [""]
                    holder = int(pid)
                except (OSError, ValueError):
                    holder, host, cmd = -1, "", [""]
                try:
                    written = self.lock_path.stat().st_mtime
                except OSError:
                    written = float("inf")
                if holder > 0 and host == socket.gethostname() and _alive(holder) \
                        and not _started_after(holder, written):
                    raise RunInUseError(f"{self.path} is in use by process {holder} "
                                        f"({cmd[0].strip() or 'resolvent'}); wait for it to finish "
                                        f"or stop it, then --resume (if process {holder} is not that run, "
                                        f"whose process was killed, delete {self.lock_path})") from None
                self.lock_path.unlink(missing_ok=True)   # left by a process that is gone
                continue
            with os.fdopen(fd, "w") as f:
                f.write(me)
            break
        try:
            yield self
        finally:
            self.events.close()
            self.lock_path.unlink(missing_ok=True)
            if not existed and not any(self.path.iterdir()):
                self.path.rmdir()

    def start(self, cfg, config_cls, resume: bool):
        """The configuration to run: the run's own when resuming (it wins over ``cfg``), else
        ``cfg``, refusing to overwrite a directory that already holds a run."""
        if resume:
            d = self.read_config()
            task = cfg.to_dict()["task"]
            if isinstance(d, dict) and d.get("task", task) != task:
                raise ValueError(f"{self.path} is {'an' if d['task'][0] in 'aeiou' else 'a'} {d['task']!r} run, "
                                 f"not {task}: continue it with `resolvent {d['task']} --out {self.path} --resume`")
            try:
                return config_cls.from_dict(d)
            except (TypeError, ValueError, AttributeError) as e:
                raise CheckpointError(f"{self.config_path} is damaged: {type(e).__name__}: {e}") from None
        if self.config_path.exists():
            raise FileExistsError(f"{self.path} already holds a run; pass --resume to continue it "
                                  f"or choose another --out")
        return cfg

    def previous_methods(self) -> dict:
        """The ``methods`` entry of an earlier results.json, or {}."""
        return self.read_results().get("methods", {})

    def read_results(self) -> dict:
        """results.json, {} if there is none yet; a damaged one is named (``read_run_json``)."""
        res = read_run_json(self.path / "results.json")
        if not isinstance(res.get("methods", {}), dict):
            raise CheckpointError(f"{self.path / 'results.json'} is not a resolvent results file (its methods are "
                                  f"not an object); move it away to rebuild it from the run (--resume)")
        return res

    def read_config(self) -> dict:
        if not self.config_path.is_file():
            raise FileNotFoundError(f"{self.path} has no config.json: it is not a resolvent run directory")
        return read_run_json(self.config_path)

    def append_metrics(self, rows: list[dict]) -> None:
        """Append rows (and write them as TensorBoard events, ``tb/``); a failed write (a full
        disk) is cut back off, leaving the file as it was."""
        size = self.metrics_path.stat().st_size if self.metrics_path.is_file() else 0
        try:
            with self.metrics_path.open("a") as f:
                f.write("".join(json.dumps(row) + "\n" for row in rows))
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            with self.metrics_path.open("r+") as f:
                f.truncate(size)
            raise DiskFullError(e.errno, f"cannot append to {self.metrics_path} ({e.strerror}); "
                                         f"nothing saved was changed") from None
        self.events.write(rows)

    def read_metrics(self) -> list[dict]:
        if not self.metrics_path.is_file():
            return []
        rows = []
        for i, line in enumerate(self.metrics_path.read_text().splitlines(), 1):
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a kill
            if not isinstance(row, dict) or not isinstance(row.get("step"), int) or "method" not in row:
                raise CheckpointError(f"{self.metrics_path} line {i} is not a metrics row ({line[:60]!r}); "
                                      f"remove that line to continue")
            rows.append(row)
        return rows

    def keep_metrics(self, keep) -> None:
        """Rewrite metrics.jsonl with only the rows for which ``keep(row)`` holds."""
        all_rows = self.read_metrics()
        rows = [r for r in all_rows if keep(r)]
        cut = self.metrics_path.is_file() and not self.metrics_path.read_bytes().endswith(b"\n")
        if len(rows) != len(all_rows) or cut:   # dropped rows, or a line cut by a kill
            atomic_write_bytes(self.metrics_path, "".join(json.dumps(r) + "\n" for r in rows).encode())

    def save_checkpoint(self, method: str, tree: dict) -> None:
        path = self.checkpoint_path(method)
        path.parent.mkdir(parents=True, exist_ok=True)
        state = flax.serialization.to_state_dict(jax.tree_util.tree_map(np.asarray, tree))
        atomic_write_bytes(path, flax.serialization.msgpack_serialize(state))

    def load_checkpoint(self, method: str, template: dict) -> dict | None:
        path = self.checkpoint_path(method)
        if not path.is_file():
            return None
        try:
            raw = flax.serialization.msgpack_restore(path.read_bytes())
            return flax.serialization.from_state_dict(template, raw)
        except Exception as e:  # noqa: BLE001 - any decoding failure means corruption
            raise CheckpointError(f"checkpoint {path} is corrupt ({type(e).__name__}: {e}); "
                                  f"move it away to restart {method} from scratch") from None
