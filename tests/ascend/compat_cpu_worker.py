"""Triton-distributed's names on CPU ranks (triton-ascend's front end, the Ascend lowering):

    TDIST_PLATFORM=cpu PYTHONPATH=python python3 tools/tdist-run -n 2 -- \\
        .venv-ascend/bin/python tests/ascend/compat_cpu_worker.py

the host helpers of ``triton_dist.utils`` on numpy arrays, ``triton_dist.language.extra.ascend.algorithm``,
libshmem_device's team / p / wait / barrier names, ``dl.wait(..., slot_stride=1)`` over consecutive
slots, and the ``triton.language.extra.cann.extension`` import of Ascend kernels. Every check prints
PASS/FAIL; the exit status is nonzero if one failed.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import triton_dist.language as dl  # noqa: E402
from triton_dist.language.extra import libshmem_device as shm  # noqa: E402
from triton_dist.language.extra.ascend.algorithm import dist_swizzle2d_Nz, gemm_swizzle2d_Nz  # noqa: E402
from triton.language.extra.cann.extension import sub_vec_id  # noqa: E402  (as Ascend kernels import it)
from triton_dist.utils import (NVSHMEM_SIGNAL_DTYPE, dist_print, finalize_distributed,  # noqa: E402
                               initialize_distributed, nvshmem_barrier_all_on_stream, nvshmem_create_tensor,
                               nvshmem_create_tensors, nvshmem_free_tensor_sync, perf_func)

failures = []


def check(name, cond, detail=""):
    print(f"{'PASS' if cond else 'FAIL'} {name} {detail}", flush=True)
    if not cond:
        failures.append(name)


@triton.jit
def swizzle_kernel(out_g, out_d, n_iter, rank_size, M, N, TM, TN, SWIZZLE: tl.constexpr, SPLIT: tl.constexpr):
    if sub_vec_id() == 0:
        for i in range(0, n_iter):
            r, c = gemm_swizzle2d_Nz(i, M, N, TM, TN, SWIZZLE)
            tl.store(out_g + 2 * i, r)
            tl.store(out_g + 2 * i + 1, c)
            a, b, rk, rs, cs = dist_swizzle2d_Nz(i, rank_size, M, N, TM, TN, SPLIT)
            tl.store(out_d + 5 * i, a)
            tl.store(out_d + 5 * i + 1, b)
            tl.store(out_d + 5 * i + 2, rk)
            tl.store(out_d + 5 * i + 3, rs)
            tl.store(out_d + 5 * i + 4, cs)


def gemm_order(R, C, off):
    order = []
    for start in range(0, C, off):
        band = start // off
        for r in (range(R) if band % 2 == 0 else reversed(range(R))):
            order.extend((r, c) for c in range(start, min(start + off, C)))
    return order


def dist_order(size, M, N, tm, tn, split):
    R, C = -(-M // tm), -(-N // tn)
    T = R * C
    out = []
    for i in range(size * T):
        g, k = divmod(i, split * T)
        gsize = min(split, size - g * split)
        tile, j = divmod(k, gsize)
        rank = ((g * split + j) * (size // split)) // size
        rank = (rank + tile) % size
        row, col = divmod(tile, C)
        out.append((row, col, rank, min(M - row * tm, tm), min(N - col * tn, tn)))
    return out


def scenario_swizzle(rank, world):
    from triton_dist import cpu
    M, N, TM, TN = 100, 230, 32, 32  # 4 x 8 tiles, ragged edges
    R, C = -(-M // TM), -(-N // TN)
    for swizzle, split in ((3, 1), (7, 1), (5, 2)):
        n_iter = world * R * C
        g = np.full(2 * n_iter, -1, dtype=np.int32)
        d = np.full(5 * n_iter, -1, dtype=np.int32)
        cpu.launch(swizzle_kernel, 1, g, d, n_iter, world, M, N, TM, TN, SWIZZLE=swizzle, SPLIT=split)
        want_g = gemm_order(R, C, swizzle)
        got_g = [tuple(x) for x in g.reshape(-1, 2)[:R * C]]
        check(f"gemm_swizzle2d_Nz offset {swizzle}", got_g == want_g and sorted(got_g) == sorted(
            (r, c) for r in range(R) for c in range(C)))
        got_d = [tuple(x) for x in d.reshape(-1, 5)]
        ok = got_d == dist_order(world, M, N, TM, TN, split)
        if split == 1:  # every (tile, rank) once
            ok &= len({(a, b, rk) for a, b, rk, _, _ in got_d}) == n_iter
        check(f"dist_swizzle2d_Nz split {split}", ok)


@triton.jit
def api_kernel(out, out64, symm32, sig64):
    me = shm.my_pe()
    n = shm.n_pes()
    peer = (me + 1) % n
    prev = (me + n - 1) % n
    tl.store(out, shm.team_my_pe(shm.NVSHMEM_TEAM_WORLD))
    tl.store(out + 1, shm.team_n_pes(shm.NVSHMEMX_TEAM_NODE))
    tl.store(out + 2, shm.team_translate_pe(shm.NVSHMEM_TEAM_WORLD, peer, shm.NVSHMEM_TEAM_SHARED))
    tl.store(out + 3, shm.team_translate_pe(shm.NVSHMEM_TEAM_WORLD, n, shm.NVSHMEM_TEAM_WORLD))
    shm.int_p(symm32 + me, me + 100, peer)
    shm.int64_p(sig64 + me, me + 7, peer)
    shm.barrier(shm.NVSHMEM_TEAM_WORLD)
    shm.sync_all()
    tl.store(out + 4, shm.int32_wait_until_equals(symm32 + prev, prev + 100))
    tl.store(out64, shm.int64_wait_until(sig64 + prev, shm.NVSHMEM_CMP_GE, prev + 7))
    tl.store(out64 + 1, shm.int64_wait_until_equals(sig64 + prev, prev + 7))
    shm.quiet_pe(peer)


def scenario_api(rank, world):
    from triton_dist import cpu
    out = np.full(5, -9, dtype=np.int32)
    out64 = np.full(2, -9, dtype=np.int64)
    symm = nvshmem_create_tensor((world, ), np.int32)
    sig = nvshmem_create_tensor((world, ), NVSHMEM_SIGNAL_DTYPE)
    symm.fill(-1)
    sig.fill(0)
    nvshmem_barrier_all_on_stream()
    cpu.launch(api_kernel, 1, out, out64, symm, sig)
    nvshmem_barrier_all_on_stream()
    prev, peer = (rank - 1) % world, (rank + 1) % world
    want = [rank, world, peer, -1, prev + 100, prev + 7, prev + 7]
    got = out.tolist() + out64.tolist()
    check("libshmem_device teams, int_p / int64_p, typed waits, barrier(team), sync_all", got == want, str(got))
    nvshmem_free_tensor_sync(sig)
    nvshmem_free_tensor_sync(symm)


@triton.jit
def gather_kernel(sig, data, out, value, WORLD: tl.constexpr):
    me = dl.rank()
    for r in range(0, WORLD):
        tl.store(dl.symm_at(data, r) + me, value + me)
        dl.notify(sig + me, r, value, sig_op="set")
    token = dl.wait(sig, WORLD, "gpu", "acquire", waitValue=value, slot_stride=1)
    d = dl.consume_token(data, token)
    for r in range(0, WORLD):
        tl.store(out + r, tl.load(d + r))


def scenario_contiguous_wait(rank, world):
    from triton_dist import cpu
    sig = nvshmem_create_tensor((world, ), NVSHMEM_SIGNAL_DTYPE)
    data = nvshmem_create_tensor((world, ), np.int64)
    sig.fill(0)
    nvshmem_barrier_all_on_stream()
    ok = True
    for value in (11, 12, 13):  # the slots only grow: no reset between launches
        out = np.full(world, -1, dtype=np.int64)
        cpu.launch(gather_kernel, 1, sig, data, out, value, WORLD=world)
        ok &= out.tolist() == [value + r for r in range(world)]
        nvshmem_barrier_all_on_stream()
    check("dl.wait(slot_stride=1) over consecutive int64 slots (3 launches)", ok)
    nvshmem_free_tensor_sync(data)
    nvshmem_free_tensor_sync(sig)


def scenario_host(rank, world, group):
    check("initialize_distributed group", group.rank() == rank and group.size() == world)
    check("NVSHMEM_SIGNAL_DTYPE without torch", NVSHMEM_SIGNAL_DTYPE is np.int64)
    lst = nvshmem_create_tensors((world, ), np.int32, rank, world)
    lst[rank].fill(-1)
    nvshmem_barrier_all_on_stream()
    for p in range(world):
        lst[p][rank] = rank * 10 + p
    nvshmem_barrier_all_on_stream()
    check("nvshmem_create_tensors peer views", lst[rank].tolist() == [r * 10 + rank for r in range(world)])
    nvshmem_free_tensor_sync(lst[rank])
    out, ms = perf_func(lambda: rank + 1, iters=3, warmup_iters=1)
    check("perf_func", out == rank + 1 and ms >= 0)
    dist_print(f"rank {rank} dist_print", need_sync=True, allowed_ranks="all", prefix=True)


def main():
    group = initialize_distributed(local_mem_size=1 << 24)
    rank, world = group.rank(), group.size()
    for name, fn in (("host", lambda: scenario_host(rank, world, group)),
                     ("swizzle", lambda: scenario_swizzle(rank, world)),
                     ("api", lambda: scenario_api(rank, world)),
                     ("contiguous_wait", lambda: scenario_contiguous_wait(rank, world))):
        try:
            fn()
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            check(f"scenario {name} raised", False, repr(e)[:200])
    finalize_distributed()
    import tdist
    check("finalize_distributed", not tdist.initialized())
    print(f"rank {rank}: {len(failures)} failure(s): {failures}", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
