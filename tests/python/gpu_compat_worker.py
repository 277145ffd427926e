"""One rank of the Triton-distributed compatibility run on the GPU; run under tools/tdist-run
(test_gpu.py::test_gpu_compat_worker does). The host side is written with Triton-distributed's
``triton_dist.utils`` names only, the kernels are tutorial_kernels.py. Every check prints PASS/FAIL;
the process exits 1 if any failed.

Fresh random inputs each run: rank 0 draws a seed, every rank rebuilds any rank's input from (seed,
rank, step), and each result is compared exactly with a reference (data that only moves, and GEMMs
on small integers, whose fp32 sums are exact).
"""
import os
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import tutorial_kernels as tk  # noqa: E402
from triton_dist.utils import (NVSHMEM_SIGNAL_DTYPE, dist_print, finalize_distributed,  # noqa: E402
                               initialize_distributed, nvshmem_barrier_all_on_stream, nvshmem_create_tensor,
                               nvshmem_create_tensors, nvshmem_free_tensor_sync, perf_func)

failures = []
SEED = 0


def check(name, cond, detail=""):
    print(f"{'PASS' if cond else 'FAIL'} {name} {detail}", flush=True)
    if not cond:
        failures.append(name)


def gen(step, rank, shape, dtype, lo=-8, hi=8):
    """The input rank ``rank`` uses at ``step``; small integers (exact in fp16 and in fp32 sums)."""
    g = torch.Generator(device="cpu").manual_seed(SEED * 1000003 + step * 1009 + rank)
    return torch.randint(lo, hi + 1, shape, generator=g, dtype=torch.int64).to(dtype)


def barrier():
    torch.cuda.synchronize()
    nvshmem_barrier_all_on_stream(torch.cuda.current_stream())
    torch.cuda.synchronize()


def scenario_queue(rank, world):
    QUEUE_SIZE, BLOCK, N_IN = 8, 128, 203
    queue = nvshmem_create_tensor((QUEUE_SIZE * BLOCK, ), torch.float32)
    signal = nvshmem_create_tensor((QUEUE_SIZE, ), NVSHMEM_SIGNAL_DTYPE)
    ok = True
    for it in range(3):
        queue.fill_(-1)
        signal.fill_(0)
        x = gen(10 + it, rank, (N_IN * BLOCK, ), torch.float32).cuda()
        out = torch.full_like(x, float("nan"))
        barrier()
        tk.queue_kernel[(6, )](rank, world, x, out, N_IN, queue, signal, QUEUE_SIZE, BLOCK, 4, 2, num_warps=4)
        barrier()
        ok &= torch.equal(out.cpu(), gen(10 + it, (rank - 1) % world, (N_IN * BLOCK, ), torch.float32))
    check("tutorial notify/wait queue (3 launches)", ok)
    nvshmem_free_tensor_sync(signal)
    nvshmem_free_tensor_sync(queue)


def scenario_allgather(rank, world):
    epr = 4096 + 8
    buf = nvshmem_create_tensor((world * epr, ), torch.bfloat16)
    sig = nvshmem_create_tensor((world, ), NVSHMEM_SIGNAL_DTYPE)
    sig.fill_(0)
    ok = True
    for it in range(3):
        buf.fill_(float("nan"))
        buf[rank * epr:(rank + 1) * epr].copy_(gen(20 + it, rank, (epr, ), torch.bfloat16).cuda())
        barrier()
        if world > 1:
            tk.allgather_push_kernel[(world - 1, )](buf, sig, epr, 2, it + 1, rank, world, num_warps=8)
        barrier()
        want = torch.cat([gen(20 + it, r, (epr, ), torch.bfloat16) for r in range(world)])
        ok &= torch.equal(buf.cpu(), want) and bool((sig.cpu() == it + 1).sum() >= world - 1)
    check("tutorial intra-node all-gather (putmem_signal_block, 3 launches)", ok)
    nvshmem_free_tensor_sync(sig)
    nvshmem_free_tensor_sync(buf)


