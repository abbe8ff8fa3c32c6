"""JAX's persistent compilation cache (``paths.compile_cache``), each case in a fresh process
(JAX decides once per process whether it caches)."""
import os
import subprocess
import sys

PROGRAM = """
import jax, jax.numpy as jnp
from resolvent.paths import compile_cache
hits = []
jax.monitoring.register_event_listener(lambda event, **kw: hits.append(event.endswith("/cache_hits")))
print(compile_cache())
print(float(jax.jit(lambda x: (x * 2 + 1).sum())(jnp.arange(3.0))))
print("read" if any(hits) else "compiled")
"""


def run(tmp_path, **env) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    environ |= {"RESOLVENT_HOME": str(tmp_path / "home"), **env}
    return subprocess.run([sys.executable, "-c", PROGRAM], env=environ, capture_output=True, text=True,
                          check=True).stdout.split()


def kept(folder) -> set:
    return {p.name for p in folder.glob("*-cache")} if folder.is_dir() else set()


def test_a_fresh_process_keeps_its_programs_under_resolvent_home_and_the_next_reads_them(tmp_path):
    assert run(tmp_path) == [str(tmp_path / "home" / "jax"), "9.0", "compiled"]
    programs = kept(tmp_path / "home" / "jax")
    assert programs                                   # the jitted sum, however short its compilation
    assert run(tmp_path) == [str(tmp_path / "home" / "jax"), "9.0", "read"]
    assert kept(tmp_path / "home" / "jax") == programs


def test_the_cache_is_off_on_request_and_the_users_own_jax_cache_is_left_alone(tmp_path):
    assert run(tmp_path, RESOLVENT_COMPILE_CACHE="off") == ["None", "9.0", "compiled"]
    assert not (tmp_path / "home" / "jax").exists()
    own = tmp_path / "own"
    assert run(tmp_path, JAX_COMPILATION_CACHE_DIR=str(own)) == [str(own), "9.0", "compiled"]
    assert not kept(tmp_path / "home" / "jax")
