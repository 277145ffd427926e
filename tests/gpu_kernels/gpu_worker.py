"""One rank of the tdist_kernels GPU checks; run under tools/tdist-run -n W (test_gpu.py does).

Every kernel against a torch reference, aligned and unaligned shapes, fp16/bf16/fp32. Fresh random
inputs each run: rank 0 draws a seed and broadcasts it; every rank regenerates any peer's input from
(seed, peer, tag), so each rank checks exactly what it should have received. Outputs are poisoned
(NaN) before each call; data movement is compared exactly (torch.equal), arithmetic with a stated
relative-norm tolerance. Prints PASS/FAIL per check; exits 1 if any failed (tdist-run then fails
the job)."""
import os
import sys
import time
import traceback
import warnings
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import torch  # noqa: E402

import shmem as ash  # noqa: E402
import tdist  # noqa: E402
from tdist_kernels import ops  # noqa: E402
from tdist_kernels import KernelArgError  # noqa: E402
from tdist_kernels._resources import RESOURCES  # noqa: E402

failures = []
DTYPES = [torch.float16, torch.bfloat16, torch.float32]
# relative-norm tolerances where arithmetic happens (fp32 GEMMs use tf32 tensor cores)
GEMM_TOL = {torch.float16: 5e-3, torch.bfloat16: 2e-2, torch.float32: 5e-3}
AR_TOL = {torch.float16: 2e-3, torch.bfloat16: 1.5e-2, torch.float32: 1e-6}
LATE_CYCLES = 20_000_000  # torch.cuda._sleep before a late rank's call: about 10 ms at the H200's clock


def check(name, cond, detail=""):
    print(f"{'PASS' if cond else 'FAIL'} {name} {detail}", flush=True)
    if not cond:
        failures.append(name)


def gen(seed, pe, tag, shape, dtype):
    g = torch.Generator(device="cpu").manual_seed((seed * 1000003 + pe * 7919 + zlib.crc32(tag.encode())) % 2**62)
    return torch.randn(*shape, generator=g).to(dtype)


def rel_err(x, ref):
    x = x.double().cpu()
    ref = ref.double().cpu()
    if torch.isnan(x).any():
        return float("inf")
    return float((x - ref).norm() / max(ref.norm(), 1e-30))


def poisoned(shape, dtype):
    return torch.full(shape, float("nan"), dtype=dtype, device="cuda")


def same_on_all_ranks(t):
    """Collective: every rank must call it in the same order."""
    h = zlib.crc32(t.contiguous().view(torch.uint8).cpu().numpy().tobytes()).to_bytes(4, "little")
    got = bytes(tdist.ctrl_allgather(h))
    return len({got[i:i + 4] for i in range(0, len(got), 4)}) == 1


