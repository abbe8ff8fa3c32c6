"""Run the HalfCheetah-Vel control seeds at once on one GPU; stop the laggards if all cannot
finish by the deadline; pack every run's small files into $OUT (again every minute).

How seeds 0-2 and 4-7 of results/opi-halfcheetah were made (see README.md beside this folder):
on a lent machine with one H200, 16 cores and no network, from the repository's root, with the
run configurations (``load_spec("results/opi-halfcheetah.toml")``'s, as JSON) in .gpu/configs,
the HalfCheetah-Vel expert dataset in .gpu/minari and Python 3.12 wheels of gymnasium, mujoco
and minari in .whl::

    pip install --no-index --no-deps --target /tmp/site .whl/*.whl; export PYTHONPATH=/tmp/site:$PWD
    DEADLINE=535 python3 .gpu/drive.py                                  # seeds 0-9: 7 finished
    XLA_FLAGS=--xla_gpu_autotune_level=0 SEEDS="3 8 9" DEADLINE=285 MARGIN=20 python3 .gpu/drive.py

Each run is ``run_optimize`` of its configuration (run_one.py), what a sweep's Ray task runs.
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
DEADLINE = float(os.environ.get("DEADLINE", 540))    # seconds after start: stop and pack
MARGIN = float(os.environ.get("MARGIN", 45))          # a run's last save, results and plot
OUT = Path(os.environ["OUT"])
ROOT = Path.cwd()
RUNS = Path("/tmp/runs-gpu/halfcheetah-vel")
LOGS = Path("/tmp/logs")
SEEDS = [int(s) for s in os.environ.get("SEEDS", "0 1 2 3 4 5 6 7 8 9").split()]
TOTAL = int(os.environ.get("TOTAL", 40000))           # two methods x 20k steps
CONFIGS = Path(os.environ.get("CONFIGS", ROOT / ".gpu/configs"))
env = dict(os.environ, MINARI_DATASETS_PATH=str(ROOT / ".gpu/minari"), XLA_PYTHON_CLIENT_PREALLOCATE="false",
           RESOLVENT_HOME="/tmp/rh", MPLBACKEND="Agg", TQDM_MININTERVAL="20", PYTHONUNBUFFERED="1")


def el():
    return time.time() - T0


def sh(cmd, timeout=120):
    try:
        r = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=timeout, env=env)
        return r.returncode, (r.stdout + r.stderr).strip()
    except subprocess.TimeoutExpired:
        return 124, "timeout"


print(sh("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv")[1])
print(sh("python3 -c 'import jax, flax, optax, numpy, mujoco, gymnasium, minari; "
         "print(jax.__version__, jax.devices(), flax.__version__, optax.__version__, numpy.__version__, "
         "mujoco.__version__, gymnasium.__version__, minari.__version__)'")[1][-2000:], flush=True)

mps = shutil.which("nvidia-cuda-mps-control")
if mps and os.environ.get("MPS", "1") == "1":
    rc, o = sh(f"{mps} -d", 20)
    rc2, o2 = sh("python3 -c 'import jax; print(float(jax.numpy.ones(3).sum()), jax.devices())'", 60)
    print(f"[{el():.0f}s] MPS start rc={rc} {o[-300:]}; jax under MPS rc={rc2} {o2[-300:]}", flush=True)
    if rc2 != 0:
        sh(f"echo quit | {mps}", 20)
        print("MPS off", flush=True)
else:
    print(f"no MPS ({mps})", flush=True)

LOGS.mkdir(parents=True, exist_ok=True)


def launch(seeds):
    procs = {}
    for k in seeds:
        log = open(LOGS / f"seed-{k}.log", "w")
        procs[k] = subprocess.Popen([sys.executable, str(ROOT / ".gpu/run_one.py"),
                                     str(CONFIGS / f"seed-{k}.json"), str(RUNS / f"seed-{k}")],
                                    stdout=log, stderr=subprocess.STDOUT, env=env, cwd="/tmp")
    return procs


def progress(k):
    f = RUNS / f"seed-{k}" / "metrics.jsonl"
    best = {}
    if f.is_file():
        for line in f.read_text().splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            best[r["method"]] = max(best.get(r["method"], 0), r["step"])
    return best.get("maxout", 0) + best.get("vanilla", 0)


def pack():
    with tarfile.open(OUT / "runs.tgz.tmp", "w:gz") as t:
        for d in sorted(RUNS.glob("seed-*")):
            for p in sorted(d.rglob("*")):
                if p.is_file() and "checkpoints" not in p.parts and "models" not in p.parts:
                    t.add(p, arcname=str(p.relative_to(RUNS.parent)))
    os.replace(OUT / "runs.tgz.tmp", OUT / "runs.tgz")
    with tarfile.open(OUT / "logs.tgz.tmp", "w:gz") as t:
        t.add(LOGS, arcname="logs")
    os.replace(OUT / "logs.tgz.tmp", OUT / "logs.tgz")


procs = launch(SEEDS)
start = el()
history = []          # (time, total progress of the alive seeds)
killed, last_kill, last_pack, fallback, packed_done = [], 0.0, el(), False, 0
while True:
    time.sleep(10)
    alive = [k for k, p in procs.items() if p.poll() is None]
    failed = [k for k, p in procs.items() if p.poll() not in (None, 0) and k not in killed]
    prog = {k: progress(k) for k in procs}
    if failed and not fallback and el() - start < 240 and not any(prog.values()):
        print(f"[{el():.0f}s] failed early: {failed}; tail of seed-{failed[0]}:\n"
              + (LOGS / f"seed-{failed[0]}.log").read_text()[-3000:], flush=True)
        for p in procs.values():
            p.kill()
        fallback = True
        rc, o = sh(f"python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site2 "
                   f"{ROOT}/.gpu/fallback/*.whl")
        env["PYTHONPATH"] = "/tmp/site2:" + env.get("PYTHONPATH", "")
        shutil.rmtree(RUNS, ignore_errors=True)
        print(f"[{el():.0f}s] relaunch with flax/optax of constraints.txt (pip rc={rc} {o[-300:]})", flush=True)
        procs, start, history = launch(SEEDS), el(), []
        continue
    history.append((el(), sum(prog[k] for k in alive), tuple(alive)))
    print(f"[{el():.0f}s] alive {alive} progress {prog} done "
          f"{[k for k, p in procs.items() if p.poll() == 0]} failed {failed}", flush=True)
    ndone = sum(p.poll() == 0 for p in procs.values())
    if el() - last_pack > 60 or ndone > packed_done:
        packed_done = ndone
        pack()
        last_pack = el()
    if not alive:
        break
    if el() > DEADLINE:
        print(f"[{el():.0f}s] deadline: stopping {alive}", flush=True)
        for k in alive:
            procs[k].kill()
        break
    # the alive seeds' steps per second over the last 90 s (with the same seeds alive)
    win = [h for h in history if h[2] == tuple(alive) and h[0] >= el() - 90]
    if len(win) >= 6 and win[-1][1] > win[0][1] and el() - last_kill > 75 and len(alive) > 1:
        rate = (win[-1][1] - win[0][1]) / (win[-1][0] - win[0][0])
        remaining = sum(TOTAL - prog[k] for k in alive)
        left = DEADLINE - el() - MARGIN
        print(f"   rate {rate:.0f} steps/s, remaining {remaining}, needs {remaining / rate:.0f} s of {left:.0f}",
              flush=True)
        if remaining / rate > left:
            k = min(alive, key=lambda k: (prog[k], -k))
            procs[k].kill()
            killed.append(k)
            last_kill = el()
            print(f"   stopped seed {k} (progress {prog[k]}) so that the others finish", flush=True)
pack()
for k in procs:
    print(k, (LOGS / f"seed-{k}.log").read_text()[-400:].replace("\r", "\n").splitlines()[-3:])
print(sh("nvidia-smi")[1][-1500:])
print(f"[{el():.0f}s] end; killed {killed}", flush=True)
