#!/usr/bin/env bash
# Sets up the environment (scripts/setup.sh) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/lint-imports
.venv/bin/python -m pytest -q "$@"
