#!/usr/bin/env bash
# Sets up the environment (scripts/setup.sh) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/lint-imports
# Most tests run Triton in its interpreter; the one that compiles kernels for a
# GPU target needs a process where the interpreter never ran, so it gets its own.
COMPILE_TEST=tests/agents/test_offline_gpu_compile.py
.venv/bin/python -m pytest -q --ignore="$COMPILE_TEST" "$@"
.venv/bin/python -m pytest -q "$COMPILE_TEST"
