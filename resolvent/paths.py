"""Where resolvent keeps derived files (ground truth caches); datasets live in Minari's root."""
import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """``$RESOLVENT_HOME`` (default ``~/.cache/resolvent``) / parts, created."""
    root = Path(os.environ.get("RESOLVENT_HOME", Path.home() / ".cache" / "resolvent"))
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
