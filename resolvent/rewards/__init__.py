"""Rewards beyond a family: the generic reward prior, and reward callables checked."""
from resolvent.rewards.prior import (PRIORS, GenericReward, PriorConfig, PriorData, PriorStats,
                                     generic_rewards, reward_inputs)
from resolvent.rewards.probes import evaluate_reward, reads

__all__ = ["PRIORS", "GenericReward", "PriorConfig", "PriorData", "PriorStats",
           "evaluate_reward", "generic_rewards", "reads", "reward_inputs"]
