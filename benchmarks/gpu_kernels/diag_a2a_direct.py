"""Where the direct reverse all-to-all's time goes on one GPU: the op as users call it, then the
same tile loop with parts of its epoch protocol left out, and the tile loop alone at other tile
shapes and program counts, each next to the copy ceiling of bench.py (every rank copies the same
bytes device to device at the same time; CUDA-graph replays, 10 calls per sample, slowest rank).

    tools/tdist-run -n 2 -- python3 benchmarks/gpu_kernels/diag_a2a_direct.py [--a2a-mb 16,64,256]

Only the op itself and the diagnostic kernel with the whole protocol are checked (exactly, against a
torch reference). The forms without the protocol's waits race with the peers' next calls by design:
they price the protocol's parts, and their outputs are not results.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
from bench import ash, ops, torch  # noqa: E402

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import triton_dist.language as dl  # noqa: E402
from tdist_kernels import all_to_all as a2a  # noqa: E402
from tdist_kernels._common import SIG, SIG_ELEMS, cta_sync, epoch_end, epoch_slots, epoch_wait_ready  # noqa: E402
from tdist_kernels._common import fence_sys  # noqa: E402
from tdist_kernels._common import team_pe  # noqa: E402
from tdist_kernels._resources import RESOURCES  # noqa: E402


@triton.jit(do_not_specialize=["rank", "world"])
def diag_direct_kernel(src_ptr, out_ptr, ctl_ptr, rank, world, pe0, pes, S, H, D,
                       stride_ss, stride_sh, stride_sd, stride_os, stride_oh, stride_od,
                       BEGIN: tl.constexpr, WAIT: tl.constexpr, END: tl.constexpr,
                       BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    """``all_to_all.direct_a2a_pass`` (REVERSE) with switches. BEGIN: 0 no announcement, 1 every
    program announces (the op), 2 program 0 alone. WAIT: the per-tile wait for the target's
    announcement. END: 0 none; 1 the form before 2026-12-04 (a system fence in every program, one
    counter for all programs, the last one's done round); 2 the op's ``_common.epoch_end`` (the
    same count, one system fence by the last program). END 0 is timed with WAIT 0 only (its
    program 0 advances the epoch at once, so a wait for an announcement could not be met)."""
    e = tl.load(ctl_ptr) + 1
    announce = tl.program_id(0) == 0
    if BEGIN == 1:
        announce = tl.program_id(0) >= 0
    if BEGIN != 0 and announce:
        for r in range(0, world):
            if r != rank:
                tl.atomic_xchg(dl.symm_at(ctl_ptr + (2 + rank) * SIG, team_pe(r, pe0, pes)), e, sem="relaxed",
                               scope="sys")
    ntiles = world * H * tl.cdiv(S, BLOCK_S) * tl.cdiv(D, BLOCK_D)
    for t in range(tl.program_id(0), ntiles, tl.num_programs(0)):
        target, h, offs_s, offs_d, mask = a2a.direct_tile(t, rank, world, S, H, D, BLOCK_S, BLOCK_D)
        src_rows = (target * S + offs_s).to(tl.int64)
        x = tl.load(src_ptr + src_rows[:, None] * stride_ss + h * stride_sh + offs_d[None, :] * stride_sd, mask=mask)
        tok = rank * 0
        if WAIT:
            tok = epoch_wait_ready(ctl_ptr, target, rank, e)
        dst = dl.consume_token(dl.symm_at(out_ptr, team_pe(target, pe0, pes)), tok)
        tl.store(dst + offs_s.to(tl.int64)[:, None] * stride_os + (rank * H + h) * stride_oh
                 + offs_d[None, :] * stride_od, x, mask=mask)
    if END == 0:
        if tl.program_id(0) == 0:
            tl.store(ctl_ptr, e)
    elif END == 2:
        epoch_end(ctl_ptr, rank, world, pe0, pes, e)
    else:
        fence_sys()
        cta_sync()
        old = tl.atomic_add(ctl_ptr + SIG, 1, sem="acq_rel", scope="gpu")
        if old == e * tl.num_programs(0) - 1:
            for r in range(0, world):
                if r != rank:
                    dl.notify(ctl_ptr + (2 + world + rank) * SIG, team_pe(r, pe0, pes), e)
            for r in range(0, world):
                if r != rank:
                    dl.wait(ctl_ptr + (2 + world + r) * SIG, 1, "sys", "acquire", waitValue=e)
            tl.store(ctl_ptr, e)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a2a-mb", default="16,64,256")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--tiles", default="32x256,8x1024,64x256")
    ap.add_argument("--per-sm", default="4,8,16")
    args = ap.parse_args()
    me, W, _ = bench.start(2 << 30, True, 10, nccl=False)
    dt, H, D = torch.bfloat16, 8, 1024
    shared = RESOURCES.shared_gpu()
    nsm = RESOURCES.sm_budget()
    forms = [("the op's protocol (the last program fences)", 1, 1, 2),
             ("former end (a fence in every program)", 1, 1, 1),
             ("the op's end, announce by program 0 only", 2, 1, 2), ("the op's end, no per-tile wait", 1, 0, 2),
             ("announcements only (no wait, no end round)", 1, 0, 0), ("no protocol: tiles only", 0, 0, 0)]
    checked = {(1, 1, 2), (1, 1, 1)}
    for mb in [float(x) for x in args.a2a_mb.split(",")]:
        S = max(1, int(mb * 2**20) // (2 * H * D * W))
        tag = f"diag-{mb}"
        a = bench.rgen(me, tag, (S * W, H, D), dt)
        ref = torch.cat([bench.rgen(r, tag, (S * W, H, D), dt)[me * S:(me + 1) * S] for r in range(W)], dim=1)
        nbytes = a.numel() * a.element_size()
        src = torch.randn(nbytes // 2, device="cuda").to(dt)
        dst = torch.empty_like(src)
        t_copy = bench.worst(bench.timed(lambda: dst.copy_(src), args.reps, what=f"copy {nbytes >> 20} MiB"))
        sym = ash.aclshmem_create_tensor([S, H * W, D], dt)
        rows = [("copy ceiling (torch copy_)", t_copy)]
        call = lambda: ops.reverse_all_to_all(a, variant="direct", out=sym)  # noqa: E731
        rows.append(("ops.reverse_all_to_all direct", bench.worst(bench.timed(call, args.reps, what="op"))))
        bench.verify(f"op {mb} MiB", call, sym, ref)
        bs0, bd0 = a2a.direct_tiles(D, 2, shared)

        def launcher(begin, wait, end, bs, bd, grid):
            ctl, = RESOURCES.epoch_buffers(("diag", begin, wait, end, bs, bd, grid, S), "diag",
                                           ([epoch_slots(W) * SIG_ELEMS], torch.int64))
            return lambda: diag_direct_kernel[(grid,)](a, sym, ctl, me, W, *RESOURCES.pe_map(), S, H, D, *a.stride(),
                                                       *sym.stride(), BEGIN=begin, WAIT=wait, END=end, BLOCK_S=bs,
                                                       BLOCK_D=bd, num_warps=4)

        grid0 = a2a.direct_grid(W, S, H, D, bs0, bd0, nsm, shared)
        for name, begin, wait, end in forms:
            fn = launcher(begin, wait, end, bs0, bd0, grid0)
            rows.append((f"{name}, {bs0}x{bd0} x {grid0} programs", bench.worst(bench.timed(fn, args.reps, what=name))))
            if (begin, wait, end) in checked:
                bench.verify(f"diag {name} {mb} MiB", fn, sym, ref)
        for tile in args.tiles.split(","):
            bs, bd = (int(v) for v in tile.split("x"))
            for p in (int(v) for v in args.per_sm.split(",")):
                ntiles = a2a.direct_tile_count(W, S, H, D, bs, bd)
                grid = max(1, min(ntiles, p * nsm))
                for name, begin, wait, end in (forms[0], forms[-1]):
                    fn = launcher(begin, wait, end, bs, bd, grid)
                    what = f"{name}, {bs}x{bd} x {grid} programs ({p}/SM, {ntiles} tiles)"
                    rows.append((what, bench.worst(bench.timed(fn, args.reps, what=what))))
        ash.aclshmem_free_tensor(sym)
        ops.release()
        if me == 0:
            for name, t in rows:
                print(f"DIAG W={W} {mb:g} MiB/rank: {name}: {t * 1e6:.1f} us ({t_copy / t:.3f}x the copy ceiling)",
                      flush=True)
    ops.release()
    ash.aclshmem_finalize()
    if bench.CHECKS["failed"]:
        print(f"rank {me}: {len(bench.CHECKS['failed'])} failed checks", flush=True)
        sys.exit(1)
    print(f"rank {me}: {bench.CHECKS['passed']} checks passed", flush=True)


if __name__ == "__main__":
    main()
