#!/bin/bash
# One GPU-machine call of benchmarks (CUDA-graph replays, 10 calls per sample): one rank per GPU on
# all G GPUs, then on 2 GPUs (G > 2), then 2 ranks sharing GPU 0 under MPS. Each step has its own
# time limit and log under $OUT; a step's failure does not stop the next.
# Carry .carry/ (bitcode + cp312 wheel) and build-nvidia/runtime/libtdist.so.
#   usage: OUT=... [STEPS="worker wmps gpus pair mps big sweep"] [WORKER_ONLY=a2a,gemm] benchmarks/gpu_kernels/device_bench.sh
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TDIST_DEVICE_BITCODE=$PWD/.carry/libtdist_device.bc LD_LIBRARY_PATH=$PWD/build-nvidia/runtime:${LD_LIBRARY_PATH:-}
OUT=${OUT:-/tmp/db-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/tdist-*cp312*.whl 2>/dev/null
export PYTHONPATH=/tmp/site
G=$(nvidia-smi -L | grep -c '^GPU ')
T0=$(date +%s)
R="python3 tools/tdist-run"
BENCH="python3 benchmarks/gpu_kernels/bench.py --graph --inner 10 --reps 10"
A2A="--a2a-mb ${A2A_MB:-1,16,64}"
GEMM="--impls cublas,cublas_ce,cublas_whole --gemm-shapes ${GEMM_SHAPES:-4096x4096x4096,8192x8192x3584}"
AR="--ar-bytes ${AR_BYTES:-4096,65536,262144,1048576,67108864}"
step() {  # name limit command...
  local name=$1 lim=$2
  shift 2
  timeout $((lim + 10)) "$@" > "$OUT/$name.log" 2>&1
  echo "== $name rc=$? ($(( $(date +%s) - T0 )) s)"
  grep -E "SUMMARY|SWEEP|FAIL|Error|error:|tdist-run:|failure\(s\)" "$OUT/$name.log" | grep -v "scenario errors" | head -40
}
for s in ${STEPS:-worker gpus pair mps}; do
  case $s in
    worker) TDIST_KERNELS_ONLY=${WORKER_ONLY:-} step "worker-$G" 150 $R -n "$G" --timeout 150 -- \
              python3 tests/gpu_kernels/gpu_worker.py ;;
    wmps) CUDA_VISIBLE_DEVICES=0 TDIST_KERNELS_ONLY=${WMPS_ONLY-${WORKER_ONLY:-}} step "worker-2-mps" 150 $R -n 2 --timeout 150 -- \
              python3 tests/gpu_kernels/gpu_worker.py ;;
    gpus) step "bench-$G-gpus" 200 $R -n "$G" --timeout 200 -- $BENCH $A2A $GEMM $AR --json "$OUT/bench-$G-gpus.json" ;;
    pair) [ "$G" -gt 2 ] && CUDA_VISIBLE_DEVICES=0,1 step "bench-2-gpus" 150 $R -n 2 --timeout 150 -- \
              $BENCH $A2A $GEMM $AR --json "$OUT/bench-2-gpus.json" ;;
    mps) CUDA_VISIBLE_DEVICES=0 step "bench-2-mps" 200 $R -n 2 --timeout 200 -- \
              $BENCH --a2a-mb 16,64,256 --gemm-shapes 4096x4096x4096,8192x8192x3584 --impls cublas,cublas_ce,cublas_whole \
              --ar-bytes 4096,65536 \
              --json "$OUT/bench-2-mps.json" ;;
    big) step "bench-$G-gpus-1gib" 120 $R -n "$G" --timeout 120 -- $BENCH --ops a2a --a2a-mb 1024 --heap-gib 12 \
              --json "$OUT/bench-$G-gpus-1gib.json" ;;
    sweep) step "sweep-$G" 160 $R -n "$G" --timeout 160 -- python3 benchmarks/gpu_kernels/sweep_a2a.py --graph ;;
  esac
done
