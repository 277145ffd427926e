"""One rank of the GPU tests; run under tools/tdist-run (test_gpu.py does). Every check prints
PASS/FAIL; the process exits 1 if any failed, so tdist-run fails the job if any rank fails.

Fresh random inputs each run: rank 0 draws a seed and broadcasts it; every rank can regenerate any
peer's data from (seed, peer, iteration), so each receiver checks exactly what it got.
"""
import os
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import shmem as ash  # noqa: E402
import tdist  # noqa: E402
import triton_dist.language as dl  # noqa: E402
from test_extensions_compile import slices_2d  # noqa: E402  (the kernel the compile test checks)
from test_tutorial_compat import (allgather_push_kernel, producer_consumer_kernel,  # noqa: E402
                                  shmem_put_signal_kernel)  # the tutorial-style kernels, run unchanged
from triton_dist.language.extra import libshmem_device as shm  # noqa: E402
from triton_dist.language.extra.cann import extension as ext  # noqa: E402

N = 1024
failures = []


def check(name, cond, detail=""):
    print(f"{'PASS' if cond else 'FAIL'} {name} {detail}", flush=True)
    if not cond:
        failures.append(name)


def data_for(seed, pe, it, dtype=torch.float32, n=N):
    g = torch.Generator(device="cpu").manual_seed(seed * 7919 + pe * 131 + it)
    if dtype.is_floating_point:
        return torch.randn(n, generator=g).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(max(info.min, -1000), min(info.max, 1000), (n,), generator=g, dtype=torch.int64).to(dtype)


@triton.jit
def ring_kernel(src, buf, out, sig, N: tl.constexpr):
    """Program 0 produces into the next rank's buf; program 1 consumes this rank's buf (seed 003),
    with the seed 002 handshake: wait for the slot to be free (0), write, notify 1; the consumer
    waits for 1, reads, then returns the credit by notifying 0 to itself."""
    pid = tl.program_id(0)
    me = dl.rank()
    nxt = (me + 1) % dl.num_ranks()
    offs = tl.arange(0, N)
    if pid == 0:
        tok = dl.wait(dl.symm_at(sig, nxt), 1, "gpu", "acquire", waitValue=0, timeout_ns=20_000_000_000)
        rbuf = dl.consume_token(dl.symm_at(buf, nxt), tok)
        tl.store(rbuf + offs, tl.load(src + offs))
        dl.notify(sig, nxt, 1)
    else:
        tok = dl.wait(sig, 1, "gpu", "acquire", waitValue=1, timeout_ns=20_000_000_000)
        b = dl.consume_token(buf, tok)
        tl.store(out + offs, tl.load(b + offs))
        dl.notify(sig, me, 0)


@triton.jit
def put_all_kernel(src, dst, N: tl.constexpr):
    """Program p writes this rank's src into slot `me` of PE p's dst (symm_at on every dtype)."""
    p = tl.program_id(0)
    me = dl.rank()
    offs = tl.arange(0, N)
    remote = dl.symm_at(dst, p)
    tl.store(remote + me * N + offs, tl.load(src + offs))


@triton.jit
def putmem_signal_kernel(src, dst, sig, nbytes, N: tl.constexpr):
    me = shm.my_pe()
    nxt = (me + 1) % shm.n_pes()
    shm.putmem_signal_block(dst, src, nbytes, sig, 1, shm.SIGNAL_SET, nxt)
    shm.signal_wait_until(sig, shm.CMP_EQ, 1)


@triton.jit
def block_sync_kernel(buf, out, flags, salt, P: tl.constexpr):
    pid = tl.program_id(0)
    for rnd in range(0, 3):  # the barrier is reused within the launch
        tl.store(buf + pid, salt + rnd * 100 + pid)
        ext.sync_block_all("all", 0, flags=flags)
        tl.store(out + rnd * P + pid, tl.load(buf + (pid + 1) % P))
        ext.sync_block_all("all", 0, flags=flags)  # nobody overwrites buf before every read
    if pid == 0:
        tl.store(out + 3 * P, salt)
        ext.sync_block_set("cube", "vector", 1, flags=flags)
    if pid == P - 1:
        ext.sync_block_wait("cube", "vector", 1, flags=flags)
        tl.store(out + 3 * P + 1, tl.load(out + 3 * P) + 1)


def scenario_block_sync(seed, rank):
    P = 8  # far below what fits on the GPU: every program is resident
    salt = (seed + rank) % 1000
    buf = torch.zeros(P, dtype=torch.int32, device="cuda")
    out = torch.full((3 * P + 2,), -1, dtype=torch.int32, device="cuda")
    flags = torch.zeros(32, dtype=torch.int32, device="cuda")
    block_sync_kernel[(P,)](buf, out, flags, salt, P=P)
    torch.cuda.synchronize()
    want = [salt + rnd * 100 + (p + 1) % P for rnd in range(3) for p in range(P)] + [salt, salt + 1]
    check("sync_block_all / sync_block_set / sync_block_wait", out.cpu().tolist() == want, str(out.cpu().tolist()[:10]))


