"""Operator networks: attention, linear decomposition, vanilla DeepONet, successor features."""
from resolvent.operators.networks import (MLP, NETWORKS, AttentionOperator, LinearOperator,
                                          SuccessorFeatures, VanillaOperator, make_network)

__all__ = ["MLP", "NETWORKS", "AttentionOperator", "LinearOperator", "SuccessorFeatures",
           "VanillaOperator", "make_network"]