def scenario_reduce_scatter(rank, world):
    M_per, N = 48, 128
    recv = nvshmem_create_tensor((world, M_per, N), torch.float16)
    sig = nvshmem_create_tensor((world, ), NVSHMEM_SIGNAL_DTYPE)
    sig.fill_(0)
    ok = True
    for it in range(3):
        x = gen(30 + it, rank, (world, M_per, N), torch.float16).cuda()
        out = torch.full((M_per, N), float("nan"), dtype=torch.float16, device="cuda")
        barrier()
        tk.reduce_scatter_kernel[(world, )](x, recv, sig, out, it + 1, rank, world, M_per, N, BLOCK_M=16, BLOCK_N=128,
                                            num_warps=4)
        barrier()
        want = sum(gen(30 + it, r, (world, M_per, N), torch.float32)[rank] for r in range(world)).to(torch.float16)
        ok &= torch.equal(out.cpu(), want)
    check("tutorial intra-node reduce-scatter (putmem_nbi_block + quiet + contiguous dl.wait)", ok)
    nvshmem_free_tensor_sync(sig)
    nvshmem_free_tensor_sync(recv)


def scenario_ag_gemm(rank, world):
    M_per, K, N = 96, 128, 128  # 64-row tiles straddle ranks: their waits cover two slots
    M = M_per * world
    ag = nvshmem_create_tensor((M, K), torch.float16)
    ready = nvshmem_create_tensor((world, ), NVSHMEM_SIGNAL_DTYPE)
    ready.fill_(0)
    producer_stream = torch.cuda.Stream()
    ok = True
    for it in range(3):
        b = gen(40 + it, 999, (K, N), torch.float16, -2, 2).cuda()
        ag.fill_(float("nan"))
        ag[rank * M_per:(rank + 1) * M_per].copy_(gen(40 + it, rank, (M_per, K), torch.float16, -2, 2).cuda())
        ready[rank].fill_(it + 1)
        c = torch.full((M, N), float("nan"), dtype=torch.float32, device="cuda")
        barrier()
        producer_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(producer_stream):
            if world > 1:
                tk.ag_producer_kernel[(world - 1, )](ag, ready, it + 1, M_per, K, rank, world, num_warps=8)
        grid = (triton_cdiv(M, 64) * triton_cdiv(N, 64), )
        tk.ag_consumer_gemm_kernel[grid](ag, b, c, M, N, K, rank, world, ready, it + 1, BLOCK_SIZE_M=64,
                                         BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, num_warps=4)
        torch.cuda.current_stream().wait_stream(producer_stream)
        barrier()
        a_full = torch.cat([gen(40 + it, r, (M_per, K), torch.float32, -2, 2) for r in range(world)])
        ok &= torch.equal(c.cpu(), a_full @ gen(40 + it, 999, (K, N), torch.float32, -2, 2))
    check("tutorial AG+GEMM (producer + GEMM waiting on contiguous slots, 3 launches)", ok)
    nvshmem_free_tensor_sync(ready)
    nvshmem_free_tensor_sync(ag)


