"""Losses and jitted update steps: operator FQE and the successor-features baseline."""
from resolvent.algorithms.fqe import (FQEConfig, OperatorData, TrainState, init, loss,
                                      make_initializer, make_predictor, make_trainer,
                                      train_chunk, update)
from resolvent.algorithms.sf import identity_encodings, ridge_weights

__all__ = ["FQEConfig", "OperatorData", "TrainState", "identity_encodings", "init", "loss",
           "make_initializer", "make_predictor", "make_trainer", "ridge_weights",
           "train_chunk", "update"]
