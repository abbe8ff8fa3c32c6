"""Run directories: config.json, metrics.jsonl, checkpoints/, models/, results.json, plots."""
from __future__ import annotations

import json
import os
from pathlib import Path

import flax.serialization
import jax
import numpy as np

from resolvent.model import CheckpointError


class RunDir:
    """One experiment's directory, written so that a killed run loses at most one interval."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

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
        tmp = self.path / (name + ".tmp")
        tmp.write_text(json.dumps(obj, indent=2) + "\n")
        os.replace(tmp, self.path / name)

    def start(self, cfg, config_cls, resume: bool):
        """The configuration to run: the run's own when resuming (it wins over ``cfg``), else
        ``cfg``, refusing to overwrite a directory that already holds a run."""
        if resume:
            return config_cls.from_dict(self.read_config())
        if self.config_path.exists():
            raise FileExistsError(f"{self.path} already holds a run; pass --resume to continue it "
                                  f"or choose another --out")
        return cfg

    def previous_methods(self) -> dict:
        """The ``methods`` entry of an earlier results.json, or {}."""
        path = self.path / "results.json"
        return json.loads(path.read_text()).get("methods", {}) if path.is_file() else {}

    def read_config(self) -> dict:
        if not self.config_path.is_file():
            raise FileNotFoundError(f"{self.path} has no config.json: nothing to resume")
        try:
            return json.loads(self.config_path.read_text())
        except json.JSONDecodeError as e:
            raise CheckpointError(f"{self.config_path} is corrupt: {e}") from None

    def append_metrics(self, rows: list[dict]) -> None:
        with self.metrics_path.open("a") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def read_metrics(self) -> list[dict]:
        if not self.metrics_path.is_file():
            return []
        rows = []
        for line in self.metrics_path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a kill
        return rows

    def keep_metrics(self, keep) -> None:
        """Rewrite metrics.jsonl with only the rows for which ``keep(row)`` holds."""
        rows = [r for r in self.read_metrics() if keep(r)]
        tmp = self.metrics_path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
        os.replace(tmp, self.metrics_path)

    def save_checkpoint(self, method: str, tree: dict) -> None:
        path = self.checkpoint_path(method)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        state = flax.serialization.to_state_dict(jax.tree_util.tree_map(np.asarray, tree))
        tmp.write_bytes(flax.serialization.msgpack_serialize(state))
        os.replace(tmp, path)

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
