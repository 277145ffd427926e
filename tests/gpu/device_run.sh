#!/bin/bash
# Build and run the NVIDIA GPU suite and benchmarks on the GPU machine in one go.
# That machine has no clang-19 and maybe no GoogleTest: carry the prebuilt bitcode in .nvcarry/
# and the GoogleTest sources in .gtest-src/ (see the report / benchmarks/NOTES.md).
#   usage: tests/gpu/device_run.sh [tests|bench|all]
set -u
what=${1:-all}
OUT=${OUT:-/tmp/tdist-out}
mkdir -p "$OUT"
R=$(pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nvidia-smi -L
# PREBUILT=<build dir carried from the CPU machine> skips the build (saves device time).
BD=${PREBUILT:-build-dev}
if [ -z "${PREBUILT:-}" ]; then
  if [ ! -f /tmp/gtest/lib/cmake/GTest/GTestConfig.cmake ]; then
    (cmake -S .gtest-src -B /tmp/gt -G Ninja -DCMAKE_INSTALL_PREFIX=/tmp/gtest -DBUILD_GMOCK=OFF \
      && cmake --build /tmp/gt && cmake --install /tmp/gt) > "$OUT/gtest.log" 2>&1 || echo "gtest build failed"
  fi
  cmake -S . -B build-dev -G Ninja -DCMAKE_PREFIX_PATH=/tmp/gtest -DTDIST_ENABLE_MLIR=OFF \
    -DTDIST_DEVICE_BC="$R/.nvcarry/libtdist_device.bc" > "$OUT/cfg.log" 2>&1 || { tail -30 "$OUT/cfg.log"; exit 1; }
  ninja -C build-dev tdist tdist_gpu_tests tdist_gpu_bench > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" "$OUT/build.log" | head -30; exit 1; }
fi
RUN="python3 $BD/tools/tdist-run"
if [ "$what" != bench ]; then
  for n in ${NS:-1 2 4 8}; do
    timeout $((${SUITE_T:-160} + 10)) $RUN -n $n --timeout ${SUITE_T:-160} --wait-timeout-ms 10000 -- $BD/tests/gpu/tdist_gpu_tests \
      > "$OUT/gpu-$n.log" 2>&1
    echo "== gpu suite, $n ranks: rc=$?"
    grep -E "^\[rank 0\] \[  (PASSED|FAILED|SKIPPED) |Failure|tdist-run:" "$OUT/gpu-$n.log" | head -20
  done
fi
if [ "$what" != tests ]; then
  B=$BD/benchmarks/gpu/tdist_gpu_bench
  {
    timeout 90 $RUN -n 2 --timeout 80 -- $B pingpong
    timeout 90 $RUN -n 1 --timeout 80 -- $B put
    timeout 90 $RUN -n 2 --timeout 80 -- $B put
    for n in 2 4 8; do timeout 60 $RUN -n $n --timeout 50 -- $B barrier; done
  } > "$OUT/bench.log" 2>&1
  grep -E "ratio|us per barrier|GB/s|SMs|rc=|tdist-run|error|fail" "$OUT/bench.log"
fi
