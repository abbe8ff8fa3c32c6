import os
import tempfile

# Keep datasets and caches of the test run away from the user's, even where the user has set
# these: tests record example datasets under the examples' own ids (a 1500-step Reacher), which
# would replace the user's recordings.
_root = tempfile.mkdtemp(prefix="resolvent-tests-")
os.environ["MINARI_DATASETS_PATH"] = os.path.join(_root, "minari")
os.environ["RESOLVENT_HOME"] = os.path.join(_root, "home")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# The suite's tiny runs trace and compile about a thousand JAX programs each, making many
# short-lived Python objects: Python's cycle collector, run at its default of every 700
# allocations, walks a heap that grows with every compiled program. Every 100,000 instead
# (test_model.py then test_bcq.py in one process: 244 s against 265-282 s).
import gc  # noqa: E402

gc.set_threshold(100_000, 50, 100)