def scenario_a2a(seed, me, W):
    for (S, H, D) in ((64, 4, 256), (37, 3, 100)):
        for dt in DTYPES:
            tag = f"a2a-{S}-{H}-{D}-{dt}"
            a = gen(seed, me, tag, (S * W, H, D), dt).cuda()
            ref = torch.cat([gen(seed, r, tag, (S * W, H, D), dt)[me * S:(me + 1) * S] for r in range(W)], dim=1)
            for variant in ("pipeline", "bulk", "wait_notify"):
                ok = True
                for it in range(2):  # the second call checks the signal-reset protocol
                    out = poisoned((S, H * W, D), dt)
                    ops.reverse_all_to_all(a, variant=variant, out=out)
                    torch.cuda.synchronize()
                    ok &= torch.equal(out.cpu(), ref)
                check(f"reverse_a2a {variant} S={S} H={H} D={D} {dt}", ok)
            # direct: into a symmetric output (poisoned in place), twice
            sym = ash.aclshmem_create_tensor([S, H * W, D], dt)
            ok = True
            for it in range(2):
                sym.fill_(float("nan"))
                ops.reverse_all_to_all(a, variant="direct", out=sym)
                torch.cuda.synchronize()
                ok &= torch.equal(sym.cpu(), ref)
            check(f"reverse_a2a direct S={S} H={H} D={D} {dt}", ok)
            ash.aclshmem_free_tensor(sym)
            # strided input (a view) through the pipeline variant
            if dt == torch.float32 and S == 37:
                big = gen(seed, me, tag + "s", (S * W, H, D + 3), dt).cuda()
                view = big[:, :, 1:D + 1]
                refv = torch.cat([gen(seed, r, tag + "s", (S * W, H, D + 3), dt)[me * S:(me + 1) * S, :, 1:D + 1]
                                  for r in range(W)], dim=1)
                out = ops.reverse_all_to_all(view, variant="pipeline")
                torch.cuda.synchronize()
                check("reverse_a2a pipeline strided input", torch.equal(out.cpu(), refv))
            # the pipeline's former name still runs it (a DeprecationWarning, once)
            if dt == torch.float16 and S == 64:
                out = poisoned((S, H * W, D), dt)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    ops.reverse_all_to_all(a, variant="mte", out=out)
                torch.cuda.synchronize()
                check("reverse_a2a mte (the pipeline's former name)", torch.equal(out.cpu(), ref))
            # dispatch: exact, and the round trip reverse(dispatch(x)) == x
            x = gen(seed, me, tag + "d", (S, H * W, D), dt).cuda()
            out = poisoned((S * W, H, D), dt)
            ops.dispatch_all_to_all(x, out=out)
            torch.cuda.synchronize()
            refd = torch.cat([gen(seed, r, tag + "d", (S, H * W, D), dt)[:, me * H:(me + 1) * H] for r in range(W)],
                             dim=0)
            back = ops.reverse_all_to_all(out, variant="wait_notify")
            torch.cuda.synchronize()
            check(f"dispatch_a2a S={S} H={H} D={D} {dt}", torch.equal(out.cpu(), refd))
            sym = ash.aclshmem_create_tensor([S * W, H, D], dt)
            sym.fill_(float("nan"))
            ops.dispatch_all_to_all(x, out=sym, variant="direct")
            torch.cuda.synchronize()
            check(f"dispatch_a2a direct S={S} H={H} D={D} {dt}", torch.equal(sym.cpu(), refd))
            ash.aclshmem_free_tensor(sym)
            check(f"reverse(dispatch(x)) == x S={S} {dt}", torch.equal(back.cpu(), x.cpu()))


