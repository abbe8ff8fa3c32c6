"""One recursive from_dict / to_dict for every config dataclass."""
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from resolvent.algorithms import FQEConfig, bcq, dqn
from resolvent.algorithms.bank import AUTO_POINTS, BankConfig
from resolvent.algorithms.onestep import OneStepConfig
from resolvent.config import TDConfig, from_dict, narrow, to_dict
from resolvent.experiments import EvaluateConfig, OptimizeConfig
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


def test_a_noisy_rollout_beside_a_bank_that_stops_it_is_refused_at_once():
    """onestep.noise's copies cannot each stop where the bank reaches: refused where a bank with reach
    is made (bank.points > 0, or the default's under auto), allowed without one or without reach."""
    noisy = OneStepConfig(noise=0.3)
    for bank, auto in ((BankConfig(points=64), False), (BankConfig(points=AUTO_POINTS), True)):
        with pytest.raises(ValueError, match="onestep.noise: a noisy rollout's copies cannot each stop"):
            EvaluateConfig(onestep=noisy, bank=bank, auto=auto)
    EvaluateConfig(onestep=noisy)                                          # the default bank: none without auto
    EvaluateConfig(onestep=noisy, bank=BankConfig(points=AUTO_POINTS, reach=0.0), auto=True)


def test_td_hyper_parameters_are_declared_once_and_checked():
    assert all(issubclass(c, TDConfig) for c in (FQEConfig, dqn.DQNConfig, bcq.BCQConfig, OptimizeConfig))
    cfg = OptimizeConfig(gamma=0.9, lr=3e-4, tau=0.01, batch_size=64, phi=0.1, eval_samples=7, double=True)
    b, d = narrow(bcq.BCQConfig, cfg), narrow(dqn.DQNConfig, cfg)
    assert (b.gamma, b.lr, b.tau, b.batch_size, b.phi, b.eval_samples) == (0.9, 3e-4, 0.01, 64, 0.1, 7)
    assert (d.gamma, d.lr, d.tau, d.batch_size, d.double) == (0.9, 3e-4, 0.01, 64, True)
    assert d.prior is None                                   # not an optimize field: its own default
    for bad, match in [(dict(gamma=1.0), "gamma must be in"), (dict(tau=0.0), "tau must be in"),
                       (dict(batch_size=0), "batch_size must be >= 1"), (dict(lr=-1.0), "lr must be > 0")]:
        for cls in (FQEConfig, bcq.BCQConfig, OptimizeConfig):
            with pytest.raises(ValueError, match=match):
                cls(**bad)


RESULTS = Path(__file__).resolve().parents[1] / "results"
RUN_CONFIGS = sorted(RESULTS.glob("**/config.json"))


def test_the_committed_runs_are_found():
    assert len(RUN_CONFIGS) >= 10


@pytest.mark.parametrize("path", RUN_CONFIGS, ids=lambda p: str(p.parent.relative_to(RESULTS)))
def test_every_committed_run_config_loads_with_its_values(path):
    """Old run folders still load: every results/**/config.json, written by any earlier version,
    through its config class, each value as written (flat FQE keys of old runs into ``fqe``)."""
    d = json.loads(path.read_text())
    cls = OptimizeConfig if d.get("task") == "optimize" else EvaluateConfig
    cfg = cls.from_dict(d)
    now = json_round_trip(cfg)
    for k, v in d.items():
        if k != "task":
            assert written(now[k] if k in now else now["fqe"][k], v), k
    assert cls.from_dict(cfg.to_dict()) == cfg


def written(now, then) -> bool:
    """``now`` holds every value of ``then`` as written; a nested config may have gained fields
    since (they take their defaults)."""
    if isinstance(then, dict) and isinstance(now, dict):
        return all(k in now and written(now[k], v) for k, v in then.items())
    return now == then
