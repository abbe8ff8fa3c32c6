"""One recursive from_dict / to_dict for every config dataclass."""
import json
from dataclasses import dataclass, field

import pytest

from resolvent.algorithms import FQEConfig
from resolvent.config import from_dict, to_dict
from resolvent.experiments import EvaluateConfig
from resolvent.model import Arch, Control
from resolvent.rewards import PriorConfig


@dataclass(frozen=True)
class Inner:
    scales: tuple[float, ...] = (1.0,)


@dataclass(frozen=True)
class Outer:
    name: str = "x"
    grid: tuple[tuple[float, ...], ...] = ()
    pair: tuple[int, str] = (0, "a")
    inner: Inner = field(default_factory=Inner)
    maybe: Inner | None = None


def json_round_trip(cfg):
    return json.loads(json.dumps(to_dict(cfg)))


def test_nested_configs_and_tuples_come_back_from_json():
    cfg = Outer("y", ((1.0, 2.0), (3.0, 4.0)), (5, "b"), Inner((0.5, 2.0)), Inner((7.0,)))
    d = json_round_trip(cfg)
    assert d["grid"] == [[1.0, 2.0], [3.0, 4.0]] and d["maybe"] == {"scales": [7.0]}
    back = from_dict(Outer, d)
    assert back == cfg and isinstance(back.grid[0], tuple) and isinstance(back.maybe, Inner)
    assert from_dict(Outer, {"maybe": None}).maybe is None
    assert from_dict(Outer, {}) == Outer()


@pytest.mark.parametrize("cfg", [
    FQEConfig(gamma=0.9, prior=PriorConfig(kind="generic", lengthscales=(0.25, 4.0))),
    FQEConfig(),
    EvaluateConfig(methods=("attention", "fqe"), hidden=(32, 16)),
    Arch(hidden=(16,), features=8, vae_hidden=(7, 7)),
    Control("dqn", (-2.0,), (2.0,), grid=((-2.0,), (0.0,), (2.0,))),
])
def test_the_package_configs_round_trip(cfg):
    d = json_round_trip(cfg)
    d.pop("task", None)
    assert from_dict(type(cfg), d) == cfg


def test_unknown_keys_are_named_with_the_config_even_nested():
    with pytest.raises(ValueError, match=r"unknown config keys \['depth', 'width'\] in Outer; known: \[.*'grid'"):
        from_dict(Outer, {"width": 1, "depth": 2})
    with pytest.raises(ValueError, match=r"unknown inner config keys \['size'\] in Inner"):
        from_dict(Outer, {"inner": {"size": 3}})
    bad = to_dict(EvaluateConfig())
    bad["fqe"]["prior"]["width"] = 2
    with pytest.raises(ValueError, match=r"unknown fqe.prior config keys \['width'\] in PriorConfig"):
        EvaluateConfig.from_dict(bad)
    with pytest.raises(ValueError, match="Outer must be a mapping"):
        from_dict(Outer, [1, 2])


def test_a_value_the_config_refuses_is_its_own_error():
    with pytest.raises(ValueError, match="unknown reward prior 'gaussian'"):
        from_dict(FQEConfig, {"prior": {"kind": "gaussian"}})
