#!/usr/bin/env bash
# Put bandwidth through the NVIDIA backend's ROCE engine (NVSHMEM) against NVSHMEM's own, in one run:
# ROUNDS rounds, each running, at 2 ranks on this machine's GPU(s):
#   engine_put_bw.py with TDIST_ROCE_PEERS=all  (tdist's putmem_nbi_block through the NVSHMEM engine)
#   nvshmem_put_bw                               (the same kernel on NVSHMEM's API, NVSHMEM's transport;
#                                                 then again with a system fence before each quiet)
#   engine_put_bw.py without it                  (tdist's load/store path, for reference)
# Usage (after the Python extension is built, e.g. by scripts/gpu-run):
#   benchmarks/gpu_kernels/engine_bw.sh OUT_DIR [ROUNDS] [SIZES] [BLOCKS]
set -u
REPO=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:?usage: engine_bw.sh OUT_DIR [ROUNDS] [SIZES] [BLOCKS]}
ROUNDS=${2:-3}
SIZES=${3:-64K,1M,16M,64M}
BLOCKS=${4:-32}
mkdir -p "$OUT"
NV=$(python3 -c "import nvidia.nvshmem as m; print(list(m.__path__)[0])") || { echo "no nvidia-nvshmem wheel"; exit 1; }
BIN=$OUT/nvshmem_put_bw
nvcc -O3 -arch=sm_90 -rdc=true -I"$NV/include" "$REPO/benchmarks/gpu_kernels/nvshmem_put_bw.cu" \
  "$NV/lib/libnvshmem_device.a" -Xlinker "$NV/lib/libnvshmem_host.so.3" -lcuda -Xlinker -rpath,"$NV/lib" \
  -o "$BIN" || exit 1
RUN=(python3 "$REPO/tools/tdist-run" -n 2 --timeout 240 --)
rc=0
for r in $(seq 1 "$ROUNDS"); do
  TDIST_ROCE_PEERS=all "${RUN[@]}" python3 "$REPO/benchmarks/gpu_kernels/engine_put_bw.py" --sizes "$SIZES" \
    --blocks "$BLOCKS" >"$OUT/engine-$r.log" 2>&1 || rc=1
  "${RUN[@]}" "$BIN" "$OUT/uid-$r.bin" "$SIZES" "$BLOCKS" 50 >"$OUT/nvshmem-$r.log" 2>&1 || rc=1
  "${RUN[@]}" python3 "$REPO/benchmarks/gpu_kernels/engine_put_bw.py" --sizes "$SIZES" --blocks "$BLOCKS" \
    >"$OUT/p2p-$r.log" 2>&1 || rc=1
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, sys
from pathlib import Path
out, rounds = Path(sys.argv[1]), int(sys.argv[2])
rows = {}
for r in range(1, rounds + 1):
    for kind in ("engine", "nvshmem", "p2p"):
        f = out / f"{kind}-{r}.log"
        for line in (f.read_text(errors="replace").splitlines() if f.exists() else []):
            line = line.split("] ", 1)[-1].strip()
            if line.startswith("{"):
                d = json.loads(line)
                key = d["impl"] if kind == "nvshmem" else kind  # nvshmem, nvshmem+fence
                rows.setdefault(d["bytes"], {}).setdefault(key, []).append(d["GBps"])
print("bytes | engine GB/s | NVSHMEM GB/s | engine / NVSHMEM per round | NVSHMEM, a fence before each quiet, "
      "GB/s | load/store GB/s")
for n in sorted(rows):
    e, v, p = rows[n].get("engine", []), rows[n].get("nvshmem", []), rows[n].get("p2p", [])
    f = rows[n].get("nvshmem+fence", [])
    ratios = [round(a / b, 3) for a, b in zip(e, v)]
    print(f"{n} | {e} | {v} | {ratios} | {f} | {p}")
PY
exit $rc
