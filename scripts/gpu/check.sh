#!/usr/bin/env bash
# The GPU path's check on a GPU host without a package registry (docs/gpu.md), from the
# project root, in about 9 minutes: the host's facts, the isolation probe, the judge's GPU
# cases (root: the isolated process sandbox, jobs under uids of their own) beside a
# KernelBench sample through `kforge batch run --backend triton`, the selftest's timing part,
# and one judgement as an ordinary user. Every step has its own time limit; results are files
# under OUT (first argument, else $OUT, else .gpu/out), steps.txt says how each step ended.
#
# Before: `bash scripts/gpu_wheels.sh` here (wheels into .gpu/wheels) and a KernelBench
# sample in .gpu/KernelBench (or KERNELBENCH=path); both travel with the checkout.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-${OUT:-.gpu/out}}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PY=${PYTHON:-python3}
KB=${KERNELBENCH:-.gpu/KernelBench}
PARALLEL_S=${PARALLEL_S:-270}

if [ -f .gpu/wheels/install.sh ]; then
  bash .gpu/wheels/install.sh > "$OUT/wheels.log" 2>&1 || echo "wheels: install failed (see wheels.log)" >> "$OUT/steps.txt"
fi
export PYTHONPATH="$PWD/.gpu/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$PWD/.gpu/site/bin:$PATH"  # ninja, for load_inline
export KFORGE_DATA_DIR="$OUT/data" KFORGE_GPU_LOCK_DIR="$OUT"
kforge() { "$PY" -m app.cli.main "$@"; }

step() {  # step NAME SECONDS COMMAND...: stdout and stderr to OUT/NAME.out / .err
  local name=$1 limit=$2 start rc
  shift 2
  start=$(date +%s)
  timeout -k 10 "$limit" "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  rc=$?
  echo "$name rc=$rc $(( $(date +%s) - start ))s (limit ${limit}s)" | tee -a "$OUT/steps.txt"
}

step facts 30 bash -c "nvidia-smi; nvcc --version | tail -2; command -v ninja; id; uname -r; nproc; git log -1 --format=%h 2>/dev/null;
  $PY -c 'import torch, triton; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, \"triton\", triton.__version__)'"
step isolation 60 "$PY" scripts/gpu/isolation_probe.py

# The judge's cases and the sample side by side: both hold the GPU's lock file while they judge.
step judge_cases "$PARALLEL_S" "$PY" scripts/gpu/judge_cases.py "$OUT/judge_cases.jsonl" &
step batch "$PARALLEL_S" "$PY" -m app.cli.main batch run "$KB" --backend triton --provider offline --workers 3 \
  --max-rounds 1 --max-wall 90 --fit-memory 1 --kb off --out "$OUT/batch" --json &
wait
step batch_report 60 "$PY" -m app.cli.main batch report "$OUT/batch"
step selftest_timing 100 "$PY" -m app.cli.main selftest --device cuda --quick --parts timing --json --out "$OUT/selftest"

# An ordinary user: no isolation, every job under that user's uid. A copy it can read.
USER_DIR=/tmp/kforge-user
rm -rf "$USER_DIR" && mkdir -p "$USER_DIR/repo"
cp -r app agents sandbox knowledge_base problems kforge_native.py "$USER_DIR/repo/"
[ -d .gpu/site ] && cp -r .gpu/site "$USER_DIR/site"
chmod -R a+rwX "$USER_DIR"
step as_user 100 setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$USER_DIR" \
  KFORGE_DATA_DIR="$USER_DIR/data" PYTHONPATH="$USER_DIR/site:$USER_DIR/repo" PATH="$USER_DIR/site/bin:$PATH" \
  bash -c "cd $USER_DIR/repo && $PY -m app.cli.main eval --reference problems/level1/1_relu_scale.py \
    --candidate problems/level1/solutions/relu_scale/correct_triton.py --device cuda --json"
echo "done: $OUT" | tee -a "$OUT/steps.txt"