def scenario_ring(seed, rank, world):
    buf = ash.aclshmem_create_tensor([N], torch.float32, device_id=tdist.cuda_device())
    sig = ash.aclshmem_create_tensor([8], torch.int64, device_id=tdist.cuda_device())
    out = torch.empty(N, dtype=torch.float32, device="cuda")
    prev = (rank - 1) % world
    ok = True
    for it in range(3):
        sig.fill_(0)
        buf.fill_(float("nan"))
        out.fill_(float("nan"))
        src = data_for(seed, rank, it).cuda()
        torch.cuda.synchronize()
        ash.barrier_all()  # seed 002: nobody's reset may erase a peer's signal
        ring_kernel[(2,)](src, buf, out, sig, N=N)
        torch.cuda.synchronize()
        ash.barrier_all()
        ok &= torch.equal(out.cpu(), data_for(seed, prev, it))
        ok &= int(sig[0].item()) == 0  # the consumer returned the credit
    check("ring producer/consumer + signal reset (3 launches)", ok)
    ash.aclshmem_free_tensor(sig)
    ash.aclshmem_free_tensor(buf)


def scenario_dtypes(seed, rank, world):
    dtypes = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8, torch.int16, torch.int32,
              torch.int64, torch.uint8]
    for i, dt in enumerate(dtypes):
        dst = ash.aclshmem_create_tensor([world * N], dt, device_id=tdist.cuda_device())
        dst.view(torch.uint8).fill_(0xA5)  # poison
        src = data_for(seed, rank, 100 + i, dt).cuda()
        torch.cuda.synchronize()
        ash.barrier_all()
        put_all_kernel[(world,)](src, dst, N=N)
        torch.cuda.synchronize()
        ash.barrier_all()
        got = dst.cpu().view(world, N)
        ok = all(torch.equal(got[p], data_for(seed, p, 100 + i, dt)) for p in range(world))
        check(f"symm_at put {dt}", ok)
        ash.aclshmem_free_tensor(dst)


def scenario_putmem_signal(seed, rank, world):
    nbytes_list = [N * 4, N * 4 - 3]  # 16-byte path and byte path
    for k, nbytes in enumerate(nbytes_list):
        dst = ash.aclshmem_create_tensor([N], torch.float32, device_id=tdist.cuda_device())
        sig = ash.aclshmem_create_tensor([8], torch.int64, device_id=tdist.cuda_device())
        dst.fill_(float("nan"))
        sig.fill_(0)
        src = ash.aclshmem_create_tensor([N], torch.float32, device_id=tdist.cuda_device())
        src.copy_(data_for(seed, rank, 200 + k).cuda())
        torch.cuda.synchronize()
        ash.barrier_all()
        putmem_signal_kernel[(1,)](src, dst, sig, nbytes, N=N)
        torch.cuda.synchronize()
        ash.barrier_all()
        prev = (rank - 1) % world
        want = data_for(seed, prev, 200 + k).view(torch.uint8)[:nbytes]
        check(f"putmem_signal {nbytes} bytes", torch.equal(dst.cpu().view(torch.uint8)[:nbytes], want))
        for t in (src, sig, dst):
            ash.aclshmem_free_tensor(t)


def scenario_slices(seed, rank):
    R, C = 16, 32
    x = torch.randn(R, C, generator=torch.Generator().manual_seed(seed + rank)).cuda()
    ex = torch.full((4, 8), float("nan"), device="cuda")
    ins = torch.full((R, C), float("nan"), device="cuda")
    el = torch.full((1,), float("nan"), device="cuda")
    slices_2d[(1,)](x, ex, ins, el, R=R, C=C)
    torch.cuda.synchronize()
    check("extract_slice", torch.equal(ex, x[2:6, 4:20:2]))
    ref = x.clone()
    ref[1:9:2, 0:8] = -x[2:6, 4:20:2] * 0 - 1
    check("insert_slice", torch.equal(ins, ref))
    check("get_element", torch.equal(el[0], x[3, 5]))


