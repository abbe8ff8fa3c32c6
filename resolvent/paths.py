"""Where resolvent keeps derived files (ground truth caches, compiled programs); datasets live in
Minari's root."""
import os
from pathlib import Path

import jax


def cache_dir(*parts: str) -> Path:
    """``$RESOLVENT_HOME`` (default ``~/.cache/resolvent``) / parts, created."""
    root = Path(os.environ.get("RESOLVENT_HOME", Path.home() / ".cache" / "resolvent"))
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


COMPILE_CACHE_BYTES = 2 << 30   # the compiled programs kept (least recently used evicted past it; 2 GiB)


def compile_cache() -> Path | None:
    """JAX's persistent compilation cache at ``$RESOLVENT_HOME/jax``: a fresh process reads the
    programs an earlier one compiled instead of compiling them again (Pendulum-Angle's first G_400
    answer at 1e4 new points in a fresh process: 4.5 + 7.1 s -> 2.2 + 4.9 s on a 2-core CPU,
    results/answer-times/compile-cache.txt; on a GPU each of a rollout's batch sizes cost 15-21 s
    to compile). Every program is kept, however short its compilation (they are many and small);
    the folder is bounded by ``COMPILE_CACHE_BYTES`` (with eviction JAX locks it, so processes
    side by side share it safely). Left alone where the user set JAX's own
    (``JAX_COMPILATION_CACHE_DIR``) or ``RESOLVENT_COMPILE_CACHE=off``; it applies where no
    program of this process compiled before it (JAX decides once). The folder, or None."""
    if os.environ.get("RESOLVENT_COMPILE_CACHE", "").lower() in ("off", "0", "false", "no"):
        return None
    if jax.config.jax_compilation_cache_dir is not None:
        return Path(jax.config.jax_compilation_cache_dir)
    path = cache_dir("jax")
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.config.update("jax_compilation_cache_max_size", COMPILE_CACHE_BYTES)
    return path
