"""One rank of the torch integration tests on CPU ranks (started by test_torch.py through tdist-run).

torch.distributed (gloo) first, then tdist from it (``shmem.init_from_torch``: no second rendezvous),
then, on every rank, checks that print ``ok <name>`` or ``FAIL <name>: why``; exit status 1 if any
failed. Every check is collective where the ops are, so all ranks run the same sequence.
"""
import os
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import shmem  # noqa: E402
import tdist  # noqa: E402

failures = []


def check(name, cond, detail=""):
    print(f"{'ok' if cond else 'FAIL'} {name}{'' if cond else ': ' + detail}", flush=True)
    if not cond:
        failures.append(name)


def main():
    me, W = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=me, world_size=W)
    # ranks 1 .. W-1: a second job over a subgroup, where PE = the group's rank
    tail = dist.new_group(ranks=list(range(1, W)))
    try:
        shmem.init_from_torch(local_mem_size=1 << 24, backend=tdist.BACKEND_CPU)
        check("init_from_torch: PE == torch rank, n_pes == world size",
              tdist.my_pe() == me and tdist.n_pes() == W, f"pe {tdist.my_pe()}/{tdist.n_pes()}")
        check("torch_group() is the world group", shmem.torch_group() is dist.group.WORLD)
        got = bytes(tdist.ctrl_allgather(bytes([me + 1])))
        check("tdist's control plane over the torch-made job", got == bytes(range(1, W + 1)), repr(got))
        # the symmetric heap works: every PE stores its rank into PE (me + 1)'s buffer through the
        # peer mapping (on CPU ranks a tensor is a numpy array on the heap)
        import ctypes
        buf = shmem.aclshmem_create_tensor([4], "int32")
        buf[:] = -1
        shmem.barrier_all()
        peer = tdist.ptr(buf.ctypes.data, (me + 1) % W)
        for i in range(4):
            ctypes.c_int32.from_address(peer + 4 * i).value = me
        shmem.barrier_all()
        check("a store through the peer mapping", (buf == (me - 1) % W).all(), repr(buf))
        shmem.aclshmem_free_tensor(buf)
        mine = scenario_group(me, W)
        scenario_trace(me, W, mine)
        tdist.ctrl_barrier()
        shmem.aclshmem_finalize()
        check("finalize clears torch_group()", shmem.torch_group() is None)
        # a second job over ranks 1 .. W-1; rank 0, outside it, is refused by name
        if me == 0:
            try:
                shmem.init_from_torch(tail, local_mem_size=1 << 24, backend=tdist.BACKEND_CPU)
                check("init_from_torch refuses a rank outside the group", False, "no error")
            except tdist.InvalidParam as e:
                check("init_from_torch refuses a rank outside the group", "not a member" in str(e), str(e))
        else:
            shmem.init_from_torch(tail, local_mem_size=1 << 24, backend=tdist.BACKEND_CPU)
            check("init_from_torch(group): PE == the group's rank", tdist.my_pe() == me - 1 and tdist.n_pes() == W - 1
                  and shmem.torch_group() is tail, f"pe {tdist.my_pe()}/{tdist.n_pes()} for torch rank {me}")
            got = bytes(tdist.ctrl_allgather(bytes([me])))
            check("the subgroup job's control plane", got == bytes(range(1, W)), repr(got))
            tdist.finalize()
        dist.barrier()
    except Exception:
        traceback.print_exc()
        check("worker raised", False)
    dist.destroy_process_group()
    print(f"rank {me}: {len(failures)} failure(s) {failures}", flush=True)
    sys.exit(1 if failures else 0)


