#!/usr/bin/env bash
# The GPU path's check on a GPU host without a package registry (docs/gpu.md), run as root
# from the project root, in about 8 minutes: the host's facts, the isolation probe, then side
# by side the judge's GPU cases as root (the isolated process sandbox, jobs under uids of
# their own) and a KernelBench sample through `kforge batch run --backend triton` as an
# ordinary user (no isolation), then the selftest's timing part. Every step has its own time
# limit; each step's output lands in a work folder, packed at the end into
# OUT/results.tgz beside OUT/steps.txt (OUT: first argument, else $OUT, else .gpu/out).
#
# Before: `bash scripts/gpu_wheels.sh` here (wheels into .gpu/wheels) and a KernelBench
# sample in .gpu/KernelBench (or KERNELBENCH=path); both travel with the checkout.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-${OUT:-.gpu/out}}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PY=$(command -v "${PYTHON:-python3}")
KB=${KERNELBENCH:-.gpu/KernelBench}
PARALLEL_S=${PARALLEL_S:-300}
W=${WORK:-/tmp/kforge-gpucheck}   # root's results
U=/tmp/kforge-user                # the ordinary user's copy and results
rm -rf "$W" "$U" && mkdir -p "$W" "$U/repo"

if [ -f .gpu/wheels/install.sh ]; then
  PYTHON=$PY bash .gpu/wheels/install.sh > "$W/wheels.log" 2>&1 || echo "wheels: install failed" >> "$OUT/steps.txt"
fi
export PYTHONPATH="$PWD/.gpu/site:$PWD${PYTHONPATH:+:$PYTHONPATH}" PATH="$PWD/.gpu/site/bin:$PATH"
export KFORGE_DATA_DIR="$W/data" KFORGE_GPU_LOCK_DIR=/tmp/kforge-lock PYTHONUNBUFFERED=1
# one lock file for root's and the user's judges: one timing at a time on the GPU
mkdir -p "$KFORGE_GPU_LOCK_DIR" && chmod 1777 "$KFORGE_GPU_LOCK_DIR"
touch "$KFORGE_GPU_LOCK_DIR/kforge-gpu-0.lock" && chmod 666 "$KFORGE_GPU_LOCK_DIR/kforge-gpu-0.lock"

step() {  # step NAME SECONDS COMMAND...: stdout and stderr to W/NAME.out / .err
  local name=$1 limit=$2 start rc
  shift 2
  start=$(date +%s)
  timeout -k 10 "$limit" "$@" > "$W/$name.out" 2> "$W/$name.err"
  rc=$?
  echo "$name rc=$rc $(( $(date +%s) - start ))s (limit ${limit}s)" | tee -a "$OUT/steps.txt"
}

step facts 30 bash -c "nvidia-smi; nvcc --version | tail -2; command -v ninja; id; uname -r; nproc; echo $PY;
  $PY -c 'import torch, triton; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, \"triton\", triton.__version__)'"
step isolation 45 "$PY" scripts/gpu/isolation_probe.py

# The user's copy: what it must read, and folders it may write.
cp -r app agents sandbox knowledge_base problems kforge_native.py "$U/repo/"
cp -r "$KB" "$U/suite"
[ -d .gpu/site ] && cp -r .gpu/site "$U/site"
chmod -R a+rwX "$U"
AS_USER=("$PY" -c "import os, sys; os.setgroups([]); os.setgid(65534); os.setuid(65534); os.execvp(sys.argv[1], sys.argv[1:])"
         env HOME="$U" KFORGE_DATA_DIR="$U/data" PYTHONPATH="$U/site:$U/repo" PATH="$U/site/bin:$PATH")

step judge_cases "$PARALLEL_S" "$PY" scripts/gpu/judge_cases.py "$W/judge_cases.jsonl" &
step batch_as_user "$PARALLEL_S" "${AS_USER[@]}" bash -c "cd $U/repo && $PY -m app.cli.main batch run $U/suite \
  --backend triton --provider offline --workers 3 --max-rounds 1 --max-wall 90 --fit-memory 1 --kb off --out $U/batch --json" &
wait
step batch_report 30 "$PY" -m app.cli.main batch report "$U/batch"
step selftest_timing 80 "$PY" -m app.cli.main selftest --device cuda --quick --parts timing --json --out "$W/selftest"

cp -r "$U/batch" "$W/batch" 2>/dev/null
tar -czf "$OUT/results.tgz" -C "$W" . && echo "packed: $(du -h "$OUT/results.tgz" | cut -f1)" | tee -a "$OUT/steps.txt"
