#!/usr/bin/env bash
# Sets up the environment (scripts/setup.sh), installs what only the tests
# need, and runs the whole test suite. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Test-only Debian packages: chromium for the dashboard's browser tests,
# docker-compose to validate docker-compose.yml.
bash scripts/apt-need.sh chromium docker-compose
.venv/bin/lint-imports
# Most tests run Triton in its interpreter; the one that compiles kernels for a
# GPU target needs a process where the interpreter never ran, so it gets its own.
COMPILE_TEST=tests/agents/offline/test_gpu_compile.py
.venv/bin/python -m pytest -q --durations=25 --ignore="$COMPILE_TEST" "$@"
.venv/bin/python -m pytest -q "$COMPILE_TEST"
