#!/bin/bash
# One device call: install the carried wheel, then the front-end GPU worker (gpu_worker.py: ring,
# every dtype through symm_at, putmem_signal, slices, block events, the tutorial kernels, errors)
# at each rank count of NS, several ranks on one GPU under MPS.
# Carry: .carry/ (bitcode + cp312 wheel).   usage: OUT=... NS="2 4 8" tests/python/device_run.sh
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TDIST_DEVICE_BITCODE=$PWD/.carry/libtdist_device.bc
OUT=${OUT:-/tmp/fe-out}
mkdir -p "$OUT"
if ! python3 -c "import tdist" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/tdist-*cp312*.whl
  export PYTHONPATH=/tmp/site
fi
for n in ${NS:-2 4 8}; do
  log="$OUT/frontend-$n.log"
  timeout 250 python3 tools/tdist-run -n "$n" --timeout 240 -- python3 tests/python/gpu_worker.py > "$log" 2>&1
  echo "== front-end worker -n $n rc=$?: $(grep -c '\] PASS' "$log") PASS, $(grep -c '\] FAIL' "$log") FAIL, $(grep -c ' 0 failure(s)' "$log")/$n ranks clean"
  grep -E "FAIL|Error|error|tdist-run:" "$log" | head -20
done
