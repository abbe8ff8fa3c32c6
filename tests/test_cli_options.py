"""The command line's options are generated from the config dataclasses (``resolvent.options``):
every field is an option, an option given reaches its field, and nothing given leaves the
config's (or the preset's) own values."""
import dataclasses
from dataclasses import dataclass, field

import click
import pytest
from click.testing import CliRunner

from resolvent.cli import EVALUATE_SKIP, evaluate, evaluate_config, optimize, optimize_config
from resolvent.experiments.evaluate_config import EvaluateConfig
from resolvent.experiments.optimize_config import OptimizeConfig
from resolvent.options import config_options, config_values, leaves, replace_paths


@dataclass(frozen=True)
class Inner:
    rate: float = 0.5                  # the inner rate
    kind: str = "a"                    # a or b


@dataclass(frozen=True)
class Small:
    steps: int = 10                    # training steps
    name: str | None = None            # a name, if any,
    #                                    continued on the line below
    sizes: tuple[int, ...] = (4, 4)    # layer sizes, ``steps`` apart
    fast: bool = False                 # go fast
    inner: Inner = field(default_factory=Inner)  # the nested part


def command_of(base, **kwargs) -> click.Command:
    """A command that builds ``base`` with the options it is given and returns it."""
    @click.command()
    @config_options(base, **kwargs)
    def command(**params):
        return replace_paths(base, config_values(base, params))
    return command


def build(command: click.Command, *args: str):
    return command.main(list(args), standalone_mode=False)


def test_every_field_is_an_option_with_its_type_default_and_comment():
    command = command_of(Small(), names={"inner.rate": ("--rate",)}, choices={"inner.kind": ("a", "b")})
    options = {p.name: p for p in command.params}
    assert set(options) == {"steps", "name", "sizes", "fast", "inner__rate", "inner__kind"}
    assert options["inner__rate"].opts == ["--rate", "--inner.rate"]
    assert options["name"].help == "a name, if any, continued on the line below"
    assert options["sizes"].help == "layer sizes, --steps apart"
    assert options["inner__kind"].type.choices == ("a", "b") and options["fast"].is_flag
    assert build(command) == Small()


def test_options_given_reach_their_fields():
    command = command_of(Small(), names={"inner.rate": ("--rate",)})
    got = build(command, "--steps", "7", "--name", "x", "--sizes", "1, 2,3", "--fast", "--rate", "0.25",
                "--inner.kind", "b")
    assert got == Small(steps=7, name="x", sizes=(1, 2, 3), fast=True, inner=Inner(rate=0.25, kind="b"))
    assert build(command, "--sizes", "") == Small(sizes=())


def test_a_field_added_to_a_config_appears_as_an_option():
    @dataclass(frozen=True)
    class Bigger(Small):
        extra: float = 3.0             # a new hyper-parameter

    command = command_of(Bigger())
    extra = next(p for p in command.params if p.name == "extra")
    assert extra.opts == ["--extra"] and extra.default == 3.0 and extra.help == "a new hyper-parameter"
    assert build(command, "--extra", "1.5") == Bigger(extra=1.5)


def test_bad_values_are_one_usage_error_naming_the_option():
    command = command_of(Small(), choices={"inner.kind": ("a", "b")})
    for args, msg in ((["--inner.kind", "c"], "--inner.kind"), (["--sizes", "1,x"], "comma-separated int values"),
                      (["--steps", "1.5"], "--steps")):
        res = CliRunner().invoke(command, args)
        assert res.exit_code == 2 and msg in res.output, res.output
    with pytest.raises(ValueError, match=r"no option fields \['nope'\]"):
        command_of(Small(), names={"nope": ("--nope",)})

    @dataclass(frozen=True)
    class Odd:
        table: dict = field(default_factory=dict)   # no command-line form

    with pytest.raises(TypeError, match="table"):
        command_of(Odd())


def test_fields_the_presets_differ_on_default_to_the_chosen_preset():
    presets = {"base": Small(), "fast": Small(fast=True, inner=Inner(rate=0.9))}

    @click.command()
    @click.option("--preset", type=click.Choice(list(presets)), default="base")
    @config_options(presets["base"], presets=presets)
    def command(preset, **params):
        return replace_paths(presets[preset], config_values(presets[preset], params))

    rate = next(p for p in command.params if p.name == "inner__rate")
    assert rate.default is None and "[default: the preset's: 0.5; --preset fast: 0.9]" in rate.help
    assert build(command, "--preset", "fast") == presets["fast"]
    assert build(command, "--preset", "fast", "--inner.rate", "0.1", "--steps", "3") == Small(3, fast=True,
                                                                                              inner=Inner(0.1))
    assert build(command, "--preset", "fast", "--no-fast") == Small(inner=Inner(0.9))
    assert build(command, "--fast") == Small(fast=True)


def test_evaluate_options_are_the_config_fields():
    names = {p.name for p in evaluate.params}
    fields = {leaf.path.replace(".", "__") for leaf in leaves(EvaluateConfig(), EVALUATE_SKIP)}
    assert fields <= names and len(fields) > 40
    assert all(p.help for p in evaluate.params if p.name in fields)     # every field has its comment
    for preset in ("default", "paper"):
        ctx = evaluate.make_context("evaluate", ["--preset", preset])
        assert evaluate_config("pendulum-angle", preset, ctx.params) == EvaluateConfig.preset(preset)
    args = ["--preset", "paper", "--tau", "0.1", "--reward-prior", "generic", "--fqe.prior.lengthscales", "1,3",
            "--methods", "attention,sf", "--hidden", "32,16", "--onestep.steps", "7", "--fqe.reward-weighting",
            "--trust", "off", "--n-initial", "9", "--dataset", "medium"]
    cfg = evaluate_config("pendulum-angle", "paper", evaluate.make_context("evaluate", args).params)
    paper = EvaluateConfig.preset("paper")
    want = dataclasses.replace(
        paper, methods=("attention", "sf"), hidden=(32, 16), trust="off", n_initial=9, dataset="medium",
        onestep=dataclasses.replace(paper.onestep, steps=7),
        fqe=dataclasses.replace(paper.fqe, tau=0.1, reward_weighting=True,
                                prior=dataclasses.replace(paper.prior, kind="generic", lengthscales=(1.0, 3.0))))
    assert cfg == want


def test_optimize_options_are_the_config_fields():
    names = {p.name for p in optimize.params}
    assert {f.name for f in dataclasses.fields(OptimizeConfig)} - {"family"} <= names
    ctx = optimize.make_context("optimize", [])
    assert optimize_config("pendulum-angle", ctx.params) == OptimizeConfig()
    ctx = optimize.make_context("optimize", ["--episodes", "2", "--double", "--train-params", "0.5",
                                             "--algorithm", "bcq", "--gamma", "0.9"])
    assert optimize_config("ant-dir", ctx.params) == OptimizeConfig(
        family="ant-dir", eval_episodes=2, double=True, train_params=(0.5,), algorithm="bcq", gamma=0.9)
