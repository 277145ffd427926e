#!/bin/bash
# One device call on a machine of several GPUs (issue: multi-GPU run). One rank per GPU, P2P over
# NVLink, no MPS; then, on GPU 0 alone, the several-ranks-per-GPU (MPS) figures of the same code.
# Carry: .carry/ (bitcode + cp312 wheel) and build-nvidia/{runtime/libtdist.so,tests/gpu/tdist_gpu_tests,
# benchmarks/gpu/tdist_gpu_bench,tools}.
#   usage: OUT=... tests/gpu/multi_gpu_run.sh
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/mg-out}
mkdir -p "$OUT"
G=$(nvidia-smi -L | grep -c '^GPU ')
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1; head -5 "$OUT/topo.txt"
export LD_LIBRARY_PATH=$PWD/build-nvidia/runtime:${LD_LIBRARY_PATH:-}
RUN="python3 build-nvidia/tools/tdist-run"
cp tools/tdist_mps.py tools/tdist-run build-nvidia/tools/ 2>/dev/null
# 1. GPU suite and runtime benchmark, one rank per GPU
timeout 130 $RUN -n "$G" --timeout 120 --wait-timeout-ms 10000 -- build-nvidia/tests/gpu/tdist_gpu_tests > "$OUT/suite-$G.log" 2>&1
echo "== gpu suite, $G ranks on $G GPUs: rc=$?"
grep -E "^\[rank 0\] \[  (PASSED|FAILED|SKIPPED) |Failure|tdist-run:" "$OUT/suite-$G.log" | head -20
B=build-nvidia/benchmarks/gpu/tdist_gpu_bench
{
  if [ -z "${NO_P2P_BENCH:-}" ]; then  # NO_P2P_BENCH=1: pingpong and put were measured on another run
    timeout 60 $RUN -n 2 --timeout 55 -- $B pingpong
    timeout 60 $RUN -n 2 --timeout 55 -- $B put
  fi
  timeout 40 $RUN -n "$G" --timeout 35 -- $B barrier
} > "$OUT/rtbench-$G.log" 2>&1
grep -E "ratio|us per barrier|GB/s|rc=|tdist-run|error|fail" "$OUT/rtbench-$G.log" | head -30
# 2. kernels: correctness and benchmark (with NCCL) one rank per GPU, eager and CUDA-graph replays
BA="${BENCH_ARGS:---a2a-mb 1,16,64,256 --gemm-shapes 4096x4096x4096,8192x8192x3584 --reps 10}"
# EAGER=0: the CUDA-graph benchmark only (the worker still runs)
EB="$G"; [ "${EAGER:-1}" = 0 ] && EB=""
NS="$G" BN="$EB" TAG=-gpus BENCH_T=${BENCH_T:-150} BENCH_ARGS="$BA" OUT="$OUT" bash tests/gpu_kernels/device_run.sh
NS="" BN="$G" TAG=-gpus-graph BENCH_T=${BENCH_T:-150} BENCH_ARGS="$BA --graph ${GRAPH_ARGS:-}" OUT="$OUT" bash tests/gpu_kernels/device_run.sh
# 3. the same kernels, ranks sharing GPU 0 under MPS (the one-GPU goals)
if [ -n "${MPS_NS-2}" ]; then  # MPS_NS="" skips this part
  CUDA_VISIBLE_DEVICES=0 NS="${MPS_NS-2}" BN="${MPS_BN:-2}" TAG=-mps BENCH_T=150 \
    BENCH_ARGS="--a2a-mb 16,64 --gemm-shapes 4096x4096x4096 --ar-bytes 262144,67108864 --reps 10" \
    OUT="$OUT" bash tests/gpu_kernels/device_run.sh
fi