def scenario_tutorial(seed, rank, world):
    """The Triton-distributed tutorial-style kernels of test_tutorial_compat.py, launched as written there;
    each result checked exactly against the peers' regenerated inputs, outputs poisoned first."""
    dev = tdist.cuda_device()
    prev = (rank - 1) % world
    # producer/consumer (seed 003) through a symmetric queue, fp16, a masked tail (N=1000 of BLOCK=1024)
    n = 1000
    queue = ash.aclshmem_create_tensor([1024], torch.float16, device_id=dev)
    sig = ash.aclshmem_create_tensor([8], torch.int64, device_id=dev)
    ok = True
    for it in range(2):
        queue.fill_(float("nan"))
        sig.fill_(0)
        src = data_for(seed, rank, 300 + it, torch.float16, n).cuda()
        out = torch.full((n,), float("nan"), dtype=torch.float16, device="cuda")
        torch.cuda.synchronize()
        ash.barrier_all()
        producer_consumer_kernel[(2,)](src, queue, sig, out, N=n, BLOCK=1024)
        torch.cuda.synchronize()
        ash.barrier_all()
        ok &= torch.equal(out.cpu(), data_for(seed, prev, 300 + it, torch.float16, n))
        ok &= int(sig[0].item()) == 0
    check("tutorial producer/consumer (fp16, masked tail, 2 launches)", ok)
    # all-gather by pushes with add-notifies and a multi-slot wait, bf16
    n = 256
    buf = ash.aclshmem_create_tensor([world * n], torch.bfloat16, device_id=dev)
    sigs = ash.aclshmem_create_tensor([world * 8], torch.int64, device_id=dev)
    buf.fill_(float("nan"))
    sigs.fill_(0)
    local = data_for(seed, rank, 310, torch.bfloat16, n).cuda()
    torch.cuda.synchronize()
    ash.barrier_all()
    allgather_push_kernel[(1,)](buf, sigs, local, N=n, BLOCK=n)
    torch.cuda.synchronize()
    ash.barrier_all()
    want = torch.cat([data_for(seed, p, 310, torch.bfloat16, n) for p in range(world)])
    check("tutorial all-gather push (bf16)", torch.equal(buf.cpu(), want) and torch.equal(local.cpu(), want[:n]))
    # libshmem_device: block-wide putmem_signal_nbi + quiet + signal_wait_until + barrier_all, fp32
    dst = ash.aclshmem_create_tensor([N], torch.float32, device_id=dev)
    src = ash.aclshmem_create_tensor([N], torch.float32, device_id=dev)
    psig = ash.aclshmem_create_tensor([8], torch.int64, device_id=dev)
    dst.fill_(float("nan"))
    psig.fill_(0)
    src.copy_(data_for(seed, rank, 320).cuda())
    torch.cuda.synchronize()
    ash.barrier_all()
    shmem_put_signal_kernel[(1,)](dst, src, psig, N * 4)
    torch.cuda.synchronize()
    ash.barrier_all()
    check("tutorial libshmem_device putmem_signal_nbi_block", torch.equal(dst.cpu(), data_for(seed, prev, 320)))
    for t in (queue, sig, buf, sigs, dst, src, psig):
        ash.aclshmem_free_tensor(t)


def scenario_errors(rank, world):
    try:
        ash.check_symmetric(torch.empty(4, device="cuda"))
        check("check_symmetric rejects a non-heap tensor", False)
    except tdist.InvalidParam as e:
        check("check_symmetric rejects a non-heap tensor", "not on the symmetric heap" in str(e))
    try:
        t = ash.aclshmem_create_tensor([16 + rank], torch.float32, device_id=tdist.cuda_device())
        check("mismatched shapes fail", False)
        ash.aclshmem_free_tensor(t)
    except tdist.CollectiveMismatch as e:
        check("mismatched shapes fail on every rank", "mismatch" in str(e), str(e)[:120])


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count())
    ash.init_from_env(local_mem_size=64 << 20, backend=tdist.BACKEND_CUDA)
    seed = int.from_bytes(tdist.ctrl_broadcast(os.urandom(4), 0), "little")
    for name, fn in (("ring", lambda: scenario_ring(seed, rank, world)),
                     ("dtypes", lambda: scenario_dtypes(seed, rank, world)),
                     ("putmem_signal", lambda: scenario_putmem_signal(seed, rank, world)),
                     ("slices", lambda: scenario_slices(seed, rank)),
                     ("block_sync", lambda: scenario_block_sync(seed, rank)),
                     ("tutorial", lambda: scenario_tutorial(seed, rank, world)),
                     ("errors", lambda: scenario_errors(rank, world))):
        try:
            fn()
        except Exception:
            traceback.print_exc()
            check(f"scenario {name} raised", False)
    ash.aclshmem_finalize()
    try:
        ash.aclshmem_create_tensor([4], torch.float32)
        check("create_tensor after finalize fails", False)
    except tdist.NotInitialized:
        check("create_tensor after finalize fails", True)
    print(f"rank {rank}: {len(failures)} failure(s): {failures}", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