def graph_replays(call, x_g, out, ins, refs, order, me, W, late_s):
    """Capture ``call()`` (it reads ``x_g`` and writes ``out``) after an eager warm-up on a side
    stream, then replay it once per k in ``order`` with ``x_g`` refilled from ``ins[k]``, ``out``
    poisoned with NaN and rank ``(me + k) % W`` arriving ``late_s`` late. True when every replay's
    output equals ``refs[k]`` exactly."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        call()
    ok = True
    for k in order:
        x_g.copy_(ins[k])
        out.fill_(float("nan"))
        torch.cuda.synchronize()
        if (me + k) % W == 0:
            time.sleep(late_s)
        g.replay()
        torch.cuda.synchronize()
        ok &= torch.equal(out.to(refs[k].device), refs[k])
    del g
    return ok


def scenario_a2a_epochs(seed, me, W):
    """The direct all-to-alls' epoch protocol (no barrier, no reset): back-to-back calls with new data
    each time and a different late rank each call (so peers really wait on "entered epoch e"), then
    CUDA-graph replays of one captured call (the epoch lives on the device) with the input refilled
    in place between replays. Every output is poisoned first and compared exactly."""
    S, H, D, dt = 48, 2, 128, torch.bfloat16
    ins = [gen(seed, me, f"ep{k}", (S * W, H, D), dt).cuda() for k in range(6)]
    refs = [torch.cat([gen(seed, r, f"ep{k}", (S * W, H, D), dt)[me * S:(me + 1) * S] for r in range(W)], dim=1)
            for k in range(6)]
    sym = ash.aclshmem_create_tensor([S, H * W, D], dt)
    ok = True
    for k in range(6):
        if (me + k) % W == 0:
            time.sleep(0.03)  # this rank arrives late at call k
        sym.fill_(float("nan"))
        ops.reverse_all_to_all(ins[k], variant="direct", out=sym)
        torch.cuda.synchronize()
        ok &= torch.equal(sym.cpu(), refs[k])
    check("reverse_a2a direct: 6 back-to-back calls, a late rank each call", ok)
    a_g = ins[0].clone()
    ok = graph_replays(lambda: ops.reverse_all_to_all(a_g, variant="direct", out=sym), a_g, sym, ins, refs,
                       (3, 1, 5), me, W, 0.03)
    check("reverse_a2a direct: CUDA-graph replays, new input each replay", ok)
    ash.aclshmem_free_tensor(sym)


def scenario_allreduce(seed, me, W):
    for N in (1 << 16, 12345, 7):
        for dt in DTYPES:
            tag = f"ar-{N}-{dt}"
            x = gen(seed, me, tag, (N,), dt).cuda()
            ref = sum(gen(seed, r, tag, (N,), dt).double() for r in range(W))
            for variant in ops.ALLREDUCE_VARIANTS + ("auto",):
                # the low-latency form (also what "auto" picks at these sizes) runs 3 times: epochs 1,
                # 2, 3 (both buffers, then reuse)
                e, same = 0.0, True
                for it in range(3 if variant in ("one_shot_ll", "auto") else 1):
                    out = poisoned((N,), dt)
                    ops.all_reduce(x, variant=variant, out=out)
                    torch.cuda.synchronize()
                    e = max(e, rel_err(out, ref))
                    same &= same_on_all_ranks(out)
                check(f"all_reduce {variant} N={N} {dt}", e <= AR_TOL[dt] and same,
                      f"rel_err={e:.2e} tol={AR_TOL[dt]:.0e} bitwise-equal-across-ranks={same}")


def scenario_ll(seed, me, W):
    """one_shot_ll (LL packets, epochs on the device, no barrier): back-to-back calls with new data and
    a different late rank each call, then CUDA-graph replays with the input refilled in place. Each
    output must equal one_shot's bit for bit (both sum in fp32 in rank order) and be the same on
    every rank; an odd count of 16-bit elements takes the padded path."""
    for N, dt in ((2048, torch.bfloat16), (4097, torch.float16), (100000, torch.float32)):
        ins = [gen(seed, me, f"ll{N}-{k}", (N,), dt).cuda() for k in range(6)]
        refs = [ops.all_reduce(x, variant="one_shot") for x in ins]
        torch.cuda.synchronize()
        ok = True
        for k in range(6):
            if (me + k) % W == 0:
                time.sleep(0.02)
            out = poisoned((N,), dt)
            ops.all_reduce(ins[k], variant="one_shot_ll", out=out)
            torch.cuda.synchronize()
            same = same_on_all_ranks(out)  # collective: called on every rank whatever the comparison gave
            ok &= torch.equal(out, refs[k]) and same
        check(f"all_reduce one_shot_ll N={N} {dt}: 6 calls, a late rank each, == one_shot bitwise", ok)
        x_g, o_g = ins[0].clone(), poisoned((N,), dt)
        ok = graph_replays(lambda: ops.all_reduce(x_g, variant="one_shot_ll", out=o_g), x_g, o_g, ins, refs,
                           (4, 2, 5), me, W, 0.02)
        check(f"all_reduce one_shot_ll N={N} {dt}: CUDA-graph replays, new input each", ok)
        # the eager fast path: calls without out= reuse the first call's plan (ops.all_reduce); new
        # data and a late rank each call, every result compared bit for bit
        ok = True
        for k in (1, 3, 0, 5, 2, 4):
            if (me + k) % W == 1 % W:
                time.sleep(0.02)
            y = ops.all_reduce(ins[k], variant="one_shot_ll")
            torch.cuda.synchronize()
            same = same_on_all_ranks(y)
            ok &= torch.equal(y, refs[k]) and same
        planned = ("all_reduce", ins[0].shape, dt, ins[0].get_device(), "one_shot_ll", None) in RESOURCES.plans
        even = N * ins[0].element_size() % 4 == 0
        check(f"all_reduce one_shot_ll N={N} {dt}: eager calls without out= == one_shot bitwise, plan cached "
              f"exactly when the size is whole words ({planned})", ok and planned == even)
        # x 4 bytes past a 16-byte boundary: not the plan's specialization, so the checked path; then
        # the aligned x again through the plan
        step = 4 // ins[0].element_size()
        ok = True
        for k in (2, 0):
            base = torch.empty(N + step, dtype=dt, device="cuda")
            xv = base[step:]
            xv.copy_(ins[k])
            ok &= xv.data_ptr() % 16 == 4
            y = ops.all_reduce(xv, variant="one_shot_ll")
            y2 = ops.all_reduce(ins[k], variant="one_shot_ll")
            torch.cuda.synchronize()
            same = same_on_all_ranks(y) and same_on_all_ranks(y2)
            ok &= torch.equal(y, refs[k]) and torch.equal(y2, refs[k]) and same
        check(f"all_reduce one_shot_ll N={N} {dt}: an unaligned x beside the cached plan", ok)


def OVERLAP_FORMS(impls):
    """(impl, gemm_streams) pairs to check: the piecewise cuBLAS forms with one and two GEMM streams."""
    return [(i, n) for i in impls for n in ((1,) if i in ("triton", "cublas_whole", "auto") else (1, 2))]


def TILE_LOADS(impl):
    """The Triton forms run with their tiles loaded by TMA where shapes allow ("auto") and with
    pointer loads; the others once (``_gemm.use_tma`` reads TDIST_TRITON_GEMM_LOADS per call)."""
    return ("auto", "pointer") if impl == "triton" else ("auto",)


def scenario_gemm(seed, me, W):
    try:
        _scenario_gemm(seed, me, W)
    finally:
        os.environ.pop("TDIST_TRITON_GEMM_LOADS", None)


def _scenario_gemm(seed, me, W):
    for (M, K, N) in ((256, 256, 384), (100, 72, 130), (640, 192, 520)):
        for dt in DTYPES:
            tag = f"ag-{M}-{K}-{N}-{dt}"
            a = gen(seed, me, tag, (M, K), dt).cuda()
            b = gen(seed, 99, tag + "b", (K, N), dt).cuda()
            ag = torch.cat([gen(seed, r, tag, (M, K), dt) for r in range(W)])
            ref = ag.double() @ b.cpu().double()
            # a third call with new rows, one rank late: a tile that reads its rows before their signal
            # computes with the last call's. Rank W // 2: at 8 ranks and M = 100 it is the whole rank
            # in the middle of the tile of rows 384..511 (BLOCK_M = 128).
            a_late = gen(seed, me, tag + "late", (M, K), dt).cuda()
            ag_late = torch.cat([gen(seed, r, tag + "late", (M, K), dt) for r in range(W)])
            ref_late = ag_late.double() @ b.cpu().double()
            for impl, ns, loads in ((i, n, lo) for i, n in OVERLAP_FORMS(ops.AG_GEMM_IMPLS) for lo in TILE_LOADS(i)):
                os.environ["TDIST_TRITON_GEMM_LOADS"] = loads
                e = 0.0
                for it in range(3):  # the second call checks the signal reset
                    out = poisoned((W * M, N), dt)
                    kw = {"chunk_m": 128 if M > 256 else None} if impl == "triton" else {"gemm_streams": ns}
                    if impl in ("auto", "cublas_whole"):
                        kw = {}
                    if it == 2 and me == W // 2:
                        torch.cuda._sleep(LATE_CYCLES)
                    ops.ag_gemm(a if it < 2 else a_late, b, out=out, impl=impl, **kw)
                    torch.cuda.synchronize()
                    e = max(e, rel_err(out, ref if it < 2 else ref_late))
                check(f"ag_gemm {impl} streams={ns} loads={loads} M={M} K={K} N={N} {dt}", e <= GEMM_TOL[dt],
                      f"rel_err={e:.2e}")
            # GEMM + RS: M rows in total, each rank gets M / W
            Mr = M * W if M % W else M
            tag = f"rs-{Mr}-{K}-{N}-{dt}"
            a = gen(seed, me, tag, (Mr, K), dt).cuda()
            b = gen(seed, me, tag + "b", (K, N), dt).cuda()
            full = sum(gen(seed, r, tag, (Mr, K), dt).double() @ gen(seed, r, tag + "b", (K, N), dt).double()
                       for r in range(W))
            ml = Mr // W
            for impl, ns, loads in ((i, n, lo) for i, n in OVERLAP_FORMS(ops.GEMM_RS_IMPLS) for lo in TILE_LOADS(i)):
                os.environ["TDIST_TRITON_GEMM_LOADS"] = loads
                e = 0.0
                for it in range(2):
                    out = poisoned((ml, N), dt)
                    ops.gemm_rs(a, b, out=out, impl=impl, **({"gemm_streams": ns} if ns > 1 else {}))
                    torch.cuda.synchronize()
                    e = max(e, rel_err(out, full[me * ml:(me + 1) * ml]))
                check(f"gemm_rs {impl} streams={ns} loads={loads} M={Mr} K={K} N={N} {dt}", e <= GEMM_TOL[dt],
                      f"rel_err={e:.2e}")


def scenario_errors(me, W):
    try:
        ops.reverse_all_to_all(torch.zeros(W * 2, 2, 2, device="cuda"), variant="direct",
                               out=torch.zeros(2, 2 * W, 2, device="cuda"))
        check("reverse_a2a direct rejects a non-symmetric out", False)
    except KernelArgError as e:
        check("reverse_a2a direct rejects a non-symmetric out", "symmetric heap" in str(e), str(e)[:80])
    try:
        ops.reverse_all_to_all(torch.zeros(W * 2 + 1, 2, 2, device="cuda"))
        check("reverse_a2a rejects S_total not a multiple of W", W == 1)
    except KernelArgError as e:
        check("reverse_a2a rejects S_total not a multiple of W", "multiple of world_size" in str(e))
    z = torch.zeros(4 * W, 8, device="cuda")
    for what, call, needle in (
            ("gemm_rs rejects gemm_streams=3", lambda: ops.gemm_rs(z, z.t(), gemm_streams=3), "gemm_streams must be"),
            ("ag_gemm rejects impl='cublas_ce'", lambda: ops.ag_gemm(z, z.t(), impl="cublas_ce"), "cublas_ce")):
        try:
            call()
            check(what, False)
        except KernelArgError as e:
            check(what, needle in str(e), str(e)[:80])
    try:
        ops.all_reduce(torch.zeros(4, dtype=torch.int32, device="cuda"))
        check("all_reduce rejects int32", False)
    except KernelArgError as e:
        check("all_reduce rejects int32", "supported: float16, bfloat16, float32" in str(e))


TEAM_HEAP = 64 << 20


def scenario_teams(seed, me, W):
    """group=: every op over a team instead of the world (docs/CONTRACT.md section 8): the strided
    teams of the even and of the odd PEs, then (from 4 ranks) the consecutive halves. The teams run at
    once, each on its own (a late member in one team only); a member's input is drawn from its world
    PE, so data that crossed into another team would be caught."""
    if W % 2:
        check("teams: skipped (an odd rank count)", True)
        return
    team = None
    for i in (0, 1):  # collective over every PE: one split per team
        team = ash.new_team(list(range(i, W, 2)), heap_bytes=TEAM_HEAP) or team
    teams = [("strided", team)]
    if W >= 4:
        teams.append(("halves", ash.new_subteams(W // 2, heap_bytes=TEAM_HEAP)))
    for kind, t in teams:
        _team_ops(seed, kind, t)


def _team_ops(seed, kind, t):
    n, r, pe = t.size, t.rank, t.pe
    name = f"team {kind} {t.pes()}"
    late = t.start == 0 and r == 0  # one member of one team starts late

    def delay():
        if late:
            torch.cuda._sleep(LATE_CYCLES)

    S, H, D, dt = 37, 3, 100, torch.bfloat16
    tag = "team-a2a"
    a = gen(seed, pe(r), tag, (S * n, H, D), dt).cuda()
    ref = torch.cat([gen(seed, pe(q), tag, (S * n, H, D), dt)[r * S:(r + 1) * S] for q in range(n)], dim=1)
    sym = ash.aclshmem_create_tensor([S, H * n, D], dt, team=t)  # collective over the team only
    for variant in ("pipeline", "bulk", "wait_notify", "direct"):
        ok = True
        for it in range(2):
            out = sym if variant == "direct" else poisoned((S, H * n, D), dt)
            out.fill_(float("nan"))
            delay()
            ops.reverse_all_to_all(a, variant=variant, out=out, group=t)
            torch.cuda.synchronize()
            ok &= torch.equal(out.cpu(), ref)
        check(f"{name} reverse_a2a {variant}", ok)
    ash.aclshmem_free_tensor(sym)
    x = gen(seed, pe(r), tag + "d", (S, H * n, D), dt).cuda()
    refd = torch.cat([gen(seed, pe(q), tag + "d", (S, H * n, D), dt)[:, r * H:(r + 1) * H] for q in range(n)], dim=0)
    symd = ash.aclshmem_create_tensor([S * n, H, D], dt, team=t)
    for variant in ("staged", "direct"):
        out = symd if variant == "direct" else poisoned((S * n, H, D), dt)
        out.fill_(float("nan"))
        ops.dispatch_all_to_all(x, out=out, variant=variant, group=t)
        torch.cuda.synchronize()
        check(f"{name} dispatch_a2a {variant}", torch.equal(out.cpu(), refd))
    ash.aclshmem_free_tensor(symd)
    for N in (1 << 16, 12345):
        tag = f"team-ar-{N}"
        xa = gen(seed, pe(r), tag, (N,), torch.float32).cuda()
        refa = sum(gen(seed, pe(q), tag, (N,), torch.float32).double() for q in range(n))
        for variant in ops.ALLREDUCE_VARIANTS + ("auto",):
            e = 0.0
            for it in range(3 if variant in ("one_shot_ll", "auto") else 1):
                out = poisoned((N,), torch.float32)
                delay()
                ops.all_reduce(xa, variant=variant, out=out, group=t)
                torch.cuda.synchronize()
                e = max(e, rel_err(out, refa))
            check(f"{name} all_reduce {variant} N={N}", e <= AR_TOL[torch.float32], f"rel_err={e:.2e}")
        y = ops.all_reduce(xa, group=t)  # the eager plan of a team: a second call takes it
        y2 = ops.all_reduce(xa, group=t)
        torch.cuda.synchronize()
        check(f"{name} all_reduce eager plan N={N}", rel_err(y, refa) <= AR_TOL[torch.float32]
              and torch.equal(y, y2))
    M, K, N = 100, 72, 130
    tag = "team-ag"
    a = gen(seed, pe(r), tag, (M, K), dt).cuda()
    b = gen(seed, 99, tag + "b", (K, N), dt).cuda()
    refg = torch.cat([gen(seed, pe(q), tag, (M, K), dt) for q in range(n)]).double() @ b.cpu().double()
    for impl in ("cublas", "cublas_whole", "triton"):
        e = 0.0
        for it in range(2):
            out = poisoned((n * M, N), dt)
            delay()
            ops.ag_gemm(a, b, out=out, impl=impl, group=t)
            torch.cuda.synchronize()
            e = max(e, rel_err(out, refg))
        check(f"{name} ag_gemm {impl}", e <= GEMM_TOL[dt], f"rel_err={e:.2e}")
    Mr = M * n
    tag = "team-rs"
    a = gen(seed, pe(r), tag, (Mr, K), dt).cuda()
    b = gen(seed, pe(r), tag + "b", (K, N), dt).cuda()
    full = sum(gen(seed, pe(q), tag, (Mr, K), dt).double() @ gen(seed, pe(q), tag + "b", (K, N), dt).double()
               for q in range(n))
    for impl in ("cublas", "cublas_ce", "cublas_whole", "triton"):
        e = 0.0
        for it in range(2):
            out = poisoned((M, N), dt)
            delay()
            ops.gemm_rs(a, b, out=out, impl=impl, group=t)
            torch.cuda.synchronize()
            e = max(e, rel_err(out, full[r * M:(r + 1) * M]))
        check(f"{name} gemm_rs {impl}", e <= GEMM_TOL[dt], f"rel_err={e:.2e}")
    ash.team_barrier(t)


def main():
    t_start = time.monotonic()
    me, W = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", me)) % torch.cuda.device_count())
    ash.init_from_env(local_mem_size=256 << 20, backend=tdist.BACKEND_CUDA)
    seed = int.from_bytes(tdist.ctrl_broadcast(os.urandom(4), 0), "little")
    info = ops.sm_info()
    print(f"rank {me}/{W}: seed {seed}, SM budget {info['budget']} (reported {info['reported']}, "
          f"MPS {info['mps_pct']} %)", flush=True)
    only = os.environ.get("TDIST_KERNELS_ONLY", "")
    for name, fn in (("a2a", lambda: scenario_a2a(seed, me, W)),
                     ("a2a_epochs", lambda: scenario_a2a_epochs(seed, me, W)),
                     ("allreduce", lambda: scenario_allreduce(seed, me, W)),
                     ("ll", lambda: scenario_ll(seed, me, W)),
                     ("gemm", lambda: scenario_gemm(seed, me, W)),
                     ("errors", lambda: scenario_errors(me, W)),
                     ("teams", lambda: scenario_teams(seed, me, W))):
        if only and name not in only.split(","):
            continue
        t0 = time.monotonic()
        try:
            fn()
            if me == 0:
                print(f"scenario {name}: {time.monotonic() - t0:.1f} s", flush=True)
        except Exception:
            traceback.print_exc()
            check(f"scenario {name} raised", False)
            break  # a failed collective leaves the ranks out of step: stop rather than hang
    ops.release()
    ash.aclshmem_finalize()
    print(f"rank {me}: {len(failures)} failure(s): {failures} ({time.monotonic() - t_start:.1f} s)", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
