"""One rank of the torch integration test on the GPU (tests/python/test_gpu.py, test_torch_gpu_worker;
several ranks share a GPU under MPS, so torch.distributed uses gloo).

tdist starts from the torch job (``shmem.init_from_torch``); then, on every rank:

* a tensor-parallel MLP block built from the ops (AG+GEMM, GEMM+RS, all-reduce) runs eagerly and
  compiled with ``torch.compile(fullgraph=True)`` (inductor): the compiled block equals the eager
  one bit for bit (the same kernels run on the same inputs), and the eager one matches a torch
  reference computed from every rank's inputs;
* autograd through the ops: the gradient of the all-reduce is the all-reduce of the gradients, the
  gradient of the reverse all-to-all is the dispatch of the output's gradient, both compared exactly
  against references built from every rank's seeded tensors;
* group= with torch's world group, and the same block compiled over each half of the ranks
  (``shmem.new_subgroups``: its own team, traced as the team's handle), checked against a reference
  over that half's ranks only.

Prints ``ok``/``FAIL`` lines and ``rank R: N failure(s)``; exit status 1 if any failed.
"""
import os
import sys
import traceback
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import shmem  # noqa: E402
import tdist  # noqa: E402
from tdist_kernels import ops  # noqa: E402

failures = []


def check(name, cond, detail=""):
    print(f"{'ok' if cond else 'FAIL'} {name}{'' if cond else ': ' + detail}", flush=True)
    if not cond:
        failures.append(name)


def seeded(seed, rank, tag, shape, dtype, scale=1.0):
    g = torch.Generator().manual_seed(zlib.crc32(f"{seed}-{rank}-{tag}".encode()))
    return (torch.randn(shape, generator=g) * scale).to(dtype)


class Block(torch.nn.Module):
    """x (M, H) on every rank -> all_reduce(gemm_rs(relu(ag_gemm(x, w1)), w2)) + x: w1 (H, F) and w2
    (F, H) are this rank's shards of a tensor-parallel MLP over the gathered rows."""

    def __init__(self, w1, w2, group=None):
        super().__init__()
        self.w1, self.w2, self.group = w1, w2, group

    def forward(self, x):
        if self.group is None:
            h = ops.ag_gemm(x, self.w1)
            y = ops.gemm_rs(torch.relu(h), self.w2)
            return ops.all_reduce(y, group=dist.group.WORLD) + x
        h = ops.ag_gemm(x, self.w1, group=self.group)
        y = ops.gemm_rs(torch.relu(h), self.w2, group=self.group)
        return ops.all_reduce(y, group=self.group) + x


def scenario_compile(seed, me, W, group=None, members=None):
    """The block eager and compiled, over the world or over ``group`` (whose world ranks are
    ``members``, this rank among them)."""
    members = list(range(W)) if members is None else members
    n, i = len(members), members.index(me)
    what = "" if group is None else f" over group {members}"
    M, H, F = 64, 256, 512
    dt = torch.bfloat16
    xs = [seeded(seed, r, "x", (M, H), dt) for r in members]
    w1s = [seeded(seed, r, "w1", (H, F), dt, 0.05) for r in members]
    w2s = [seeded(seed, r, "w2", (F, H), dt, 0.05) for r in members]
    block = Block(w1s[i].cuda(), w2s[i].cuda(), group)
    x = xs[i].cuda()
    eager = block(x)
    compiled = torch.compile(block, fullgraph=True)
    got = compiled(x)
    again = compiled(x)
    torch.cuda.synchronize()
    check(f"torch.compile(fullgraph=True) of the block{what} == eager, bit for bit",
          torch.equal(got, eager) and torch.equal(again, eager),
          f"max diff {(got.float() - eager.float()).abs().max().item():.3e}")
    # reference: the gathered rows through every member's shards, in fp32
    xa = torch.cat([t.float() for t in xs])
    parts = [torch.relu((xa @ w1s[q].float()).to(dt).float()) @ w2s[q].float() for q in range(n)]
    # gemm_rs gives member q rows [q * M, (q + 1) * M) of the sum over members; all_reduce sums those
    blocks = [sum(parts)[q * M:(q + 1) * M] for q in range(n)]
    ref = sum(blocks) + xs[i].float()
    err = ((eager.float().cpu() - ref).abs().max() / ref.abs().max()).item()
    check(f"the block{what} matches the torch reference", err < 3e-2, f"rel err {err:.3e}")


def scenario_autograd(seed, me, W):
    # all_reduce: y = sum_r x_r on every rank; loss = sum_r <c_r, y>, so dx_me = sum_r c_r
    n = 4096
    cs = [seeded(seed, r, "c", (n,), torch.float32).round() for r in range(W)]
    x = seeded(seed, me, "xa", (n,), torch.float32).cuda().requires_grad_()
    y = ops.all_reduce(x)
    (y * cs[me].cuda()).sum().backward()
    torch.cuda.synchronize()
    check("autograd: grad of all_reduce == all_reduce of the grads (exact)",
          torch.equal(x.grad.cpu(), sum(cs)), f"max diff {(x.grad.cpu() - sum(cs)).abs().max().item()}")
    # reverse_all_to_all: out_me[s, r*H + h] = a_r[me*S + s, h]; d a_me[q*S + s, h] = g_q[s, me*H + h]
    S, H, D = 16, 2, 64
    gs = [seeded(seed, r, "g", (S, H * W, D), torch.bfloat16) for r in range(W)]
    a = seeded(seed, me, "a", (S * W, H, D), torch.bfloat16).cuda().requires_grad_()
    z = ops.reverse_all_to_all(a)
    (z.float() * gs[me].cuda().float()).sum().backward()
    torch.cuda.synchronize()
    want = torch.cat([gs[q][:, me * H:(me + 1) * H] for q in range(W)])
    check("autograd: grad of reverse_all_to_all == dispatch of the output's grad (exact)",
          torch.equal(a.grad.cpu(), want))


def main():
    me, W = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", me)) % torch.cuda.device_count())
    dist.init_process_group("gloo", rank=me, world_size=W)
    try:
        shmem.init_from_torch(local_mem_size=512 << 20)
        check("init_from_torch on the CUDA backend", tdist.cuda_device() == torch.cuda.current_device()
              and tdist.my_pe() == me and tdist.n_pes() == W)
        seed = int.from_bytes(tdist.ctrl_broadcast(os.urandom(4), 0), "little")
        scenario_compile(seed, me, W)
        scenario_autograd(seed, me, W)
        if W >= 4 and W % 2 == 0:
            half, _ = shmem.new_subgroups(W // 2)
            first = me // (W // 2) * (W // 2)
            scenario_compile(seed, me, W, half, list(range(first, first + W // 2)))
        ops.release()
        shmem.aclshmem_finalize()
    except Exception:
        traceback.print_exc()
        check("worker raised", False)
    dist.destroy_process_group()
    print(f"rank {me}: {len(failures)} failure(s) {failures}", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
