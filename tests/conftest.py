import os
import tempfile

# Keep datasets and caches of the test run away from the user's.
_root = tempfile.mkdtemp(prefix="resolvent-tests-")
os.environ.setdefault("MINARI_DATASETS_PATH", os.path.join(_root, "minari"))
os.environ.setdefault("RESOLVENT_HOME", os.path.join(_root, "home"))
os.environ.setdefault("JAX_PLATFORMS", "cpu")
