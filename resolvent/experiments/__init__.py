"""Experiments end to end: run directories, offline policy evaluation, plots."""
from resolvent.experiments.evaluate import METHODS, EvaluateConfig, prepare, run_evaluate
from resolvent.experiments.plots import plot_mse
from resolvent.experiments.rundir import RunDir

__all__ = ["METHODS", "EvaluateConfig", "RunDir", "plot_mse", "prepare", "run_evaluate"]
