"""Operator networks: attention, linear decomposition, vanilla DeepONet, successor features, max-out."""
from resolvent.operators.networks import (MLP, NETWORKS, AttentionOperator, KernelOperator, LinearOperator,
                                          MaxOutOperator, SuccessorFeatures, VanillaOperator,
                                          make_network, widen_heads)

__all__ = ["MLP", "NETWORKS", "AttentionOperator", "KernelOperator", "LinearOperator", "MaxOutOperator",
           "SuccessorFeatures", "VanillaOperator", "make_network", "widen_heads"]
