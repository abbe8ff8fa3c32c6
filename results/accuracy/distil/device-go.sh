#!/bin/bash
# The distillation study on the lent GPU: wheels, the carried dataset, truth and one-step model, the run's models.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .devcarry/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export JAX_DEFAULT_MATMUL_PRECISION=highest
export RESOLVENT_HOME=$PWD/.devcarry/rh MINARI_DATASETS_PATH=$PWD/.devcarry/minari
nvidia-smi -L
python3 -c "import jax, flax, optax; print(jax.__version__, flax.__version__, optax.__version__, jax.devices())"
timeout ${LIMIT:-500} python3 .devcarry/study.py .devcarry/run --methods favor --horizon 400 --steps 12000 --points 4096 \
  --lr 3e-4 --n-refs 1024 --tails 10,30 --variants "${VARIANTS}" --out $OUT/study.json 2>&1 | tee $OUT/log.txt | grep -v '%|'
echo "rc=$?"
