"""Monte-Carlo ground truth, metrics, episodic returns in the real environment."""
from resolvent.envs import Rollout, actor_rollout, rollout
from resolvent.evaluation.ground_truth import (GroundTruth, horizon, load_ground_truth, mse, r2,
                                               rollout_ground_truth)
from resolvent.evaluation.points import PointsConfig, load_points
from resolvent.evaluation.returns import actor_returns, episodic_returns

__all__ = ["GroundTruth", "Rollout", "actor_returns", "actor_rollout", "episodic_returns", "horizon",
           "load_ground_truth", "load_points", "mse", "PointsConfig", "r2", "rollout", "rollout_ground_truth"]
