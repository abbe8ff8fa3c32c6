"""Rewards beyond a family: the generic reward prior and out-of-family probe rewards."""
from resolvent.rewards.prior import (PRIORS, GenericReward, PriorConfig, PriorData, PriorStats,
                                     generic_rewards, reward_inputs)
from resolvent.rewards.probes import PROBES, evaluate_reward, probe_rewards

__all__ = ["PRIORS", "PROBES", "GenericReward", "PriorConfig", "PriorData", "PriorStats",
           "evaluate_reward", "generic_rewards", "probe_rewards", "reward_inputs"]
