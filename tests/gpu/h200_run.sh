#!/bin/bash
# One device call on a single H200 (ranks share it under MPS): the GPU suite, the runtime benchmark,
# the kernels' correctness worker and their benchmark, eager and as CUDA-graph replays.
# Carry: .carry/ (bitcode + cp312 wheel) and build-nvidia/{runtime/libtdist.so,tests/gpu/tdist_gpu_tests,
# benchmarks/gpu/tdist_gpu_bench,tools}.
#   usage: OUT=... [SUITE_NS="2"] [NS="2"] [BENCH_ARGS=...] tests/gpu/h200_run.sh
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/h200-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/build-nvidia/runtime:${LD_LIBRARY_PATH:-}
cp tools/tdist_mps.py tools/tdist-run build-nvidia/tools/ 2>/dev/null
RUN="python3 build-nvidia/tools/tdist-run"
B=build-nvidia/benchmarks/gpu/tdist_gpu_bench
for n in ${SUITE_NS:-2}; do
  timeout 100 $RUN -n "$n" --timeout 90 --wait-timeout-ms 10000 -- build-nvidia/tests/gpu/tdist_gpu_tests > "$OUT/suite-$n.log" 2>&1
  echo "== gpu suite, $n ranks: rc=$? $(grep -c '^\[rank 0\] \[       OK' "$OUT/suite-$n.log") OK"
  grep -E "^\[rank 0\] \[  (PASSED|FAILED) |Failure|tdist-run:" "$OUT/suite-$n.log" | head -10
done
if [ -n "${RTBENCH:-1}" ]; then
  { timeout 50 $RUN -n 2 --timeout 45 -- $B pingpong; timeout 50 $RUN -n 2 --timeout 45 -- $B put; } > "$OUT/rtbench.log" 2>&1
  grep -E "ratio|round trip|GB/s" "$OUT/rtbench.log" | head -12
fi
NS="${NS:-2}" BN="" OUT="$OUT" bash tests/gpu_kernels/device_run.sh
for mode in "" "--graph"; do
  TAG="${mode:+-graph}" BENCH_T=${BENCH_T:-150} BENCH_ARGS="${BENCH_ARGS:---a2a-mb 16,64,256 --gemm-shapes 4096x4096x4096,8192x8192x3584 --ar-bytes 4096,65536,262144,67108864 --reps 10} $mode" \
    NS="" BN="${BN:-2}" OUT="$OUT" bash tests/gpu_kernels/device_run.sh | grep -v "^== done"
done
