"""Writing files so that a failure (a full disk, a kill) changes nothing already saved."""
from __future__ import annotations

import errno
import fcntl
import io
import json
import os
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np


class DiskFullError(OSError):
    """A write failed for lack of space; the file it was replacing is unchanged."""


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to a temporary file, then rename it over ``path``: a failure leaves
    ``path`` as it was and no temporary file behind. Each write has a temporary file of its own,
    so processes writing one file at once (runs filling one cache) each rename a whole file."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            raise DiskFullError(e.errno, f"no space left on the device to write {path}; "
                                         f"nothing saved was changed: free space and run again "
                                         f"(with --resume to continue)") from None
        raise


def atomic_write_json(path: str | Path, obj) -> None:
    """``obj`` as indented JSON (and a final newline) through ``atomic_write_bytes``."""
    atomic_write_bytes(path, (json.dumps(obj, indent=2) + "\n").encode())


def atomic_savez(path: str | Path, **arrays) -> None:
    """``numpy.savez`` through ``atomic_write_bytes``."""
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write_bytes(path, buf.getvalue())


@contextmanager
def file_lock(path: str | Path, what: str) -> Iterator[None]:
    """Hold the lock file ``path`` (created) while checking, making or reading ``what``: a second
    process (or thread) on the same lock waits for the first, saying so on stderr, and then finds
    what the first made, so runs side by side (a sweep's workers, two CLIs) make it once and
    neither removes the other's. The OS releases the lock of a killed process."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for another process making {what}", file=sys.stderr)
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
