"""Every hyper-parameter has one home: the command line's defaults are the dataclasses'."""
import dataclasses

import click

import pytest

from resolvent.cli import evaluate, optimize
from resolvent.experiments import EvaluateConfig, OptimizeConfig

OPTION_FIELD = {"episodes": "eval_episodes", "eval_samples": "eval_samples"}


@pytest.mark.parametrize("command, config", [(evaluate, EvaluateConfig), (optimize, OptimizeConfig)],
                         ids=["evaluate", "optimize"])
def test_command_defaults_are_the_config_defaults(command, config):
    defaults = {f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()
                for f in dataclasses.fields(config)}
    checked = 0
    ctx = click.Context(command)
    for param in command.params:
        name = OPTION_FIELD.get(param.name, param.name)
        got = param.get_default(ctx)
        if name not in defaults or got is None:   # None: "the preset's" / the dataset's
            continue
        want = defaults[name]
        if isinstance(want, tuple):
            got = tuple(x.strip() for x in str(got).split(","))
        option = "--" + param.name.replace("_", "-")
        assert got == want, f"{option} defaults to {got!r}, {config.__name__}.{name} to {want!r}"
        checked += 1
    assert checked >= 8
