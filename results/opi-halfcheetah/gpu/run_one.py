"""One sweep run without Ray (what sweep.run_one does in a worker): config JSON -> run folder."""
import json
import sys
import time

from resolvent.experiments.optimize import run_optimize
from resolvent.experiments.optimize_config import OptimizeConfig

cfg_path, out = sys.argv[1], sys.argv[2]
t = time.time()
run_optimize(OptimizeConfig.from_dict(json.load(open(cfg_path))), out, resume=False)
print(f"DONE {out} in {time.time() - t:.1f} s", flush=True)
