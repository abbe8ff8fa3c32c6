"""resolvent: zero-shot reward transfer with operator deep Q-learning (Tang, Feng, Liu)."""
import warnings


def _route_mujoco_warnings() -> None:
    """MuJoCo prints a deprecation notice about Gymnasium's own HalfCheetah XML
    (``settotalmass``) to stderr and MUJOCO_LOG.TXT on every ``gym.make``, which buries
    progress bars. Drop that one notice; pass every other MuJoCo warning to ``warnings``."""
    try:
        import mujoco
    except ImportError:  # pragma: no cover - mujoco comes with gymnasium[mujoco]
        return

    def warn(message: str) -> None:
        if "settotalmass" not in message:
            warnings.warn(f"MuJoCo: {message}", RuntimeWarning, stacklevel=2)

    mujoco.set_mju_user_warning(warn)


_route_mujoco_warnings()

from resolvent.fit import fit  # noqa: E402
from resolvent.model import CheckpointError, MeanModel, OperatorModel, default_method, load  # noqa: E402

__version__ = "0.1.0"
__all__ = ["CheckpointError", "MeanModel", "OperatorModel", "default_method", "fit", "load", "__version__"]
