"""One dl.* kernel, every platform: a ring put / notify / wait (docs/COMPILE.md).

    # CPU ranks (triton-ascend front end, the Ascend lowering run on this CPU)
    build/tools/tdist-run -n 4 -- .venv-ascend/bin/python examples/ring_kernel.py
    # Ascend: the .ttir / .ttadapter files bishengir-compile takes
    .venv-ascend/bin/python -m triton_dist.compile examples/ring_kernel.py -o out/

Each PE writes its block into the next PE's ``inbox`` (``dl.symm_at``), releases a signal there
(``dl.notify``), waits for its own (``dl.wait`` + ``dl.consume_token``) and checks what arrived.
On NVIDIA GPUs the same source compiles with stock Triton (inline PTX + the device bitcode) and is
launched as ``ring_kernel[grid](...)`` with torch tensors on the heap; ``main()`` here is the CPU-rank
driver.
"""
import os
import sys

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


def main():
    import numpy as np
    import shmem as ash
    import tdist
    ash.init_from_env(local_mem_size=1 << 24)
    rank, world = tdist.my_pe(), tdist.n_pes()
    n, block = 1000, 256
    grid = (n + block - 1) // block
    rng = np.random.default_rng(1234 + rank)
    src = ash.aclshmem_create_tensor([n], "float32")
    inbox = ash.aclshmem_create_tensor([n], "float32")
    sig = ash.aclshmem_create_tensor([grid * 8], "int64")
    out = np.full(n, np.nan, dtype=np.float32)
    sig[:] = 0
    ash.barrier_all()
    from triton_dist import cpu
    for epoch in (1, 2, 3):
        src[:] = rng.standard_normal(n).astype(np.float32) + rank
        inbox[:] = np.nan
        out[:] = np.nan
        ash.barrier_all()
        cpu.launch(ring_kernel, (grid,), src, inbox, out, sig, n, epoch, BLOCK=block)
        ash.barrier_all()
        expect = np.random.default_rng(1234 + (rank - 1) % world)
        for _ in range(epoch):
            want = expect.standard_normal(n).astype(np.float32) + (rank - 1) % world
        if not np.array_equal(out, want):
            bad = int(np.flatnonzero(out != want)[0])
            print(f"rank {rank}: epoch {epoch}: out[{bad}] = {out[bad]}, expected {want[bad]}", file=sys.stderr)
            return 1
    print(f"rank {rank}/{world}: ring of {n} floats, 3 epochs, exact")
    for t in (src, inbox, sig):
        ash.aclshmem_free_tensor(t)
    ash.aclshmem_finalize()
    return 0


if __name__ == "__main__":
    if "RANK" not in os.environ:
        sys.exit("run under tools/tdist-run, e.g. build/tools/tdist-run -n 4 -- .venv-ascend/bin/python " + __file__)
    sys.exit(main())
