"""Experiments end to end: run directories, offline policy evaluation and optimisation, plots.

The names below load on first use (a module ``__getattr__``, PEP 562): importing the light
config modules (``evaluate_config``, ``optimize_config``), as the command line does to build
its options, does not load the runners and their matplotlib, minari and gymnasium.
"""
from __future__ import annotations

import importlib

HOMES = {"METHODS": "evaluate_config", "EvaluateConfig": "evaluate_config", "OptimizeConfig": "optimize_config",
         "RunDir": "rundir", "plot_mse": "plots", "plot_returns": "plots", "plot_run": "plots",
         "open_run": "problem", "prepare": "problem", "run_evaluate": "evaluate",
         "run_optimize": "optimize"}   # name -> its module


def __getattr__(name: str):
    if name not in HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{HOMES[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(HOMES))


__all__ = sorted(HOMES)
