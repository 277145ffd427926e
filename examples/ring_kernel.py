"""One dl.* kernel, every platform: a ring put / notify / wait (docs/COMPILE.md).

    # NVIDIA GPUs (stock Triton; several ranks on one GPU under MPS, which tdist-run starts)
    build/tools/tdist-run -n 2 -- python3 examples/ring_kernel.py
    # CPU ranks (triton-ascend front end, the Ascend lowering run on this CPU)
    build/tools/tdist-run -n 4 -- .venv-ascend/bin/python examples/ring_kernel.py
    # Ascend: the .ttir / .ttadapter files bishengir-compile takes
    .venv-ascend/bin/python -m triton_dist.compile examples/ring_kernel.py -o out/

Each PE writes its block into the next PE's ``inbox`` (``dl.symm_at``), releases a signal there
(``dl.notify``), waits for its own (``dl.wait`` + ``dl.consume_token``) and checks what arrived.
On NVIDIA GPUs the same source compiles with stock Triton (inline PTX + the device bitcode) and is
launched as ``ring_kernel[grid](...)`` on torch tensors of the heap; on CPU ranks through
``triton_dist.cpu.launch`` on numpy arrays of the heap.
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))  # a source checkout

import triton
import triton.language as tl

import triton_dist.language as dl


@triton.jit
def ring_kernel(src, inbox, out, sig, n, epoch, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    me = dl.rank()
    peer = (me + 1) % dl.num_ranks()
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src + offs, mask=mask)
    remote = dl.symm_at(inbox, peer)
    tl.store(remote + offs, x, mask=mask)
    # One slot per program (64 bytes apart); release: the stores above are visible first.
    dl.notify(sig + pid * 8, peer, epoch, sig_op="set", comm_scope="intra_node")
    token = dl.wait(sig + pid * 8, 1, "gpu", "acquire", waitValue=epoch)
    mine = dl.consume_token(inbox, token)
    tl.store(out + offs, tl.load(mine + offs, mask=mask), mask=mask)


def compile_cases():
    sig = {"src": "*fp32", "inbox": "*fp32", "out": "*fp32", "sig": "*i64", "n": "i32", "epoch": "i64"}
    return [("ring_kernel", ring_kernel, sig, {"BLOCK": 256})]


def _inputs(rank, epoch, n):
    """The block PE ``rank`` sends at ``epoch`` (every PE can rebuild any PE's)."""
    import numpy as np
    return np.random.default_rng([1234, rank, epoch]).standard_normal(n).astype(np.float32) + rank


def main():
    import numpy as np
    import shmem as ash
    import tdist
    from triton_dist import utils
    gpu = utils.is_cuda()
    if gpu:  # stock Triton, torch tensors on the heap
        import torch
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", os.environ["RANK"])) % torch.cuda.device_count())
        ash.init_from_env(local_mem_size=1 << 24, backend=tdist.BACKEND_CUDA)
        make = lambda shape, dt: ash.aclshmem_create_tensor(shape, getattr(torch, dt), device_id=tdist.cuda_device())  # noqa: E731
    else:  # CPU ranks: triton-ascend's front end, numpy arrays on the heap
        from triton_dist import cpu
        ash.init_from_env(local_mem_size=1 << 24)
        make = lambda shape, dt: ash.aclshmem_create_tensor(shape, dt)  # noqa: E731
    rank, world = tdist.my_pe(), tdist.n_pes()
    n, block = 1000, 256
    grid = (n + block - 1) // block
    src, inbox, sig = make([n], "float32"), make([n], "float32"), make([grid * 8], "int64")
    out = make([n], "float32") if gpu else np.empty(n, dtype=np.float32)
    sig.fill_(0) if gpu else sig.fill(0)
    ash.barrier_all()
    for epoch in (1, 2, 3):
        x = _inputs(rank, epoch, n)
        if gpu:
            src.copy_(torch.from_numpy(x))
            inbox.fill_(float("nan"))
            out.fill_(float("nan"))
            torch.cuda.synchronize()
        else:
            src[:], inbox[:], out[:] = x, np.nan, np.nan
        ash.barrier_all()
        if gpu:
            ring_kernel[(grid,)](src, inbox, out, sig, n, epoch, BLOCK=block)
            torch.cuda.synchronize()
            got = out.cpu().numpy()
        else:
            cpu.launch(ring_kernel, (grid,), src, inbox, out, sig, n, epoch, BLOCK=block)
            got = out
        ash.barrier_all()
        want = _inputs((rank - 1) % world, epoch, n)
        if not np.array_equal(got, want):
            bad = int(np.flatnonzero(got != want)[0])
            print(f"rank {rank}: epoch {epoch}: out[{bad}] = {got[bad]}, expected {want[bad]}", file=sys.stderr)
            return 1
    print(f"rank {rank}/{world}: ring of {n} floats, 3 epochs, exact ({'GPU' if gpu else 'CPU ranks'})")
    for t in (src, inbox, sig) + ((out,) if gpu else ()):
        ash.aclshmem_free_tensor(t)
    ash.aclshmem_finalize()
    return 0


if __name__ == "__main__":
    if "RANK" not in os.environ:
        sys.exit("run under tools/tdist-run, e.g. build/tools/tdist-run -n 4 -- .venv-ascend/bin/python " + __file__)
    sys.exit(main())