def triton_cdiv(a, b):
    return -(-a // b)


def scenario_gemm_rs(rank, world):
    M_per, K, N = 64, 64, 128
    M = M_per * world
    scatter = nvshmem_create_tensor((world, M_per, N), torch.float32)
    tiles = (M_per // 64) * triton_cdiv(N, 64)
    counter = nvshmem_create_tensor((tiles, ), NVSHMEM_SIGNAL_DTYPE)
    counter.fill_(0)
    ok = True
    for it in range(3):
        a = gen(50 + it, rank, (M, K), torch.float16, -2, 2).cuda()
        b = gen(60 + it, rank, (K, N), torch.float16, -2, 2).cuda()
        out = torch.full((M_per, N), float("nan"), dtype=torch.float32, device="cuda")
        barrier()
        tk.gemm_rs_producer_kernel[(triton_cdiv(M, 64) * triton_cdiv(N, 64), )](
            a, b, scatter, counter, M, N, K, BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, num_warps=4)
        tk.gemm_rs_reduce_kernel[(tiles, )](scatter, counter, out, world * (it + 1), M_per, N, BLOCK_SIZE_M=64,
                                            BLOCK_SIZE_N=64, num_warps=4)
        barrier()
        full = sum(gen(50 + it, r, (M, K), torch.float32, -2, 2) @ gen(60 + it, r, (K, N), torch.float32, -2, 2)
                   for r in range(world))
        ok &= torch.equal(out.cpu(), full[rank * M_per:(rank + 1) * M_per])
    check("tutorial GEMM+RS (tiles into the owner + add-notify, reduction waits, 3 launches)", ok)
    nvshmem_free_tensor_sync(counter)
    nvshmem_free_tensor_sync(scatter)


def _splits(step, r, world, max_m):
    g = torch.Generator(device="cpu").manual_seed(SEED * 7 + step * 131 + r)
    return torch.randint(0, max_m + 1, (world, ), generator=g, dtype=torch.int64)


def scenario_all_to_all(rank, world):
    HIDDEN, MAX_M, BM = 128, 64, 16
    data_src = nvshmem_create_tensor((world * MAX_M, HIDDEN), torch.float16)
    data_dst = nvshmem_create_tensor((2, world, MAX_M, HIDDEN), torch.float16)
    splits_src = nvshmem_create_tensor((world, ), torch.int32)
    splits_dst = nvshmem_create_tensor((2, world), torch.int32)
    signal = nvshmem_create_tensor((2, world), NVSHMEM_SIGNAL_DTYPE)
    signal.fill_(0)
    ok = True
    for it in range(4):
        act_pos = it % 2
        sp = _splits(70 + it, rank, world, MAX_M)
        tokens = gen(70 + it, rank, (int(sp.sum()), HIDDEN), torch.float16, -1000, 1000).cuda()
        cumsum = torch.zeros(world + 1, dtype=torch.int32)
        cumsum[1:] = torch.cumsum(sp, 0).to(torch.int32)
        data_dst[act_pos].fill_(float("nan"))
        splits_dst[act_pos].fill_(-1)
        barrier()
        tk.all_to_all_kernel[(world, )](tokens, data_src, data_dst, splits_src, splits_dst, signal, cumsum.cuda(),
                                        rank, it + 1, act_pos, WORLD_SIZE=world, HIDDEN=HIDDEN, MAX_M=MAX_M, BM=BM,
                                        num_warps=4)
        barrier()
        got_splits = splits_dst[act_pos].cpu()
        for s in range(world):
            ssp = _splits(70 + it, s, world, MAX_M)
            n = int(ssp[rank])
            st = int(ssp[:rank].sum())
            src_tokens = gen(70 + it, s, (int(ssp.sum()), HIDDEN), torch.float16, -1000, 1000)
            ok &= int(got_splits[s]) == n
            ok &= torch.equal(data_dst[act_pos, s, :n].cpu(), src_tokens[st:st + n])
    check("tutorial DeepSeek-style all-to-all (putmem_nbi_block, thread-0 signal, 4 launches)", ok)
    for t in (signal, splits_dst, splits_src, data_dst, data_src):
        nvshmem_free_tensor_sync(t)


def scenario_api(rank, world):
    # team queries, int_p / int_g, every scope of the barriers, atomics
    output = torch.full((9, ), -7, dtype=torch.int32, device="cuda")
    flag = torch.zeros(1, dtype=torch.int32, device="cuda")
    symm = nvshmem_create_tensor((world, ), torch.int32)
    symm.fill_(-1)
    counter = torch.zeros(1, dtype=torch.int32, device="cuda")
    barrier()
    tk.api_basic_kernel[(1, )](output, flag, symm, counter, num_warps=4)
    barrier()
    prev, peer = (rank - 1) % world, (rank + 1) % world
    want = [rank, rank, rank, world, world, peer, -1, prev + 100, 0]
    check("libshmem_device team calls, int_p / int_g, barrier scopes", output.cpu().tolist() == want,
          str(output.cpu().tolist()))
    check("language_extra atomic_add", int(counter.item()) == 1)
    nvshmem_free_tensor_sync(symm)
    # puts and gets in every scope, blocking and nbi, aligned and odd sizes
    sig = nvshmem_create_tensor((world, ), NVSHMEM_SIGNAL_DTYPE)
    sig.zero_()
    calls = 0
    for nbytes in (4096, 1000):
        src = nvshmem_create_tensor((nbytes, ), torch.uint8)
        dst = nvshmem_create_tensor((world * nbytes, ), torch.uint8)
        for scope in ("block", "warp", "thread"):
            for nbi in (False, True):
                calls += 1
                src.copy_(gen(80 + calls, rank, (nbytes, ), torch.uint8, 0, 255).cuda())
                dst.fill_(0xA5)
                barrier()
                tk.api_rma_kernel[(world, )](dst, src, nbytes, sig, calls, scope, nbi, num_warps=4)
                barrier()
                got = dst.cpu().view(world, nbytes)
                ok = all(torch.equal(got[p], gen(80 + calls, p, (nbytes, ), torch.uint8, 0, 255))
                         for p in range(world) if p != rank)
                check(f"putmem{'_nbi' if nbi else ''} {scope} scope, {nbytes} bytes", ok)
            local = torch.full((world * nbytes, ), 0x5A, dtype=torch.uint8, device="cuda")
            barrier()
            tk.api_get_kernel[(world, )](local, src, nbytes, scope, num_warps=4)
            barrier()
            got = local.cpu().view(world, nbytes)
            ok = all(torch.equal(got[p], gen(80 + calls, p, (nbytes, ), torch.uint8, 0, 255))
                     for p in range(world) if p != rank)
            check(f"getmem {scope} scope, {nbytes} bytes", ok)
        nvshmem_free_tensor_sync(dst)
        nvshmem_free_tensor_sync(src)
    nvshmem_free_tensor_sync(sig)
    # broadcast / fcollect in every scope
    nelems = 777
    src = nvshmem_create_tensor((nelems, ), torch.int32)
    dst = nvshmem_create_tensor((world * nelems, ), torch.int32)
    step = 0
    for scope in ("block", "warp", "thread"):
        for kind in ("broadcast", "fcollect"):
            step += 1
            root = step % world
            src.copy_(gen(90 + step, rank, (nelems, ), torch.int32, -10**6, 10**6).cuda())
            dst.fill_(-1)
            barrier()
            tk.api_collective_kernel[(1, )](dst, src, nelems, root, scope, kind, num_warps=4)
            barrier()
            if kind == "broadcast":
                ok = torch.equal(dst[:nelems].cpu(), gen(90 + step, root, (nelems, ), torch.int32, -10**6, 10**6))
            else:
                want = torch.cat([gen(90 + step, p, (nelems, ), torch.int32, -10**6, 10**6) for p in range(world)])
                ok = torch.equal(dst.cpu(), want)
            check(f"{kind} {scope} scope", ok)
    nvshmem_free_tensor_sync(dst)
    nvshmem_free_tensor_sync(src)


def scenario_host(rank, world, group):
    check("initialize_distributed group", group.rank() == rank and group.size() == world)
    check("NVSHMEM_SIGNAL_DTYPE", NVSHMEM_SIGNAL_DTYPE == torch.int64)
    lst = nvshmem_create_tensors((world, ), torch.int32, rank, world)
    check("nvshmem_create_tensors gives every rank's copy", len(lst) == world and lst[rank].data_ptr() != 0)
    lst[rank].fill_(-1)
    barrier()
    for p in range(world):
        lst[p][rank] = rank * 10 + p  # writes through the peer views
    barrier()
    check("nvshmem_create_tensors peer views", lst[rank].cpu().tolist() == [r * 10 + rank for r in range(world)])
    nvshmem_free_tensor_sync(lst[rank])
    x = torch.ones(1024, device="cuda")
    out, ms = perf_func(lambda: x * 2, iters=5, warmup_iters=2)
    check("perf_func", torch.equal(out, x * 2) and ms > 0, f"{ms:.4f} ms")
    dist_print(f"rank {rank} dist_print", need_sync=True, allowed_ranks="all", prefix=True)


def main():
    global SEED
    group = initialize_distributed(local_mem_size=256 << 20)
    rank, world = group.rank(), group.size()
    import tdist
    SEED = int.from_bytes(tdist.ctrl_broadcast(os.urandom(4), 0), "little")
    for name, fn in (("host", lambda: scenario_host(rank, world, group)),
                     ("queue", lambda: scenario_queue(rank, world)),
                     ("allgather", lambda: scenario_allgather(rank, world)),
                     ("reduce_scatter", lambda: scenario_reduce_scatter(rank, world)),
                     ("ag_gemm", lambda: scenario_ag_gemm(rank, world)),
                     ("gemm_rs", lambda: scenario_gemm_rs(rank, world)),
                     ("all_to_all", lambda: scenario_all_to_all(rank, world)),
                     ("api", lambda: scenario_api(rank, world))):
        only = os.environ.get("TDIST_COMPAT_ONLY", "")  # comma-separated scenario names
        if only and name not in only.split(","):
            continue
        try:
            fn()
        except Exception:
            traceback.print_exc()
            check(f"scenario {name} raised", False)
    finalize_distributed()
    check("finalize_distributed", not tdist.initialized())
    print(f"rank {rank}: {len(failures)} failure(s): {failures}", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
