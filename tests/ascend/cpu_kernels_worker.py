"""Every tdist_kernels kernel on CPU ranks, with the host protocol of tdist_kernels/ops.py in numpy.

    TDIST_PLATFORM=cpu PYTHONPATH=python python3 tools/tdist-run -n 4 -- \\
        .venv-ascend/bin/python tests/ascend/cpu_kernels_worker.py [op ...]

Each op runs ``CALLS`` consecutive calls through ``triton_dist.cpu.launch`` on the same symmetric
buffers (so the signal resets and the epoch areas are exercised across launches). Inputs are fresh
per call and seeded by (op, call, rank), so every rank rebuilds every other rank's inputs and checks
its own output against a reference: exactly where data only moves (all-to-alls, the gathered rows of
AG+GEMM are checked through the product), within a stated tolerance where arithmetic happens
(all-reduce, GEMMs; float64 references). Outputs and staging buffers are poisoned with NaN before
every call. One line per op, "PASS <op>" or "FAIL <op>: <first mismatch>", then "<n> ops, <k> failures";
the exit status is nonzero if any op failed.

``--teams K`` runs every op over teams instead of the world (docs/CONTRACT.md section 8, what
``group=`` on the ops stands on): the PEs split into K strided teams (team i: PEs i, i + K, ...),
each with its own team heap, and every team runs the ops at once, on its own: its buffers are team
allocations, its barriers team barriers, and the kernels get the team's rank, size and PE map
(``pe0 = i``, ``pes = K``), so every peer they name is translated. Inputs are seeded by the team as
well, so data that crossed into another team would be caught.

Host protocols (tdist_kernels._resources, as ops.py's plans use them):
  * seed 002's (pipeline, bulk, wait_notify, staged dispatch, one/two-shot and ring all-reduce, the Triton
    overlap forms): zero the op's signals, barrier, launch, barrier;
  * the direct all-to-alls: the epoch area is zeroed once (then a barrier); each call is one launch,
    no barrier and no reset around it;
  * AG+GEMM (Triton form): the copy engine's puts and stream signals become host copies through the
    peer mapping and a store of the slot, on a thread running beside the GEMM launch (the GPU's side
    stream); GEMM+RS: the GEMM launch, then the reduce launch (the GPU runs them on two streams; the
    GEMM never waits, so running it first is one of the GPU's interleavings).
Grids follow ops.py's rules for a small "SM budget" (``NSM``), so every launch has at most 16
programs: the CPU runs each program on a thread of one 2-core machine.
"""
import os
import sys
import threading
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

CALLS = 3
SEED = 20251201
NSM = 4  # the SM budget ops.py's grid rules are evaluated for
F32 = np.float32


