#!/bin/bash
# The zero-shot benchmark on a GPU machine (the workplace's lent NVIDIA H200, a session of
# 2026-11-28): fb and its expansions (G_400, the bank of 2048 states) at 1e4 new points of
# Pendulum-Angle expert, FQE under DOPE's recipe trained on the same GPU. Results:
# zero-shot-pendulum-angle-expert-h200.jsonl, h200.txt.
#
# Made here, in the repository root, into .gpu/ (ignored; it travels with the working tree):
#   .gpu/whl    wheels the GPU image lacks (Python 3.12): gymnasium==1.4.0 minari==0.5.4
#               mujoco==4.0.0 mujoco-core==4.0.0 mujoco-studio==4.0.0 farama-notifications glfw
#               pyopengl (pip download --no-deps --only-binary=:all: --python-version 3.12 ...)
#   .gpu/home   a copy of ~/.cache/resolvent (the run's ground truth and one-step model)
#   .gpu/minari a copy of ~/.minari (the dataset)
#   .gpu/run    runs/main-job-24 (`resolvent evaluate pendulum-angle`), its models/fb.* and
#               config.json, prior.npz, results.json
# and run there as `BENCH_S=450 FQE_S=200 bash results/answer-times/h200.sh --bank 2048`.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD RESOLVENT_HOME=$PWD/.gpu/home MINARI_DATASETS_PATH=$PWD/.gpu/minari/datasets
# float32 products as on the CPU (no TF32), arrays allocated as asked
export PYTHONUNBUFFERED=1 JAX_DEFAULT_MATMUL_PRECISION=highest XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi -L; nproc
python3 -c "import jax, flax, numpy, resolvent; print(jax.__version__, flax.__version__, numpy.__version__, jax.devices())" 2>&1 | tee $OUT/env.txt || exit 1
timeout ${BENCH_S:-420} python3 benchmarks/zero_shot.py --run .gpu/run --methods fb --horizons 400 --oracle dope \
    --fqe-steps 3000000 --fqe-chunk 2000 --fqe-budget ${FQE_S:-180} "$@" > $OUT/bench.jsonl 2> >(tee $OUT/bench.err >&2)
echo "rc $?"
