#!/usr/bin/env bash
# The GPU path's check on a GPU host without a package registry (docs/gpu.md), run as root
# from the project root, in about 9 minutes. Steps (STEPS picks some, in this order):
#   facts      the host: GPU, driver, nvcc, ninja, torch, triton
#   isolation  which confinement CUDA lives with (scripts/gpu/isolation_probe.py)
#   user_eval  one judgement as an ordinary user (no isolation, jobs under the user's uid)
#   parallel   side by side: the judge's GPU cases as root (the isolated process sandbox,
#              jobs under uids of their own; scripts/gpu/judge_cases.py, JUDGE_ONLY picks
#              core | cheats) and a KernelBench sample through `kforge batch run --backend
#              triton` (BATCH_AS=user: an ordinary user in the groups that own /dev/nvidia*,
#              no isolation; BATCH_AS=root: the isolated sandbox)
#   report     the batch's report
#   timing     the selftest's timing part (root)
# Each step has its own time limit; its output lands in a work folder, packed at the end into
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
STEPS=${STEPS:-facts isolation user_eval parallel report timing}
PARALLEL_S=${PARALLEL_S:-300}
BATCH_AS=${BATCH_AS:-user}
W=${WORK:-/tmp/kforge-gpucheck}   # root's results
U=/tmp/kforge-user                # the batch's copy of the code and suite, and its results
rm -rf "$W" "$U" && mkdir -p "$W" "$U/repo"

if [ -f .gpu/wheels/install.sh ]; then
  PYTHON=$PY bash .gpu/wheels/install.sh > "$W/wheels.log" 2>&1 || echo "wheels: install failed" >> "$OUT/steps.txt"
fi
export PYTHONPATH="$PWD/.gpu/site:$PWD${PYTHONPATH:+:$PYTHONPATH}" PATH="$PWD/.gpu/site/bin:$PATH"
export KFORGE_DATA_DIR="$W/data" KFORGE_GPU_LOCK_DIR=/tmp/kforge-lock PYTHONUNBUFFERED=1
# one lock file for every judge here, whoever runs it: one timing at a time on the GPU
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
wants() { [[ " $STEPS " == *" $1 "* ]]; }

wants facts && step facts 30 bash -c "nvidia-smi; ls -l /dev/nvidia*; nvcc --version | tail -2; command -v ninja; id;
  uname -r; nproc; echo $PY; $PY -c 'import torch, triton; print(\"torch\", torch.__version__, \"cuda\",
  torch.version.cuda, \"triton\", triton.__version__)'"
wants isolation && step isolation 60 "$PY" scripts/gpu/isolation_probe.py

# A copy an ordinary user can read, folders it may write, and how to become that user: uid
# 65534 in the groups that own /dev/nvidia* (a user with access to the GPU).
cp -r app agents sandbox knowledge_base taxonomy problems kforge_native.py "$U/repo/"
cp -r "$KB" "$U/suite"
[ -d .gpu/site ] && cp -r .gpu/site "$U/site"
chmod -R a+rwX "$U"
GIDS=$(stat -c %g /dev/nvidia* 2>/dev/null | sort -u | paste -sd, -)
AS_USER=("$PY" -c "import os, sys; os.setgroups([int(g) for g in sys.argv[1].split(',') if g]); os.setgid(65534);
os.setuid(65534); os.execvp(sys.argv[2], sys.argv[2:])" "$GIDS"
         env HOME="$U" KFORGE_DATA_DIR="$U/data" PYTHONPATH="$U/site:$U/repo" PATH="$U/site/bin:$PATH")

wants user_eval && step user_eval 90 "${AS_USER[@]}" bash -c "cd $U/repo && $PY -m app.cli.main eval --device cuda \
  --reference problems/level1/1_relu_scale.py --candidate problems/level1/solutions/relu_scale/correct_triton.py --json"

if wants parallel; then
  BATCH=(bash -c "cd $U/repo && $PY -m app.cli.main batch run $U/suite --backend triton --provider offline \
    --workers 3 --max-rounds 1 --max-wall 90 --fit-memory 1 --kb off --out $U/batch --json")
  [ "$BATCH_AS" = user ] && BATCH=("${AS_USER[@]}" "${BATCH[@]}")
  step judge_cases "$PARALLEL_S" "$PY" scripts/gpu/judge_cases.py "$W/judge_cases.jsonl" ${JUDGE_ONLY:+--only "$JUDGE_ONLY"} &
  step "batch_as_$BATCH_AS" "$PARALLEL_S" "${BATCH[@]}" &
  wait
fi
wants report && step batch_report 30 "$PY" -m app.cli.main batch report "$U/batch"
wants timing && step selftest_timing 80 "$PY" -m app.cli.main selftest --device cuda --quick --parts timing --json \
  --out "$W/selftest"

cp -r "$U/batch" "$W/batch" 2>/dev/null
tar -czf "$OUT/results.tgz" -C "$W" . && echo "packed: $(du -h "$OUT/results.tgz" | cut -f1)" | tee -a "$OUT/steps.txt"
