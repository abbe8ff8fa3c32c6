"""resolvent: zero-shot reward transfer with operator deep Q-learning (Tang, Feng, Liu)."""
from resolvent.model import CheckpointError, OperatorModel, load

__version__ = "0.1.0"
__all__ = ["CheckpointError", "OperatorModel", "load", "__version__"]
