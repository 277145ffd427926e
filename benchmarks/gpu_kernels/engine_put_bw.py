"""Put bandwidth through tdist's device API, and its check, for the NVIDIA backend's ROCE engine.

Run one rank per process (tools/tdist-run -n 2): PE 0 puts ``size`` bytes into PE 1's symmetric
buffer with ``--blocks`` programs, each putting its share with libshmem_device.putmem_nbi_block and
then quiet, ``--iters`` times in one launch (so the host's launch rate is not measured), timed with
CUDA events on PE 0 (started behind a GPU spin, so the host's launch is not in the window): the
kernel of NVSHMEM's shmem_put_bw perftest, written with tdist's names.
With ``TDIST_ROCE_PEERS=all`` the peer is reached through the NVSHMEM engine (the runtime reports
it: engine bitcode set, no p2p address for the peer); without it through the load/store path.
benchmarks/gpu_kernels/nvshmem_put_bw.cu is the same measurement with NVSHMEM's own API, for the
ratio in the notes (benchmarks/gpu_kernels/engine_bw.sh runs both).

After the timing PE 1 compares what arrived with what PE 0 sent, exactly (fresh random bytes each
run). Prints one JSON line per size on PE 0; exits 1 if a check failed.
"""
import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import torch  # noqa: E402
import triton.language as tl  # noqa: E402

import shmem as ash  # noqa: E402
import tdist  # noqa: E402
import triton_dist  # noqa: E402
from triton_dist.language.extra import libshmem_device  # noqa: E402
from triton_dist.language.extra.language_extra import __syncthreads, tid  # noqa: E402
from triton_dist.utils import _size_bytes, nvshmem_create_tensor, nvshmem_free_tensor_sync  # noqa: E402


@triton_dist.jit
def put_kernel(dst, src, nbytes, peer, reps):
    pid = tl.program_id(0)
    per = tl.cdiv(nbytes, tl.num_programs(0))
    start = pid * per
    cnt = tl.minimum(per, nbytes - start)
    for _ in range(reps):
        if cnt > 0:
            libshmem_device.putmem_nbi_block(dst + start, src + start, cnt, peer)
        if tid(0) == 0:  # after the put's exit join, as NVSHMEM's perftest: one quiet per program
            libshmem_device.quiet()
        __syncthreads()


SPIN_CYCLES = 4_000_000  # about 2 ms at the H200's clock


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="64K,1M,16M,64M")
    ap.add_argument("--blocks", type=int, default=32)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    a = ap.parse_args()
    sizes = [_size_bytes(s) for s in a.sizes.split(",")]
    me, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    assert world == 2, "engine_put_bw.py runs at 2 ranks"
    torch.cuda.set_device(0)
    ash.init_from_env(local_mem_size=2 * max(sizes) + (64 << 20), backend=tdist.BACKEND_CUDA)
    engine_bc = tdist._C.cuda_engine_bitcode()
    seed = int.from_bytes(tdist.ctrl_broadcast(os.urandom(4), 0), "little")
    src = nvshmem_create_tensor((max(sizes), ), torch.uint8)
    dst = nvshmem_create_tensor((max(sizes), ), torch.uint8)
    peer = 1 - me
    p2p = tdist.ptr(dst.data_ptr(), peer)
    path = "engine" if engine_bc else "load/store"
    if me == 0:
        print(f"path {path}: engine bitcode {engine_bc}, p2p address of the peer {p2p:#x}", flush=True)
    failed = []
    if (engine_bc is not None) != (p2p == 0):
        failed.append(f"the runtime reports the engine ({engine_bc}) but the peer has p2p address {p2p:#x}")
    stream = torch.cuda.current_stream()
    for n in sizes:
        g = torch.Generator().manual_seed(seed * 7919 + n)
        data = torch.randint(0, 256, (n, ), generator=g, dtype=torch.uint8)
        if me == 0:
            src[:n].copy_(data.cuda())
        dst.fill_(0xA5 if me == 1 else 0)
        torch.cuda.synchronize()
        tdist.host_barrier_all()
        if me == 0:
            put_kernel[(a.blocks, )](dst, src, n, peer, a.warmup, num_warps=4)
            t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            # the GPU spins while the host launches the timed kernel (a Python launch takes tens of
            # microseconds), so the window holds the kernel and not the host's launch gap
            torch.cuda._sleep(SPIN_CYCLES)
            t0.record(stream)
            put_kernel[(a.blocks, )](dst, src, n, peer, a.iters, num_warps=4)
            t1.record(stream)
            torch.cuda.synchronize()
            us = t0.elapsed_time(t1) * 1e3 / a.iters
            print(json.dumps({"impl": "tdist", "path": path, "bytes": n, "blocks": a.blocks, "us": round(us, 2),
                              "GBps": round(n / us / 1e3, 2)}), flush=True)
        torch.cuda.synchronize()
        tdist.host_barrier_all()
        if me == 1 and not torch.equal(dst[:n].cpu(), data):
            bad = int((dst[:n].cpu() != data).sum())
            failed.append(f"{n} bytes: {bad} bytes differ")
        print(f"{'PASS' if not failed else 'FAIL'} rank {me} {path} put of {n} bytes arrived exactly", flush=True)
    nvshmem_free_tensor_sync(dst)
    nvshmem_free_tensor_sync(src)
    ash.aclshmem_finalize()
    if failed:
        print(f"rank {me}: FAIL {failed}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