def cdiv(a, b):
    return -(-a // b)


TEAM_HEAP = 8 << 20  # bytes of each team's heap with --teams


class Ctx:
    """The PEs the ops run over: the world, or this PE's team (``--teams``). ``rank`` / ``world`` are
    this PE's index and the team's size, ``pe0`` / ``pes`` the kernels' PE map (world PE of member r:
    ``pe0 + r * pes``)."""

    def __init__(self, teams=0):
        import shmem as ash
        import tdist
        from triton_dist import cpu
        self.ash, self.tdist, self.cpu = ash, tdist, cpu
        self.team = None
        if teams:
            n = tdist.n_pes()
            if n % teams:
                sys.exit(f"--teams {teams} does not divide the {n} PEs")
            for i in range(teams):  # collective over every PE: each split makes one team
                t = ash.new_team(list(range(i, n, teams)), heap_bytes=TEAM_HEAP)
                if t is not None:
                    self.team = t
        team = self.team or ash.team_world()
        self.rank, self.world, self.pe0, self.pes = team.rank, team.size, team.start, team.stride
        self.allocs = []

    def sym(self, shape, dtype):
        t = self.ash.aclshmem_create_tensor(list(shape) if not isinstance(shape, int) else [shape], dtype,
                                            team=self.team)
        self.allocs.append(t)
        return t

    def free_all(self):
        for t in reversed(self.allocs):
            self.ash.aclshmem_free_tensor(t)
        self.allocs.clear()

    def barrier(self):
        self.ash.team_barrier(self.team)

    def peer_view(self, t, r):
        """``t`` (symmetric) as it lies on member ``r`` of the team, through this PE's mapping of its heap."""
        import ctypes
        pe = self.pe0 + r * self.pes
        addr = self.tdist.ptr(t.__array_interface__["data"][0], pe)
        if not addr:
            raise RuntimeError(f"PE {pe}'s heap is not mapped here")
        buf = (ctypes.c_uint8 * t.nbytes).from_address(addr)
        return np.frombuffer(buf, dtype=np.uint8).view(t.dtype).reshape(t.shape)


SALT = [0]  # the team's first PE with --teams: each team's inputs differ


def rng(op, call, rank):
    return np.random.default_rng([SEED, sum(map(ord, op)), call, rank, SALT[0]])


def strides(a):
    return [s // a.itemsize for s in a.strides]


def first_mismatch(got, want, tol=None):
    """None, or "index, got, expected" of the first element off ``want`` (NaN is always off)."""
    if tol is None:
        bad = ~(got == want)
    else:
        bad = ~(np.abs(got.astype(np.float64) - want) <= tol)
    if not bad.any():
        return None
    i = np.unravel_index(int(np.flatnonzero(bad)[0]), got.shape)
    idx = tuple(int(x) for x in i)
    extra = "" if tol is None else f" (tolerance {np.broadcast_to(tol, got.shape)[idx]:.3g})"
    return f"index {idx}, got {got[idx]!r}, expected {want[idx]!r}{extra}; {int(bad.sum())} of {bad.size} off"


class LaunchFailed(Exception):
    pass


def protocol(ctx, sig, launch, poison=()):
    """Seed 002's host protocol (_resources.signal_round): zero the signals, barrier, launch, barrier; the
    staging buffers are poisoned alongside the reset. A launch that raises still takes part in the
    barriers (the ranks stay in step); the error is raised afterwards."""
    sig[...] = 0
    for p in poison:
        p[...] = np.nan
    ctx.barrier()
    err = None
    try:
        launch()
    except Exception as e:  # noqa: BLE001 - reported by the op
        err = e
    ctx.barrier()
    if err is not None:
        raise LaunchFailed(f"{type(err).__name__}: {err}") from err


# ---------------------------------------------------------------------------------------------
# all-to-alls (data only moves: exact)

A2A_S, A2A_H, A2A_D = 10, 2, 24  # S and D not multiples of the tiles: masked edges
A2A_BS, A2A_BD = 4, 16           # 3 S blocks (the double buffer is reused), 2 D blocks


def reverse_inputs(op, call, W):
    S, H, D = A2A_S, A2A_H, A2A_D
    return [rng(op, call, r).standard_normal((S * W, H, D)).astype(F32) for r in range(W)]


def reverse_want(inputs, me):
    S = A2A_S
    return np.concatenate([a[me * S:(me + 1) * S] for a in inputs], axis=1)  # (S, H * W, D)


def dispatch_inputs(op, call, W):
    S, H, D = A2A_S, A2A_H, A2A_D
    return [rng(op, call, r).standard_normal((S, H * W, D)).astype(F32) for r in range(W)]


def dispatch_want(inputs, me):
    H = A2A_H
    return np.concatenate([x[:, me * H:(me + 1) * H] for x in inputs], axis=0)  # (S * W, H, D)


def op_reverse_a2a(ctx, variant):
    from tdist_kernels import all_to_all as a2a, ops
    from tdist_kernels._common import SIG_ELEMS
    op = f"reverse_a2a_{variant}"
    W, me = ctx.world, ctx.rank
    S, H, D, bs, bd = A2A_S, A2A_H, A2A_D, A2A_BS, A2A_BD
    buffer_num = 2
    grid = ops.a2a_grid(NSM)
    nrole = grid // 2
    if variant == "pipeline":
        peer = ctx.sym([a2a.pipeline_buffer_elems(W, S, H, D, bs, buffer_num)], "float32")
        sig = ctx.sym([a2a.pipeline_signal_slots(W, S, H, D, bd, buffer_num) * SIG_ELEMS], "int64")
    elif variant == "bulk":
        peer = ctx.sym([a2a.bulk_buffer_elems(W, S, H, D)], "float32")
        sig = ctx.sym([a2a.bulk_signal_slots(W) * SIG_ELEMS], "int64")
        split = max(1, (nrole * 3 // 4) // max(W - 1, 1)) if W > 1 else 1
    elif variant == "wait_notify":
        peer = ctx.sym([a2a.bulk_buffer_elems(W, S, H, D)], "float32")
        sig = ctx.sym([a2a.wait_notify_signal_slots(W, S, H, D, bs, bd, buffer_num) * SIG_ELEMS], "int64")
        n_send = min(max(1, nrole * 3 // 4), nrole - 1) if W > 1 else 0
    else:  # direct: the output is symmetric, the control area zeroed once
        out = ctx.sym([S, H * W, D], "float32")
        ctl = ctx.sym([ops.epoch_slots(W) * SIG_ELEMS], "int64")
        ctl[:] = 0
        ctx.barrier()
        grid = a2a.direct_grid(W, S, H, D, bs, bd, 1, True)
    for call in range(CALLS):
        inputs = reverse_inputs(op, call, W)
        a = inputs[me]
        if variant == "direct":
            out[...] = np.nan  # no peer stores into it before this PE enters the epoch (in the launch)
            ctx.cpu.launch(a2a.reverse_a2a_direct_kernel, (grid,), a, out, ctl, me, W, ctx.pe0, ctx.pes, S, H, D,
                           *strides(a),
                           *strides(out), BLOCK_S=bs, BLOCK_D=bd)
        else:
            out = np.full((S, H * W, D), np.nan, dtype=F32)
            if variant == "pipeline":
                launch = lambda: ctx.cpu.launch(  # noqa: E731
                    a2a.reverse_a2a_mte_kernel, (grid,), a, out, peer, sig, me, W, ctx.pe0, ctx.pes, buffer_num, S,
                        H, D,
                    *strides(a), *strides(out), BLOCK_S=bs, BLOCK_D=bd)
            elif variant == "bulk":
                launch = lambda: ctx.cpu.launch(  # noqa: E731
                    a2a.reverse_a2a_bulk_kernel, (grid,), a, out, peer, sig, me, W, ctx.pe0, ctx.pes, buffer_num, split,
                    S, H, D, *strides(out), BLOCK_S=bs, BLOCK_D=bd, ELEM_BYTES=a.itemsize, VEC_BLOCK=64)
            else:
                launch = lambda: ctx.cpu.launch(  # noqa: E731
                    a2a.reverse_a2a_wait_notify_kernel, (grid,), a, out, peer, sig, me, W, ctx.pe0, ctx.pes, buffer_num,
                    n_send, S, H, D, *strides(out), BLOCK_S=bs, BLOCK_D=bd, ELEM_BYTES=a.itemsize, VEC_BLOCK=64)
            protocol(ctx, sig, launch, poison=(peer,))
        bad = first_mismatch(out, reverse_want(inputs, me))
        if bad:
            return f"call {call}: {bad}"
    return None


def op_dispatch_a2a(ctx, direct):
    from tdist_kernels import all_to_all as a2a, ops
    from tdist_kernels._common import SIG_ELEMS
    op = "dispatch_a2a_direct" if direct else "dispatch_a2a"
    W, me = ctx.world, ctx.rank
    S, H, D, bs, bd = A2A_S, A2A_H, A2A_D, A2A_BS, A2A_BD
    if direct:
        out = ctx.sym([S * W, H, D], "float32")
        ctl = ctx.sym([ops.epoch_slots(W) * SIG_ELEMS], "int64")
        ctl[:] = 0
        ctx.barrier()
        grid = a2a.direct_grid(W, S, H, D, bs, bd, 1, True)
    else:
        recv = ctx.sym([W * S * H * D], "float32")
        sig = ctx.sym([ops.bar_slots(W) * SIG_ELEMS], "int64")
        grid = ops.dispatch_grid(NSM)
    for call in range(CALLS):
        inputs = dispatch_inputs(op, call, W)
        x = inputs[me]
        if direct:
            out[...] = np.nan
            ctx.cpu.launch(a2a.dispatch_a2a_direct_kernel, (grid,), x, out, ctl, me, W, ctx.pe0, ctx.pes, S, H, D,
                           *strides(x),
                           *strides(out), BLOCK_S=bs, BLOCK_D=bd)
        else:
            out = np.full((S * W, H, D), np.nan, dtype=F32)
            protocol(ctx, sig, lambda: ctx.cpu.launch(
                a2a.dispatch_a2a_kernel, (grid,), x, out, recv, sig, me, W, ctx.pe0, ctx.pes, S, H, D, *strides(x),
                BLOCK_S=bs, BLOCK_D=bd), poison=(recv,))
        bad = first_mismatch(out, dispatch_want(inputs, me))
        if bad:
            return f"call {call}: {bad}"
    return None


# ---------------------------------------------------------------------------------------------
# all-reduce (fp32 sums in rank order: within 1e-5 of the summed magnitudes, float64 reference)

AR_N, AR_BLOCK = 5000, 256  # N not a multiple of the block, nor of W * block (two-shot, ring segments)
AR_RTOL = 1e-5


def op_allreduce(ctx, variant):
    from tdist_kernels import all_reduce as ar, ops
    from tdist_kernels._common import SIG_ELEMS
    op = f"allreduce_{variant}"
    W, me = ctx.world, ctx.rank
    N, BLOCK = AR_N, AR_BLOCK
    if variant == "ring":
        recv = ctx.sym([ar.ring_buffer_elems(W, N)], "float32")
        sig = ctx.sym([ar.ring_signal_slots(W, N, BLOCK) * SIG_ELEMS], "int64")
        grid = max(1, min(ops.allreduce_grid(NSM), cdiv(cdiv(N, W), BLOCK)))
        kern = ar.allreduce_ring_kernel
    else:
        recv = ctx.sym([N], "float32")
        sig = ctx.sym([ops.bar_slots(W) * SIG_ELEMS], "int64")
        grid = max(1, min(ops.allreduce_grid(NSM), cdiv(N, BLOCK)))
        kern = ar.allreduce_one_shot_kernel if variant == "one_shot" else ar.allreduce_two_shot_kernel
    for call in range(CALLS):
        xs = [rng(op, call, r).standard_normal(N).astype(F32) for r in range(W)]
        x = xs[me]
        out = np.full(N, np.nan, dtype=F32)
        protocol(ctx, sig, lambda: ctx.cpu.launch(kern, (grid,), x, recv, out, sig, me, W, ctx.pe0, ctx.pes, N,
                                                          BLOCK=BLOCK),
                 poison=(recv,))
        x64 = np.stack(xs).astype(np.float64)
        bad = first_mismatch(out, x64.sum(0), AR_RTOL * np.abs(x64).sum(0) + 1e-7)
        if bad:
            return f"call {call}: {bad}"
    return None


# ---------------------------------------------------------------------------------------------
# overlap GEMMs (fp32 tl.dot; within 1e-5 of |a| @ |b| (summed over ranks for RS), float64 reference)

GEMM_RTOL = 1e-5
GEMM_CFG = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2)


# (M, K, N, chunk): with BLOCK_M = 16 a tile straddles two ranks' rows and three chunks per rank; a
# rank's short last chunk (12 = 8 + 4) puts three slots under one tile; M = 6 < BLOCK_M puts a whole
# rank between a tile's first and last rows (from 3 ranks on)
AG_CASES = ((24, 40, 40, 8), (12, 40, 24, 8), (6, 24, 40, 8))
AG_LATE_S = 0.25  # in each call one source rank puts its last chunk this late


def op_ag_gemm(ctx):
    for case in AG_CASES:
        bad = ag_gemm_case(ctx, *case)
        if bad:
            return f"M={case[0]} chunk={case[3]}: {bad}"
    return None


def ag_gemm_case(ctx, M, K, N, chunk):
    from tdist_kernels import ag_gemm as ag, ops
    from tdist_kernels._common import SIG_ELEMS
    op = f"ag_gemm{M}"
    W, me = ctx.world, ctx.rank
    n_chunks = cdiv(M, chunk)
    gather = ctx.sym([W * M, K], "float32")
    sig = ctx.sym([ag.ag_gemm_signal_slots(W, M, chunk) * SIG_ELEMS], "int64")
    cfg = GEMM_CFG
    grid = ops.ag_gemm_grid(2 * NSM, cdiv(W * M, cfg["BLOCK_M"]) * cdiv(N, cfg["BLOCK_N"]))
    gathers = [ctx.peer_view(gather, t) for t in range(W)]
    sigs = [ctx.peer_view(sig, t) for t in range(W)]
    for call in range(CALLS):
        b = rng(op + "_b", call, 0).standard_normal((K, N)).astype(F32)  # the same on every rank
        As = [rng(op, call, r).standard_normal((M, K)).astype(F32) for r in range(W)]
        a = As[me]
        out = np.full((W * M, N), np.nan, dtype=F32)
        sig[...] = 0
        gather[...] = np.nan
        ctx.barrier()

        def puts():  # the side stream: chunk by chunk, the own buffer first, then rank + 1, ...
            for c in range(n_chunks):
                if c == n_chunks - 1 and me == call % W:
                    time.sleep(AG_LATE_S)  # a tile that reads this chunk without waiting for it reads NaN
                r0 = c * chunk
                rows = min(chunk, M - r0)
                for j in range(W):
                    t = (me + j) % W
                    gathers[t][me * M + r0:me * M + r0 + rows] = a[r0:r0 + rows]
                    sigs[t][(me * n_chunks + c) * SIG_ELEMS] = 1  # after the copy: x86 keeps stores in order

        th = threading.Thread(target=puts)
        th.start()
        err = None
        try:
            ctx.cpu.launch(ag.ag_gemm_kernel, (grid,), a, b, out, gather, sig, me, W, M, N, K, *strides(b),
                           *strides(out), CHUNK_M=chunk, **cfg)
        except Exception as e:  # noqa: BLE001
            err = e
        th.join()
        ctx.barrier()
        if err is not None:
            raise LaunchFailed(f"{type(err).__name__}: {err}") from err
        A = np.concatenate(As).astype(np.float64)
        B = b.astype(np.float64)
        bad = first_mismatch(out, A @ B, GEMM_RTOL * (np.abs(A) @ np.abs(B)) + 1e-6)
        if bad:
            return f"call {call}: {bad}"
    return None


def op_gemm_rs(ctx):
    from tdist_kernels import gemm_rs as rs
    from tdist_kernels._common import SIG_ELEMS
    op = "gemm_rs"
    W, me = ctx.world, ctx.rank
    ml, K, N = 20, 40, 24  # per-owner rows not a multiple of BLOCK_M, N not of BLOCK_N
    M = ml * W
    cfg = GEMM_CFG
    BM, BN = cfg["BLOCK_M"], cfg["BLOCK_N"]
    recv = ctx.sym([W * ml * N], "float32")
    sig = ctx.sym([rs.gemm_rs_signal_slots(W, M, N, BM, BN) * SIG_ELEMS], "int64")
    local_tiles = cdiv(ml, BM) * cdiv(N, BN)
    for call in range(CALLS):
        ins = [rng(op, call, r) for r in range(W)]
        ab = [(g.standard_normal((M, K)).astype(F32), g.standard_normal((K, N)).astype(F32)) for g in ins]
        a, b = ab[me]
        out = np.full((ml, N), np.nan, dtype=F32)

        def launch():
            # RED_M = 8: an own tile sums its 16 rows in two steps
            ctx.cpu.launch(rs.gemm_rs_kernel, (W * local_tiles,), a, b, recv, sig, out, me, W, ctx.pe0, ctx.pes, M, N,
                           K, *strides(a), *strides(b), *strides(out), RED_M=8, **cfg)

        protocol(ctx, sig, launch, poison=(recv,))
        rows = slice(me * ml, (me + 1) * ml)
        want = sum(x[rows].astype(np.float64) @ y.astype(np.float64) for x, y in ab)
        mag = sum(np.abs(x[rows].astype(np.float64)) @ np.abs(y.astype(np.float64)) for x, y in ab)
        bad = first_mismatch(out, want, GEMM_RTOL * mag + 1e-6)
        if bad:
            return f"call {call}: {bad}"
    return None


OPS = {
    "reverse_a2a_mte": lambda c: op_reverse_a2a(c, "pipeline"),
    "reverse_a2a_bulk": lambda c: op_reverse_a2a(c, "bulk"),
    "reverse_a2a_wait_notify": lambda c: op_reverse_a2a(c, "wait_notify"),
    "reverse_a2a_direct": lambda c: op_reverse_a2a(c, "direct"),
    "dispatch_a2a": lambda c: op_dispatch_a2a(c, False),
    "dispatch_a2a_direct": lambda c: op_dispatch_a2a(c, True),
    "allreduce_one_shot": lambda c: op_allreduce(c, "one_shot"),
    "allreduce_two_shot": lambda c: op_allreduce(c, "two_shot"),
    "allreduce_ring": lambda c: op_allreduce(c, "ring"),
    "ag_gemm": op_ag_gemm,
    "gemm_rs": op_gemm_rs,
}

def main(argv):
    import shmem as ash
    teams = 0
    if argv[:1] == ["--teams"]:
        teams, argv = int(argv[1]), argv[2:]
    names = argv or list(OPS)
    unknown = [n for n in names if n not in OPS]
    if unknown:
        sys.exit(f"unknown ops {unknown}; known: {list(OPS)}")
    ash.init_from_env(local_mem_size=1 << 26)
    ctx = Ctx(teams)
    SALT[0] = ctx.pe0 if teams else 0
    failures = 0
    t_all = time.time()
    for name in names:
        t0 = time.time()
        try:
            bad = OPS[name](ctx)
        except Exception as e:  # noqa: BLE001 - a launch or compile error is this op's failure
            msg = str(e).strip().splitlines()
            bad = f"{type(e).__name__}: {' | '.join(msg[:6])}"
            if os.environ.get("TDIST_WORKER_TRACE"):
                traceback.print_exc()
        ctx.free_all()
        ctx.barrier()
        if bad is None:
            print(f"PASS {name}", flush=True)
        else:
            failures += 1
            print(f"FAIL {name}: {bad}", flush=True)
        print(f"  {name}: {time.time() - t0:.1f} s", file=sys.stderr, flush=True)
    print(f"  all: {time.time() - t_all:.1f} s", file=sys.stderr, flush=True)
    print(f"{len(names)} ops, {failures} failures", flush=True)
    ash.aclshmem_finalize()
    return 1 if failures else 0


if __name__ == "__main__":
    if "RANK" not in os.environ:
        sys.exit("run under tools/tdist-run, e.g. tools/tdist-run -n 4 -- .venv-ascend/bin/python " + __file__)
    sys.exit(main(sys.argv[1:]))
