"""The API reference (docs/build_api.py, pdoc) builds clean from the docstrings."""
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "build_api.py"


@pytest.fixture(scope="module")
def build_api():
    spec = importlib.util.spec_from_file_location("build_api", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_reference_builds_without_warnings_or_dead_references(build_api, tmp_path):
    assert build_api.build(tmp_path) == []
    assert build_api.dead_references() == []
    pages = {p.relative_to(tmp_path).as_posix() for p in tmp_path.glob("**/*.html")}
    for name in build_api.package_modules():      # every module has its page
        assert name.replace(".", "/") + ".html" in pages
    assert {"resolvent/config.html", "resolvent/algorithms/bcq.html", "resolvent/fit.html"} <= pages
    assert "TDConfig" in (tmp_path / "resolvent" / "config.html").read_text()


def test_a_dead_reference_is_found(build_api):
    assert build_api.resolves("resolvent.config.TDConfig") and build_api.resolves("resolvent.envs")
    assert not build_api.resolves("resolvent.config.TDConfig.nothing")
    assert not build_api.resolves("resolvent.nowhere")
