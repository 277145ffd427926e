"""All-reduce (sum) of a flat tensor of N elements on every rank: one-shot, two-shot, ring and LL
packets; kernels (Triton with dl.*) and their plans.

The op copies the input into a symmetric buffer first. Every variant reduces in a fixed order, so
all ranks get bitwise-equal results (``VARIANTS``):

``one_shot``     copy in, barrier, every rank sums all W buffers for all N elements (fp32
                 accumulate).
``two_shot``     copy in, barrier, rank t reduces segment t of all buffers into its own buffer,
                 barrier, every rank gathers the W reduced segments.
``ring``         seed 003's ring, done correctly: W segments, W - 1 reduce-scatter steps then W - 1
                 all-gather steps; each step's data goes to a distinct receive slot of the next rank
                 and is announced by its own (step, tile) signal, so nothing is overwritten before
                 it is read and no signal is reused within a launch (the seed's version sends
                 ``signal=step`` with "set" but waits for 1, and reuses one buffer for every step).
                 Partial sums travel in the input dtype, as NCCL's ring does.
``one_shot_ll``  one launch of LL packets: every 4 bytes travel with the epoch in one 8-byte store,
                 so there is no barrier, fence or reset (the small-message latency form).

The first three run under seed 002's host protocol (``_resources.signal_round``); one_shot_ll keeps
its epochs on the device (``_resources.Resources.epoch_buffers``). ``run`` below is the plan
(buffers, grid, launch) that ``ops.all_reduce`` calls after validation.
"""
import triton
import triton.language as tl
from triton.language import core as tlc

import triton_dist.language as dl
from triton_dist.language import core as dlcore
from triton_dist.language._front import DistributedError, Front

from ._common import SIG, SIG_ELEMS, bar_slots, cdiv, fence_sys, grid_barrier, pow2, resident_grid, team_pe
from ._launch import Launch
from ._resources import RESOURCES, signal_round

VARIANTS = ("one_shot", "two_shot", "ring", "one_shot_ll")


# ---------------------------------------------------------------------------------------------
# one_shot


