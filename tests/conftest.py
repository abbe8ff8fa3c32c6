import os
import tempfile

# Keep datasets and caches of the test run away from the user's, even where the user has set
# these: tests record example datasets under the examples' own ids (a 1500-step Reacher), which
# would replace the user's recordings.
_root = tempfile.mkdtemp(prefix="resolvent-tests-")
os.environ["MINARI_DATASETS_PATH"] = os.path.join(_root, "minari")
os.environ["RESOLVENT_HOME"] = os.path.join(_root, "home")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
