"""Run a list of sweep runs at once on one GPU (under CUDA MPS), each in its own process through
``spec.run_one``; pack every run's small files into $OUT every minute and at the end.

JOBS_FILE (default .gpu/jobs/jobs.json, written by make_jobs.py): [{name, task, config, path,
group}]. Group ``ope`` runs niced and at float32 'highest' matmul precision (so its seeds match the
CPU seeds of the same cells). ONLY=GROUP,... runs those groups alone; a run whose results.json is
complete is skipped, so a second call on a warm machine resumes the others from their checkpoints.
MAX (default all) runs at once, the rest queued in the list's order; none starts after START_BY (s);
DEADLINE (s) ends the call. RH is the runs' $RESOLVENT_HOME (cached ground truth).

LEAVE=1: at the deadline the runs are left running (each in its own session, their pids in
/tmp/runs-gpu/pids.json) and the next call on the warm machine adopts those still alive instead of
restarting them from their last checkpoint. FINAL=1: the deadline stops every run and packs the
folders of the unfinished ones (models, checkpoints, the results so far), furthest along first, into
``partial-N.tgz`` (at most 4, 14 MB each: the device tool returns at most 64 MiB) so that they
can finish on another machine.

    pip install --no-index --no-deps --target /tmp/site .whl/*.whl
    PYTHONPATH=/tmp/site:$PWD DEADLINE=535 python3 results/ope-operators/gpu/drive_jobs.py
"""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

T0 = time.time()
DEADLINE = float(os.environ.get("DEADLINE", 560))
OUT = Path(os.environ["OUT"])
ROOT = Path.cwd()
RUNS = Path("/tmp/runs-gpu")
LOGS = Path("/tmp/logs")
JOBS_FILE = Path(os.environ.get("JOBS_FILE", ROOT / ".gpu/jobs/jobs.json"))
JOBS = json.loads(JOBS_FILE.read_text())
ONLY = os.environ.get("ONLY", "")
if ONLY:
    JOBS = [j for j in JOBS if j["group"] in ONLY.split(",")]
MAX = int(os.environ.get("MAX", len(JOBS)))
START_BY = float(os.environ.get("START_BY", DEADLINE))
KEEP = ("config.json", "metrics.jsonl", "results.json")
LEAVE, FINAL = os.environ.get("LEAVE") == "1", os.environ.get("FINAL") == "1"
PIDS = RUNS / "pids.json"
env = dict(os.environ, MINARI_DATASETS_PATH=os.environ.get("MINARI", str(ROOT / ".gpu/minari")),
           XLA_PYTHON_CLIENT_PREALLOCATE="false", RESOLVENT_HOME=os.environ.get("RH", "/tmp/rh"), MPLBACKEND="Agg",
           TQDM_MININTERVAL="30", PYTHONUNBUFFERED="1", XLA_FLAGS="--xla_gpu_autotune_level=0")


def el():
    return time.time() - T0


def sh(cmd, timeout=120):
    try:
        r = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=timeout, env=env)
        return r.returncode, (r.stdout + r.stderr).strip()
    except subprocess.TimeoutExpired:
        return 124, "timeout"