def scenario_group(me, W):
    """group=: tdist's world (the init group, or any group of all ranks) is the world team; a group
    made with shmem.new_group / new_subgroups has its own team (strided PEs, its own heap, collectives
    among its members only); a torch-only subgroup, a non-member and a non-group are refused before
    anything runs, naming what to do. Returns this rank's subgroup (from new_subgroups)."""
    from tdist_kernels import ops
    check("group= takes tdist's world group as the world team",
          ops._team_of_group("all_reduce", dist.group.WORLD).is_world
          and ops._team_of_group("all_reduce", dist.new_group(ranks=list(range(W)))).is_world)
    # a strided group: ranks 0, 2, ...; the others run on meanwhile (a world collective below)
    ranks = list(range(0, W, 2))
    g = shmem.new_group(ranks, heap_bytes=1 << 20)
    if me in ranks:
        t = shmem.team_of(g)
        check("new_group: the team's PEs and this rank's index", t.pes() == ranks and t.rank == ranks.index(me),
              repr(t))
        check("group= resolves to the group's team", ops._team_of_group("all_reduce", g) is t)
        buf = shmem.aclshmem_create_tensor([4], "int32", team=t)  # collective over the members only
        buf[:] = -1
        shmem.team_barrier(t)
        import ctypes
        peer = tdist.ptr(buf.ctypes.data, t.pe((t.rank + 1) % t.size))
        for i in range(4):
            ctypes.c_int32.from_address(peer + 4 * i).value = me
        shmem.team_barrier(t)
        check("a store into the next member's team buffer", (buf == ranks[(t.rank - 1) % t.size]).all(), repr(buf))
        got = shmem.team_allgather(t, bytes([me]))
        check("team_allgather: the members' bytes in member order", got == [bytes([r]) for r in ranks], repr(got))
        shmem.aclshmem_free_tensor(buf)
    else:
        check("new_group: a non-member gets NON_GROUP_MEMBER", g is dist.GroupMember.NON_GROUP_MEMBER)
        try:
            ops.all_reduce(torch.ones(4), group=g)
            check("group= refuses a non-member", False, "no error")
        except ops.KernelArgError as e:
            check("group= refuses a non-member", "not a member" in str(e) and "all_reduce" in str(e), str(e))
    gs = 1 if W % 2 else 2
    mine, groups = shmem.new_subgroups(gs, heap_bytes=1 << 20)
    t = shmem.team_of(mine)
    first = me // gs * gs
    check("new_subgroups: consecutive teams of group_size", t.pes() == list(range(first, first + gs))
          and len(groups) == W // gs, repr(t))
    sub = dist.new_group(ranks=[0])  # torch's own call: no tdist team
    cases = [("world", "a string", "must be a torch.distributed ProcessGroup or a shmem.Team")]
    cases.append((sub, "a torch-only subgroup", "shmem.new_group") if me == 0 else
                 (sub, "a non-member of a torch-only subgroup", "not a member"))
    for grp, what, pattern in cases:
        try:
            ops.all_reduce(torch.ones(4), group=grp)
            check(f"group= refuses {what}", False, "no error")
        except ops.KernelArgError as e:
            check(f"group= refuses {what}", pattern in str(e) and "all_reduce" in str(e), str(e))
    return mine


def scenario_trace(me, W, mine):
    """torch.compile(fullgraph=True) traces a function using the ops into one graph whose tdist calls
    are the torch.library custom ops, with the output shapes of their fake implementations. The
    graph is only captured here (the ops run on the CUDA backend; test_gpu runs the compiled model)."""
    from tdist_kernels import ops
    graphs = []

    class Captured(Exception):
        pass

    def capture(gm, example_inputs):
        graphs.append(gm)
        raise Captured()

    def block(x, a, w1, w2):
        h = ops.ag_gemm(x, w1)  # (W * M, N)
        y = ops.gemm_rs(h.relu(), w2)  # (W * M / W, N)
        r = ops.all_reduce(y * 2.0)
        o = torch.empty_like(r)
        ops.all_reduce(r, out=o)
        z = ops.reverse_all_to_all(a)
        back = ops.dispatch_all_to_all(z)
        q = ops.reverse_all_to_all(a, group=mine)  # over this rank's subgroup (its team's handle)
        return o + 1.0, z, back, q

    M, K, N = 8, 16, 32
    x, w1, w2 = torch.randn(M, K), torch.randn(K, N), torch.randn(N, K)
    a = torch.randn(3 * W, 2, 4)
    torch._dynamo.reset()
    try:
        torch.compile(block, fullgraph=True, backend=capture)(x, a, w1, w2)
        check("torch.compile captured the block", False, "the backend was not reached")
        return
    except Exception as e:
        if not graphs:
            check("torch.compile(fullgraph=True) traces the ops without a graph break", False, repr(e)[:400])
            return
    gm = graphs[0]
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    want = ["tdist.ag_gemm.default", "tdist.gemm_rs.default", "tdist.all_reduce.default",
            "tdist.all_reduce_out.default", "tdist.reverse_all_to_all.default", "tdist.dispatch_all_to_all.default",
            "tdist.reverse_all_to_all.default"]
    got = [t for t in targets if t.startswith("tdist.")]
    check("torch.compile(fullgraph=True): one graph, every op a tdist custom op", got == want and len(graphs) == 1,
          f"{got}")
    shapes = {}  # the first node of each op (the second reverse_all_to_all is the subgroup's, checked below)
    for n in gm.graph.nodes:
        if n.op == "call_function" and str(n.target).startswith("tdist.") and n.meta.get("example_value") is not None:
            shapes.setdefault(str(n.target), tuple(n.meta["example_value"].shape))
    a2a = [n for n in gm.graph.nodes if str(n.target) == "tdist.reverse_all_to_all.default"]
    team = shmem.team_of(mine)
    check("group= traces as the team's handle and size", len(a2a) == 2 and a2a[0].args[1:3] == (0, W)
          and a2a[1].args[1:3] == (team.handle, team.size)
          and tuple(a2a[1].meta["example_value"].shape) == (3 * W // team.size, 2 * team.size, 4),
          repr([n.args[1:3] for n in a2a]))
    check("fake implementations give the ops' output shapes",
          shapes.get("tdist.ag_gemm.default") == (W * M, N) and shapes.get("tdist.gemm_rs.default") == (M, K)
          and shapes.get("tdist.reverse_all_to_all.default") == (3, 2 * W, 4)
          and shapes.get("tdist.dispatch_all_to_all.default") == (3 * W, 2, 4), repr(shapes))
    # autograd: an input that needs a gradient is routed through the custom op, whose backward is
    # registered; under fake tensors the forward and backward run their fake implementations
    from torch._subclasses.fake_tensor import FakeTensorMode
    try:
        with FakeTensorMode():
            xg = torch.randn(4, 3, requires_grad=True)
            y = ops.all_reduce(xg)
            y.sum().backward()
            ag = torch.randn(3 * W, 2, 4, requires_grad=True)
            z = ops.reverse_all_to_all(ag)
            (z * 2).sum().backward()
            ok = (y.grad_fn is not None and tuple(xg.grad.shape) == (4, 3) and z.grad_fn is not None
                  and tuple(ag.grad.shape) == (3 * W, 2, 4))
        check("autograd: all_reduce and reverse_all_to_all have backward formulas", ok)
    except Exception as e:
        check("autograd: all_reduce and reverse_all_to_all have backward formulas", False, repr(e)[:300])

if __name__ == "__main__":
    main()
