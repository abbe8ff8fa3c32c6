"""resolvent: zero-shot reward transfer with operator deep Q-learning (Tang, Feng, Liu)."""
__version__ = "0.1.0"