print(sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv")[1])
print(sh("python3 -c 'import jax, flax, optax, numpy, gymnasium, minari; "
         "print(jax.__version__, jax.devices(), flax.__version__, optax.__version__, numpy.__version__, "
         "gymnasium.__version__, minari.__version__)'")[1][-2000:], flush=True)
mps = shutil.which("nvidia-cuda-mps-control")
if mps:
    rc, o = sh(f"{mps} -d", 20)
    print(f"[{el():.0f}s] MPS start rc={rc} {o[-300:]}", flush=True)
LOGS.mkdir(parents=True, exist_ok=True)
RUNS.mkdir(parents=True, exist_ok=True)
RUNNER = ("import json, sys; from resolvent.experiments.spec import run_one; "
          "j = json.load(open(sys.argv[1]))[int(sys.argv[2])]; run_one(j['task'], j['config'], sys.argv[3]); "
          "print('DONE', flush=True)")

class Adopted:
    """A run started by an earlier call and still alive: polled through /proc."""

    def __init__(self, pid: int):
        self.pid = pid

    def poll(self):
        stat = Path(f"/proc/{self.pid}/stat")
        if stat.is_file() and stat.read_text().split()[2] != "Z":
            return None
        return 0    # its results.json says whether it finished

    def kill(self):
        try:
            os.kill(self.pid, 9)
        except ProcessLookupError:
            pass


procs = {}
paths = {j["name"]: RUNS / j["path"] for j in JOBS}


def complete(name) -> bool:
    f = paths[name] / "results.json"
    return f.is_file() and '"complete": true' in f.read_text()


queue = [i for i, j in enumerate(JOBS) if not complete(j["name"])]
for name, pid in (json.loads(PIDS.read_text()) if PIDS.is_file() else {}).items():
    if name in paths and not complete(name) and Adopted(pid).poll() is None:
        procs[name] = Adopted(pid)
        queue = [i for i in queue if JOBS[i]["name"] != name]
print(f"[{el():.0f}s] adopted {sorted(procs)}", flush=True)
print(f"[{el():.0f}s] {len(JOBS) - len(queue)} runs complete already; {len(queue)} to run, {MAX} at once",
      flush=True)


def start(i):
    j = JOBS[i]
    e = dict(env)
    pre = []
    if j["group"] == "ope":
        e["JAX_DEFAULT_MATMUL_PRECISION"] = "highest"
        pre = ["nice", "-n", "5"]
    (RUNS / j["path"]).parent.mkdir(parents=True, exist_ok=True)
    log = open(LOGS / f"{j['name']}.log", "a")
    procs[j["name"]] = subprocess.Popen(pre + [sys.executable, "-c", RUNNER, str(JOBS_FILE), str(i),
                                              str(RUNS / j["path"])], stdout=log, stderr=subprocess.STDOUT,
                                        env=e, cwd="/tmp", start_new_session=True)
    if ONLY == "" and j["group"] == "opi" and (i + 1 == len(JOBS) or JOBS[i + 1]["group"] != "opi"):
        time.sleep(20)     # the control runs compile first


while queue and len(procs) < MAX:
    start(queue.pop(0))


def progress(name):
    f = paths[name] / "metrics.jsonl"
    best = {}
    if f.is_file():
        for line in f.read_text().splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if "step" in r and "method" in r:
                best[r["method"]] = max(best.get(r["method"], 0), r["step"])
    return best


def pack():
    with tarfile.open(OUT / "runs.tgz.tmp", "w:gz") as t:
        for name, d in paths.items():
            for k in KEEP:
                if (d / k).is_file():
                    t.add(d / k, arcname=str((d / k).relative_to(RUNS)))
    os.replace(OUT / "runs.tgz.tmp", OUT / "runs.tgz")
    with tarfile.open(OUT / "logs.tgz.tmp", "w:gz") as t:
        t.add(LOGS, arcname="logs")
    os.replace(OUT / "logs.tgz.tmp", OUT / "logs.tgz")


last_pack, ndone_packed = el(), 0
while True:
    time.sleep(15)
    state = {n: p.poll() for n, p in procs.items()}
    alive = [n for n, s in state.items() if s is None]
    done = [n for n, s in state.items() if s == 0 and complete(n)]
    failed = [n for n, s in state.items() if s is not None and not complete(n)]
    print(f"[{el():.0f}s] alive {len(alive)} done {len(done)} failed {failed}", flush=True)
    for n in alive:
        print(f"   {n}: {progress(n)}", flush=True)
    for n in failed:
        if not (LOGS / f"{n}.failed").exists():
            (LOGS / f"{n}.failed").write_text("")
            print(f"   FAILED {n}:\n" + (LOGS / f"{n}.log").read_text()[-2500:], flush=True)
    if el() - last_pack > 60 or len(done) > ndone_packed:
        ndone_packed = len(done)
        pack()
        last_pack = el()
    while queue and len(alive) < MAX and el() < START_BY:
        i = queue.pop(0)
        start(i)
        alive.append(JOBS[i]["name"])
    if not alive:
        break
    if el() > DEADLINE:
        if LEAVE and not FINAL:
            print(f"[{el():.0f}s] deadline: leaving {alive} running", flush=True)
            PIDS.write_text(json.dumps({n: procs[n].pid for n in alive}))
            break
        print(f"[{el():.0f}s] deadline: stopping {alive}", flush=True)
        for n in alive:
            procs[n].kill()
        break
pack()


def pack_partial():
    """Each unfinished run's folder, furthest along first, into at most 4 partial-N.tgz files of <= 14 MB."""
    order = sorted((n for n in paths if paths[n].is_dir() and not complete(n)),
                   key=lambda n: -sum(progress(n).values()))
    nfile, t, size = 0, None, 0
    for name in order:
        one = RUNS / f"{name}.tgz"
        with tarfile.open(one, "w:gz") as o:
            o.add(paths[name], arcname=str(paths[name].relative_to(RUNS)))
        if one.stat().st_size > 14e6:
            continue
        if t is None or size + one.stat().st_size > 14e6:
            if t is not None:
                t.close()
            if nfile == 4:
                t = None
                break
            nfile += 1
            t, size = tarfile.open(OUT / f"partial-{nfile}.tgz", "w"), 0
        t.add(one, arcname=one.name)
        size += one.stat().st_size
        print(f"   packed {name} into partial-{nfile}.tgz ({progress(name)})", flush=True)
    if t is not None:
        t.close()


if FINAL:
    pack_partial()
print(sh("nvidia-smi")[1][-1200:])
print(f"[{el():.0f}s] end; done {[n for n in procs if complete(n)]}", flush=True)
