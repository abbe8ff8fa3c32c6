"""Experiments end to end: run directories, offline policy evaluation and optimisation, plots."""
from resolvent.experiments.evaluate import METHODS, EvaluateConfig, prepare, run_evaluate
from resolvent.experiments.optimize import OptimizeConfig, run_optimize
from resolvent.experiments.plots import plot_mse, plot_returns, plot_run
from resolvent.experiments.rundir import RunDir

__all__ = ["METHODS", "EvaluateConfig", "OptimizeConfig", "RunDir", "plot_mse", "plot_returns",
           "plot_run", "prepare", "run_evaluate", "run_optimize"]
