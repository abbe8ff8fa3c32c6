"""Monte-Carlo ground truth and metrics."""
from resolvent.evaluation.ground_truth import (GroundTruth, horizon, load_ground_truth, mse,
                                               rollout_ground_truth)

__all__ = ["GroundTruth", "horizon", "load_ground_truth", "mse", "rollout_ground_truth"]
