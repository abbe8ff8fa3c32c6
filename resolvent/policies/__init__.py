"""Target policies: TD3 training (optional extra), shipped actor weights, a JAX actor."""
from resolvent.policies.actor import Actor, act, load_target_policy, shipped_path, target_policy_info

__all__ = ["Actor", "act", "load_target_policy", "shipped_path", "target_policy_info"]
