#!/bin/bash
# One batched GPU-machine call: install, the tdist_kernels GPU worker at 2/4/8 ranks, the benchmark.
# The GPU machine has no clang: carry .carry/libtdist_device.bc (and, to skip the C++ build there,
# a cp312 wheel built here: pip wheel --no-build-isolation --no-deps -w .carry .).
#   usage: OUT=... tests/gpu_kernels/device_run.sh      (NS="2 4 8", BN="2" to choose rank counts;
#          empty to skip; TAG, BENCH_T, BENCH_ARGS for the benchmark)
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TDIST_DEVICE_BITCODE=$PWD/.carry/libtdist_device.bc
OUT=${OUT:-/tmp/tk-out}
mkdir -p "$OUT"
T0=$(date +%s)
el() { echo "$(( $(date +%s) - T0 )) s"; }
nvidia-smi -L
if ls .carry/tdist-*cp312*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/tdist-*cp312*.whl \
    && export PYTHONPATH=/tmp/site
fi
if ! python3 -c "import sys; sys.path.insert(0, 'python'); import tdist; assert tdist.cuda_available()"; then
  unset PYTHONPATH
  python3 -m pip install --no-build-isolation --no-deps -q -C cmake.define.TDIST_BUILD_TESTS=OFF . \
    > "$OUT/pip.log" 2>&1 || { tail -30 "$OUT/pip.log"; exit 1; }
fi
echo "== installed ($(el))"
RUN="python3 tools/tdist-run"
# Worker limit: 100 s + 10 s per rank (2: 120 s, 8: 180 s). A worker compiles ~60 Triton kernels (every
# rank at once; the cache is shared, so later workers start warm) and a hung kernel traps after 20 s
# anyway, so the limit only has to cover a cold-cache run: at 8 ranks with a cold cache (2026-11-29,
# after the 2- and 4-rank workers had failed early) 95 s was not enough.
worker() {
  local wt=$((100 + 10 * $1))
  local log="$OUT/worker-$1${TAG:-}.log"
  timeout $((wt + 10)) $RUN -n "$1" --timeout $wt -- python3 tests/gpu_kernels/gpu_worker.py > "$log" 2>&1
  echo "== worker -n $1 rc=$? ($(el)): $(grep -c '\] PASS' "$log") PASS lines, $(grep -c '\] FAIL' "$log") FAIL lines"
  grep -E "SM budget|scenario .*: [0-9.]+ s$" "$log" | head -12
  grep -E "FAIL|Error|error|failure\(s\)|tdist-run:|timed out" "$log" | grep -v "scenario errors:" | head -30
}
bench() {
  local bt=${BENCH_T:-65}
  timeout $((bt + 5)) $RUN -n "$1" --timeout $bt -- python3 benchmarks/gpu_kernels/bench.py \
    --json "$OUT/bench-$1${TAG:-}.json" ${BENCH_ARGS:-} > "$OUT/bench-$1${TAG:-}.log" 2>&1
  echo "== bench -n $1 rc=$? ($(el))"
  grep -E "SUMMARY|Error|error|tdist-run:" "$OUT/bench-$1${TAG:-}.log" | head -40
}
NS=${NS-2 4 8}  # set but empty: no worker run
BN=${BN-2}      # set but empty: no benchmark run
first=${NS%% *}
[ -n "$first" ] && worker "$first"
for n in $BN; do bench "$n"; done
for n in ${NS#"$first"}; do worker "$n"; done
echo "== done ($(el))"
