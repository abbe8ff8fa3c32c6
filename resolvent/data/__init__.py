"""Offline datasets: collection, Minari storage, loading and reference points."""
from resolvent.data.collect import behaviour_policy, collect_episodes, split_replay
from resolvent.data.dataset import (KINDS, Transitions, build_episodes, check_kind, dataset_id,
                                    load_transitions, reference_indices, validate_transitions)

__all__ = ["KINDS", "Transitions", "behaviour_policy", "build_episodes", "check_kind",
           "collect_episodes", "dataset_id", "load_transitions", "reference_indices",
           "split_replay", "validate_transitions"]