@triton.jit(do_not_specialize=['rank', 'world'])
def allreduce_one_shot_kernel(x_ptr, buf_ptr, out_ptr, bar_ptr, rank, world, pe0, pes, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    for off in range(pid * BLOCK, N, nprog * BLOCK):
        idx = off + tl.arange(0, BLOCK)
        m = idx < N
        tl.store(buf_ptr + idx, tl.load(x_ptr + idx, mask=m), mask=m)
    grid_barrier(bar_ptr, 1, rank, world, pe0, pes)
    for off in range(pid * BLOCK, N, nprog * BLOCK):
        idx = off + tl.arange(0, BLOCK)
        m = idx < N
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for r in range(0, world):
            acc += tl.load(dl.symm_at(buf_ptr, team_pe(r, pe0, pes)) + idx, mask=m, other=0.0).to(tl.float32)
        tl.store(out_ptr + idx, acc.to(out_ptr.dtype.element_ty), mask=m)
    # nobody may overwrite buf (next call) while a peer still reads it
    grid_barrier(bar_ptr, 2, rank, world, pe0, pes)


# LL (low-latency) packets: every 4 bytes of payload travel in one 8-byte word with the epoch in the
# high half, written by one 8-byte store and read by one 8-byte load (aligned 8-byte accesses are
# single-copy atomic, and each element of a vector access is one such access), so a reader that sees
# the epoch it expects has the payload of that store too: no fence, no flag, no barrier between the
# writer's store and the reader's use. A reader loads the packets of all peers at once ([WP, BLOCK]:
# one round of loads in flight, not one per peer) and reloads until every one carries the epoch.


@tlc.builtin
def ll_clock(_semantic=None, _builder=None):
    """The start time of the LL loop's wait (the ABI's ``tdistx_clock_i64``, for ``ll_check``). The LL
    protocol polls packets with volatile loads, which the Ascend lowering (and so CPU ranks) does not
    keep as re-reads: there the kernel is refused here, at compile time, instead of spinning on a
    hoisted load."""
    f = Front("all_reduce one_shot_ll", _semantic, _builder)
    if f.lowering != "ptx":
        raise DistributedError(f"all_reduce one_shot_ll is not available on {f.platform}: its LL packets are "
                               "polled with volatile loads, which that lowering does not re-read; "
                               "use one_shot / two_shot / ring")
    return dlcore._extern("tdistx_clock_i64", [], [], tl.int64, _semantic, is_pure=False)


@tlc.builtin
def ll_check(t0, addr, epoch, missing, _semantic=None, _builder=None):
    """The one wait's check for a loop that polls packets, not a slot (``tdistx_wait_check_i64``):
    bounded by the runtime's budget, ended by a recorded fault (a lost peer), and on either the
    fault record names the packet row waited on, the epoch expected and the words still missing;
    the program then stops. Call it after a failed poll."""
    args = [_semantic.cast(_semantic.to_tensor(x), tl.int64) for x in (t0, -1, addr)]
    args += [_semantic.cast(_semantic.to_tensor(0), tl.int32)]  # TDIST_CMP_EQ
    args += [_semantic.cast(_semantic.to_tensor(x), tl.int64) for x in (epoch, missing)]
    return dlcore._extern("tdistx_wait_check_i64", args, [tl.int64, tl.int64, tl.int64, tl.int32, tl.int64, tl.int64],
                          tl.int32, _semantic, is_pure=False)


@triton.jit
def _ll_unpack(w, KIND: tl.constexpr):
    """(low element, high element) of int32 payload words as fp32; KIND 0: one fp32 (high is 0),
    1: two fp16, 2: two bf16."""
    if KIND == 0:
        return w.to(tl.float32, bitcast=True), tl.zeros(w.shape, tl.float32)
    else:
        ty = tl.float16 if KIND == 1 else tl.bfloat16
        lo = (w & 0xFFFF).to(tl.int16).to(ty, bitcast=True).to(tl.float32)
        hi = ((w >> 16) & 0xFFFF).to(tl.int16).to(ty, bitcast=True).to(tl.float32)
        return lo, hi


@triton.jit
def _ll_pack(lo, hi, KIND: tl.constexpr):
    if KIND == 0:
        return lo.to(tl.int32, bitcast=True)
    else:
        ty = tl.float16 if KIND == 1 else tl.bfloat16
        lb = lo.to(ty).to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
        hb = hi.to(ty).to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
        return lb | (hb << 16)


@triton.jit(do_not_specialize=['rank', 'world'])
def allreduce_ll_kernel(x_ptr, buf_ptr, out_ptr, epoch_ptr, rank, world, pe0, pes, NW, KIND: tl.constexpr,
                        BLOCK: tl.constexpr, WP: tl.constexpr):
    """Low-latency one-shot all-reduce over ``NW`` int32 payload words (x and out viewed as int32):
    one launch, no barrier, no fence, no signal reset. ``WP``: a power of two >= ``world``.

    Program ``pid`` runs epoch ``e`` (its own counter, kept on the device so CUDA-graph replays
    advance it). It writes its words of ``x`` as LL packets ``(e << 32) | word`` into buffer ``e % 2``
    of every peer at slot ``rank``, waits until every peer's packets of its words carry epoch ``e``,
    and sums the W contributions in rank order (fp32; its own from ``x``; bitwise equal on every
    PE). Reuse is safe without a barrier: this program writes buffer ``e % 2`` of peer t again at
    epoch ``e + 2`` only after it read t's epoch ``e + 1`` packets, which t writes after its epoch
    ``e`` launch (the last reader of that buffer there) completed. Programs wait only for the same
    program of other PEs, which writes before it waits: no residency requirement."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    NN = NW.to(tl.int64)
    e = tl.load(epoch_ptr + pid * SIG) + 1
    par = e % 2
    e32 = e & 0xFFFFFFFF
    tag = e32 << 32
    for off in range(pid * BLOCK, NW, nprog * BLOCK):
        idx = off + tl.arange(0, BLOCK)
        m = idx < NW
        pkt = (tl.load(x_ptr + idx, mask=m).to(tl.int64) & 0xFFFFFFFF) | tag
        for j in range(1, world):
            t = (rank + j) % world
            tl.store(dl.symm_at(buf_ptr, team_pe(t, pe0, pes)) + (par * world + rank) * NN + idx, pkt, mask=m)
    t0 = ll_clock()
    rr = tl.arange(0, WP)[:, None]
    for off in range(pid * BLOCK, NW, nprog * BLOCK):
        idx = off + tl.arange(0, BLOCK)
        m = idx < NW
        need = (rr < world) & (rr != rank) & m[None, :]
        ptrs = buf_ptr + (par * world + rr).to(tl.int64) * NN + idx[None, :]
        p = tl.load(ptrs, mask=need, other=0, volatile=True)
        missing = tl.sum((need & (((p >> 32) & 0xFFFFFFFF) != e32)).to(tl.int32))
        polls = 0
        while missing != 0:
            polls += 1
            if polls % 64 == 0:  # the check (a timer read and a load of the fault word) every 64 polls
                ll_check(t0, buf_ptr + (par * world).to(tl.int64) * NN + off, e32, missing)
            p = tl.load(ptrs, mask=need, other=0, volatile=True)
            missing = tl.sum((need & (((p >> 32) & 0xFFFFFFFF) != e32)).to(tl.int32))
        own = tl.load(x_ptr + idx, mask=m, other=0)
        w = tl.where(rr == rank, own[None, :], (p & 0xFFFFFFFF).to(tl.int32))
        lo, hi = _ll_unpack(w, KIND)
        acc_lo = tl.zeros([BLOCK], tl.float32)
        acc_hi = tl.zeros([BLOCK], tl.float32)
        for r in tl.static_range(WP):  # rank order: each row selected alone (x + 0.0 is exact)
            acc_lo += tl.sum(tl.where(rr == r, lo, 0.0), axis=0)
            acc_hi += tl.sum(tl.where(rr == r, hi, 0.0), axis=0)
        tl.store(out_ptr + idx, _ll_pack(acc_lo, acc_hi, KIND), mask=m)
    tl.store(epoch_ptr + pid * SIG, e)


def ll_block(world, num_warps):
    """Payload words per LL program: [WP, BLOCK] packets held at once, 16 per thread."""
    return max(1, 512 * num_warps // pow2(world))


def ll_buffer_words(world, nw):
    """int64 words of the LL packets, ``[2, W, NW]`` (two parities, one slot per source PE); the host
    puts the per-program epoch slots right after them in the same symmetric area."""
    return 2 * world * nw


@triton.jit(do_not_specialize=['rank', 'world'])
def allreduce_two_shot_kernel(x_ptr, buf_ptr, out_ptr, bar_ptr, rank, world, pe0, pes, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    for off in range(pid * BLOCK, N, nprog * BLOCK):
        idx = off + tl.arange(0, BLOCK)
        m = idx < N
        tl.store(buf_ptr + idx, tl.load(x_ptr + idx, mask=m), mask=m)
    grid_barrier(bar_ptr, 1, rank, world, pe0, pes)
    seg = tl.cdiv(N, world)
    lo = rank * seg
    hi = tl.minimum(lo + seg, N)
    # reduce-scatter: only this rank reads segment `rank` of any buffer, so writing the sum back into
    # the own buffer's segment races with nobody
    for off in range(lo + pid * BLOCK, hi, nprog * BLOCK):
        idx = off + tl.arange(0, BLOCK)
        m = idx < hi
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for r in range(0, world):
            acc += tl.load(dl.symm_at(buf_ptr, team_pe(r, pe0, pes)) + idx, mask=m, other=0.0).to(tl.float32)
        tl.store(buf_ptr + idx, acc.to(buf_ptr.dtype.element_ty), mask=m)
    grid_barrier(bar_ptr, 2, rank, world, pe0, pes)
    # all-gather
    for t in range(0, world):
        src = (rank + t) % world
        slo = src * seg
        shi = tl.minimum(slo + seg, N)
        for off in range(slo + pid * BLOCK, shi, nprog * BLOCK):
            idx = off + tl.arange(0, BLOCK)
            m = idx < shi
            tl.store(out_ptr + idx, tl.load(dl.symm_at(buf_ptr, team_pe(src, pe0, pes)) + idx, mask=m), mask=m)
    grid_barrier(bar_ptr, 3, rank, world, pe0, pes)


@triton.jit(do_not_specialize=['rank', 'world'])
def allreduce_ring_kernel(x_ptr, recv_ptr, out_ptr, sig_ptr, rank, world, pe0, pes, N, BLOCK: tl.constexpr):
    """recv: symmetric ``[2 * (W - 1), seg]`` (one slot per step of each phase);
    sig: ``[2 * (W - 1), tiles_per_seg]`` slots, set to 1 once per launch (host zeroes them)."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    seg = tl.cdiv(N, world)
    ntile = tl.cdiv(seg, BLOCK)
    nxt = (rank + 1) % world
    steps = world - 1
    for tile in range(pid, ntile, nprog):
        toff = tile * BLOCK + tl.arange(0, BLOCK)
        # ---- reduce-scatter. Step s: receive segment (rank - s - 1) from the previous rank, add the
        # own contribution, forward; the first send is the own segment `rank`.
        c0 = rank
        i0 = c0 * seg + toff
        m0 = (toff < seg) & (i0 < N)
        part = tl.load(x_ptr + i0, mask=m0, other=0.0)
        if steps > 0:
            tl.store(dl.symm_at(recv_ptr, team_pe(nxt, pe0, pes)) + 0 * seg + toff, part, mask=toff < seg)
            fence_sys()
            dl.notify(sig_ptr + (0 * ntile + tile) * SIG, team_pe(nxt, pe0, pes), 1)
        for s in range(0, steps):
            c = (rank - s - 1 + world) % world
            i = c * seg + toff
            m = (toff < seg) & (i < N)
            tok = dl.wait(sig_ptr + (s * ntile + tile) * SIG, 1, "gpu", "acquire", waitValue=1)
            src = dl.consume_token(recv_ptr, tok)
            got = tl.load(src + s * seg + toff, mask=toff < seg, other=0.0)
            part = (got.to(tl.float32) + tl.load(x_ptr + i, mask=m, other=0.0).to(tl.float32)).to(got.dtype)
            if s + 1 < steps:
                tl.store(dl.symm_at(recv_ptr, team_pe(nxt, pe0, pes)) + (s + 1) * seg + toff, part, mask=toff < seg)
                fence_sys()
                dl.notify(sig_ptr + ((s + 1) * ntile + tile) * SIG, team_pe(nxt, pe0, pes), 1)
        # `part` is now the fully reduced segment (rank + 1) % W (or the own data when W == 1)
        own = (rank + 1) % world
        io = own * seg + toff
        tl.store(out_ptr + io, part.to(out_ptr.dtype.element_ty), mask=(toff < seg) & (io < N))
        # ---- all-gather. Step s: receive segment (rank - s) from the previous rank, keep, forward.
        if steps > 0:
            tl.store(dl.symm_at(recv_ptr, team_pe(nxt, pe0, pes)) + steps * seg + toff, part, mask=toff < seg)
            fence_sys()
            dl.notify(sig_ptr + (steps * ntile + tile) * SIG, team_pe(nxt, pe0, pes), 1)
        for s in range(0, steps):
            c = (rank - s + world) % world
            i = c * seg + toff
            tok = dl.wait(sig_ptr + ((steps + s) * ntile + tile) * SIG, 1, "gpu", "acquire", waitValue=1)
            src = dl.consume_token(recv_ptr, tok)
            got = tl.load(src + (steps + s) * seg + toff, mask=toff < seg, other=0.0)
            tl.store(out_ptr + i, got.to(out_ptr.dtype.element_ty), mask=(toff < seg) & (i < N))
            if s + 1 < steps:
                tl.store(dl.symm_at(recv_ptr, team_pe(nxt, pe0, pes)) + (steps + s + 1) * seg + toff, got,
                         mask=toff < seg)
                fence_sys()
                dl.notify(sig_ptr + ((steps + s + 1) * ntile + tile) * SIG, team_pe(nxt, pe0, pes), 1)


def ring_buffer_elems(world, N):
    return max(2 * (world - 1), 1) * cdiv(N, world)


def ring_signal_slots(world, N, block):
    return max(2 * (world - 1), 1) * cdiv(cdiv(N, world), block)


# ---------------------------------------------------------------------------------------------
# Grid, program shape and plans


def allreduce_grid(nsm):
    return resident_grid(nsm, 4)


SHOT_BLOCK = 2048  # elements per program and iteration of one_shot, two_shot and ring

LL_KIND = {"float32": 0, "float16": 1, "bfloat16": 2}
# Warps per LL program (benchmarks/gpu_kernels/sweep_ll.py, 2 and 4 GPUs and MPS): up to 64 KiB one
# warp per program (more, smaller programs; 6.0 against 6.7 us at 4 KiB on 4 GPUs), above it four.
LL_WARPS = None  # None: by size as above; an int fixes it


def _ll_warps(nbytes):
    return LL_WARPS or (1 if nbytes <= 64 << 10 else 4)


def run(variant, xf, out, W, me, dt):
    """The sum over ranks of the flat contiguous ``xf`` into the contiguous ``out`` (``ops.all_reduce``
    after validation and the choice of "auto")."""
    import torch
    nsm = RESOURCES.sm_budget()
    N = xf.numel()
    sc = RESOURCES.scope()
    if variant == "one_shot_ll":
        return _run_ll(xf, out, W, me, dt, nsm)
    if variant == "ring":
        recv, sig = RESOURCES.symmetric(("all_reduce", variant, N, dt, W), ([ring_buffer_elems(W, N)], xf.dtype),
                                        ([ring_signal_slots(W, N, SHOT_BLOCK) * SIG_ELEMS], torch.int64))
        grid = max(1, min(allreduce_grid(nsm), cdiv(cdiv(N, W), SHOT_BLOCK)))
        launch = lambda: allreduce_ring_kernel[(grid,)](  # noqa: E731
            xf, recv, out, sig, me, W, sc.start, sc.stride, N, BLOCK=SHOT_BLOCK, num_warps=4)
    else:
        buf, sig = RESOURCES.symmetric(("all_reduce", "shot", N, dt, W), ([N], xf.dtype),
                                       ([bar_slots(W) * SIG_ELEMS], torch.int64))
        kern = allreduce_one_shot_kernel if variant == "one_shot" else allreduce_two_shot_kernel
        grid = max(1, min(allreduce_grid(nsm), cdiv(N, SHOT_BLOCK)))
        launch = lambda: kern[(grid,)](xf, buf, out, sig, me, W, sc.start, sc.stride, N,  # noqa: E731
                                        BLOCK=SHOT_BLOCK, num_warps=4)
    with signal_round(sig):
        launch()
    return out


def _run_ll(xf, out, W, me, dt, nsm):
    """one_shot_ll: the payload moves as int32 words (two 16-bit elements or one fp32 per word); an
    odd count of 16-bit elements goes through a padded copy."""
    import torch
    N = xf.numel()
    nbytes = N * xf.element_size()
    nw = cdiv(nbytes, 4)
    flat = out.view(-1)
    if nbytes % 4:
        xin = torch.zeros(2 * nw, dtype=xf.dtype, device=xf.device)
        xin[:N] = xf
        o = torch.empty_like(xin)
    else:
        xin, o = xf, flat
    plan = ll_plan(nw, W, me, dt, nsm, (xin.data_ptr() % 16 == 0, o.data_ptr() % 16 == 0))
    sc = RESOURCES.scope()
    plan.launch(xin.view(torch.int32), plan.area, o.view(torch.int32), plan.epochs, me, W, sc.start, sc.stride,
                plan.nw)
    if o is not flat:
        flat.copy_(o[:N])
    return out


class LLPlan:
    """The one_shot_ll call for ``nw`` payload words of one dtype, made once per (nw, dtype,
    alignment of x and out): the symmetric packet and epoch area, the grid and a ``_launch.Launch``.
    ``__call__`` is the eager fast path of ``ops.all_reduce`` for a contiguous ``x`` of ``4 * nw``
    bytes into a new tensor (aligned, as the allocator's are): one ``empty_like`` and one launch,
    with device addresses as integers (every check was made by the first call with this key)."""

    __slots__ = ("nw", "area", "epochs", "launch", "_args", "_empty_like")

    def __init__(self, nw, W, me, dt, nsm):
        import torch
        warps = _ll_warps(4 * nw)
        block = ll_block(W, warps)
        grid = max(1, min(allreduce_grid(nsm), cdiv(nw, block)))
        self.nw = nw
        self.area, = RESOURCES.epoch_buffers(("all_reduce", "one_shot_ll", nw, W, grid), "all_reduce",
                                             ([ll_buffer_words(W, nw) + grid * SIG_ELEMS], torch.int64))
        self.epochs = self.area[ll_buffer_words(W, nw):]
        self.launch = Launch(allreduce_ll_kernel, (grid,), {"KIND": LL_KIND[dt], "BLOCK": block, "WP": pow2(W)},
                             {"num_warps": warps})
        sc = RESOURCES.scope()
        self._args = (self.area.data_ptr(), self.epochs.data_ptr(), me, W, sc.start, sc.stride, nw)
        self._empty_like = torch.empty_like

    def __call__(self, x):
        out = self._empty_like(x)
        area, epochs, me, W, pe0, pes, nw = self._args
        self.launch(x.data_ptr(), area, out.data_ptr(), epochs, me, W, pe0, pes, nw)
        return out


def ll_plan(nw, W, me, dt, nsm, aligned):
    """The cached ``LLPlan`` (``aligned``: whether the addresses of x and out are 16-byte aligned,
    which Triton specialises the kernel on)."""
    return RESOURCES.local(("all_reduce", "ll_plan", nw, W, dt, aligned), lambda: LLPlan(nw, W, me, dt, nsm))


def compile_cases(dtype="fp16"):
    p = f"*{dtype}"
    i = "i32"
    return [
        ("allreduce_ll", allreduce_ll_kernel,
         {"x_ptr": "*i32", "buf_ptr": "*i64", "out_ptr": "*i32", "epoch_ptr": "*i64", "rank": i, "world": i,
          "pe0": i, "pes": i,
          "NW": i}, {"KIND": {"fp32": 0, "fp16": 1, "bf16": 2}[dtype], "BLOCK": 512, "WP": 4}),
        ("allreduce_one_shot", allreduce_one_shot_kernel,
         {"x_ptr": p, "buf_ptr": p, "out_ptr": p, "bar_ptr": "*i64", "rank": i, "world": i, "pe0": i, "pes": i, "N": i},
         {"BLOCK": 2048}),
        ("allreduce_two_shot", allreduce_two_shot_kernel,
         {"x_ptr": p, "buf_ptr": p, "out_ptr": p, "bar_ptr": "*i64", "rank": i, "world": i, "pe0": i, "pes": i, "N": i},
         {"BLOCK": 2048}),
        ("allreduce_ring", allreduce_ring_kernel,
         {"x_ptr": p, "recv_ptr": p, "out_ptr": p, "sig_ptr": "*i64", "rank": i, "world": i, "pe0": i, "pes": i,
          "N": i},
         {"BLOCK": 2048}),
    ]
