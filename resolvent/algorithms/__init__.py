"""Losses and jitted update steps: operator FQE, the successor-features baseline, and for
control operator DQN (``algorithms.dqn``) and operator BCQ (``algorithms.bcq``)."""
from resolvent.algorithms import bcq, dqn
from resolvent.algorithms.fqe import (FQEConfig, OperatorData, TrainState, init, loss,
                                      make_initializer, make_predictor, make_trainer,
                                      train_chunk, update)
from resolvent.algorithms.sf import identity_encodings, ridge_weights

__all__ = ["FQEConfig", "bcq", "dqn", "OperatorData", "TrainState", "identity_encodings", "init", "loss",
           "make_initializer", "make_predictor", "make_trainer", "ridge_weights",
           "train_chunk", "update"]
