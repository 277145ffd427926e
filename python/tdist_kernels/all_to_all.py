"""Reverse all-to-all (EP MoE combine), the three variants of seed 002, in Triton with dl.*.

Semantics (every variant). On each of ``W`` ranks the input ``A`` is ``(S * W, H, D)`` and the
output ``C`` is ``(S, H * W, D)``::

    C_me[s, r * H + h, :] = A_r[me * S + s, h, :]      for every source rank r

i.e. rank ``r`` sends rows ``[t * S, (t + 1) * S)`` of its ``A`` to rank ``t``, which puts them in
column group ``r``. S and D need not be multiples of the tile sizes: every tile access is masked
(``(offs_s < S)[:, None] & (offs_d < D)[None, :]``).

Variants:

``mte``
    The producer/consumer pipeline (seed 002 "MTE Implementation"): even programs produce (load a
    tile of A, wait until the target's per-task slot is free, store into the target's
    double-buffered symmetric block buffer, fence, notify), odd programs consume (wait for the
    slot, copy the tile to C, fence, return the credit by notifying 0 to themselves). Symmetric
    buffer ``[buffer_num, BLOCK_S, H * W, D]``; signals ``[buffer_num, W, nbd * H]``.

``bulk``
    Two phases (seed 002 "UDMA Optimized Implementation"): senders move each peer's whole
    ``(S, H, D)`` segment with bulk ``putmem`` into the peer's rank slot (symmetric buffer
    ``[W, S, H, D]``); the self segment goes through the tiled double buffer in the own slot; one
    ``barrier_all`` per S block; consumers copy into C. GPU adaptation: ``putmem`` on a GPU is a
    program-scope copy (one SM), so each peer's segment is split into ``split`` contiguous pieces
    moved by ``split`` programs (still one bulk call per program and peer, never tile-by-tile).

``wait_notify``
    The bulk version without the global barrier (seed 002 "Wait/Notify Optimization"): senders
    put one S block per call and notify region A slot ``(s_block, sender)`` at the target (written
    once per launch, never reset in the kernel); the self-loop producer and the consumers
    handshake on region B slots ``(buffer, task)`` with credit return.

``direct``
    One pass, no staging (the NVIDIA fast path): the output is itself a symmetric tensor, and
    ``(BLOCK_S, BLOCK_D)`` tiles of ``A`` move straight into the target's output with vectorised
    remote stores (``dl.symm_at`` on the base pointer). A few programs per SM loop over the tiles,
    peers interleaved. No host barrier and no reset: the epoch protocol of
    ``_common`` (per-peer "entered epoch e" flags before the stores, "done with e" flags after
    them, one control area that only grows) orders the launch against the previous and the next
    use of every output. Bytes move once, as in a copy.

Host protocol for the other variants (seed 002 "Reset signal before kernel launch"), enqueued on the
stream so the host never blocks: ``signal.zero_()``; barrier (nobody's clear may erase a peer's
signal of this round); launch; barrier (the next round's clear must not erase this round's tail
signals). ``launch_*`` below do exactly that; ``ops.reverse_all_to_all`` owns the buffers.
"""
import triton
import triton.language as tl

import triton_dist.language as dl
from triton_dist.language.extra import libshmem_device

from ._common import (SIG, SIG_ELEMS, bar_slots, bulk_putmem, cdiv, direct_a2a_pass, direct_tile_count,
                      grid_barrier)

VARIANTS = ("mte", "bulk", "wait_notify", "direct")


# ---------------------------------------------------------------------------------------------
# (1) MTE producer/consumer pipeline


@triton.jit(do_not_specialize=['rank', 'world', 'buffer_num'])
def reverse_a2a_mte_kernel(
    a_ptr, c_ptr, peer_ptr, sig_ptr,
    rank, world, buffer_num,
    S, H, D,
    stride_as, stride_ah, stride_ad,
    stride_cs, stride_ch, stride_cd,
    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid = tl.program_id(0)
    ncore = tl.num_programs(0)
    role = pid % 2
    lc = pid // 2
    nrole = ncore // 2

    nbs = tl.cdiv(S, BLOCK_S)
    nbd = tl.cdiv(D, BLOCK_D)
    tasks = nbd * H * world
    slots_per_buf = nbd * H * world
    stride_ps = (H * world * D).to(tl.int64)  # symmetric layout [buffer_num, BLOCK_S, H * W, D]
    buf_elems = BLOCK_S * stride_ps
    rows = tl.arange(0, BLOCK_S)
    cols = tl.arange(0, BLOCK_D)

    for bs in range(0, nbs):
        buf = bs % buffer_num
        offs_s = bs * BLOCK_S + rows
        if role == 0:
            # ---- producer: remote stores into the target's block buffer
            for t in range(lc, tasks, nrole):
                j = t % world
                tmp = t // world  # = h + H * bd: the task inside one (buffer, source) signal row
                h = tmp % H
                bd = tmp // H
                target = (rank + j) % world
                offs_d = bd * BLOCK_D + cols
                mask = (offs_s < S)[:, None] & (offs_d < D)[None, :]
                a_rows = (target * S + offs_s).to(tl.int64)
                a = tl.load(a_ptr + a_rows[:, None] * stride_as + h * stride_ah + offs_d[None, :] * stride_ad,
                            mask=mask, other=0.0)
                slot = sig_ptr + (buf * slots_per_buf + rank * nbd * H + tmp) * SIG
                # the target's consumer has finished reading this buffer's previous round (credit)
                tok = dl.wait(dl.symm_at(slot, target), 1, "gpu", "acquire", waitValue=0)
                rp = dl.consume_token(dl.symm_at(peer_ptr, target), tok)
                p_offs = buf * buf_elems + rows[:, None] * stride_ps + (rank * H + h) * D + offs_d[None, :]
                tl.store(rp + p_offs, a, mask=mask)
            libshmem_device.fence()  # every remote store above is visible before any notify below
            for t in range(lc, tasks, nrole):
                tmp = t // world
                target = (rank + t % world) % world
                dl.notify(sig_ptr + (buf * slots_per_buf + rank * nbd * H + tmp) * SIG, target, 1)
        else:
            # ---- consumer: local block buffer -> C
            for t in range(lc, tasks, nrole):
                r = t % world
                tmp = t // world
                h = tmp % H
                bd = tmp // H
                offs_d = bd * BLOCK_D + cols
                mask = (offs_s < S)[:, None] & (offs_d < D)[None, :]
                slot = sig_ptr + (buf * slots_per_buf + r * nbd * H + tmp) * SIG
                tok = dl.wait(slot, 1, "gpu", "acquire", waitValue=1)
                lp = dl.consume_token(peer_ptr, tok)
                p_offs = buf * buf_elems + rows[:, None] * stride_ps + (r * H + h) * D + offs_d[None, :]
                x = tl.load(lp + p_offs, mask=mask, other=0.0)
                c_offs = offs_s.to(tl.int64)[:, None] * stride_cs + (r * H + h) * stride_ch + offs_d[None, :] * stride_cd
                tl.store(c_ptr + c_offs, x, mask=mask)
            libshmem_device.fence()  # the reads above complete before the credit goes back
            for t in range(lc, tasks, nrole):
                r = t % world
                tmp = t // world
                dl.notify(sig_ptr + (buf * slots_per_buf + r * nbd * H + tmp) * SIG, rank, 0)


def mte_buffer_elems(world, S, H, D, block_s, buffer_num):
    return buffer_num * block_s * H * world * D


def mte_signal_slots(world, S, H, D, block_d, buffer_num):
    return buffer_num * world * cdiv(D, block_d) * H


# ---------------------------------------------------------------------------------------------
# (2) two-phase bulk (one bulk putmem per peer and piece, tiled self copy, barrier per S block)


@triton.jit(do_not_specialize=['rank', 'world', 'buffer_num', 'split'])
def reverse_a2a_bulk_kernel(
    a_ptr, c_ptr, peer_ptr, bar_ptr,
    rank, world, buffer_num, split,
    S, H, D,
    stride_cs, stride_ch, stride_cd,
    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, ELEM_BYTES: tl.constexpr, VEC_BLOCK: tl.constexpr,
):
    # A must be contiguous (bulk copies move whole segments); C may be strided.
    pid = tl.program_id(0)
    ncore = tl.num_programs(0)
    role = pid % 2
    lc = pid // 2
    nrole = ncore // 2
    n_send = (world - 1) * split  # sender programs: lc < n_send, one per (peer, piece)

    nbs = tl.cdiv(S, BLOCK_S)
    nbd = tl.cdiv(D, BLOCK_D)
    seg = (S * H * D).to(tl.int64)  # one rank slot [S, H, D]
    stride_ps = (H * D).to(tl.int64)
    rows = tl.arange(0, BLOCK_S)
    cols = tl.arange(0, BLOCK_D)

    # ---- phase 1: bulk puts (role A)
    if role == 0:
        for u in range(lc, n_send, nrole):
            target = (rank + 1 + u // split) % world
            piece = u % split
            per = tl.cdiv(seg, split)
            lo = piece * per
            n = tl.minimum(per, seg - lo)
            if n > 0:
                bulk_putmem(peer_ptr + rank * seg + lo, a_ptr + target * seg + lo, n * ELEM_BYTES, target,
                            VEC_BLOCK)

    for bs in range(0, nbs):
        buf = bs % buffer_num
        offs_s = bs * BLOCK_S + rows
        # ---- phase 2: self segment through the double buffer in the own slot (role B)
        if role == 0:
            # normally the producers after the senders copy; if every producer sends (very few
            # programs), all of them also copy, so the self segment is never left out
            s0 = n_send
            if n_send >= nrole:
                s0 = 0
            if lc >= s0:
                for t in range(lc - s0, nbd * H, nrole - s0):
                    h = t % H
                    bd = t // H
                    offs_d = bd * BLOCK_D + cols
                    mask = (offs_s < S)[:, None] & (offs_d < D)[None, :]
                    a_rows = (rank * S + offs_s).to(tl.int64)
                    a = tl.load(a_ptr + a_rows[:, None] * stride_ps + h * D + offs_d[None, :], mask=mask, other=0.0)
                    p_offs = rank * seg + buf * BLOCK_S * stride_ps + rows[:, None] * stride_ps + h * D + offs_d[None, :]
                    tl.store(peer_ptr + p_offs, a, mask=mask)
        # one barrier covers the bulk puts (first block) and the self copies of this block; it also
        # keeps the self copy of block bs + buffer_num behind the consumers of block bs
        grid_barrier(bar_ptr, bs + 1, rank, world)
        # ---- consumers (role C)
        if role == 1:
            for t in range(lc, nbd * H * world, nrole):
                r = t % world
                tmp = t // world
                h = tmp % H
                bd = tmp // H
                offs_d = bd * BLOCK_D + cols
                mask = (offs_s < S)[:, None] & (offs_d < D)[None, :]
                # the own slot's rows come from the double buffer (row buf * BLOCK_S), a peer's from
                # its segment (row bs * BLOCK_S); chosen arithmetically: an offset tensor that leaves an
                # if/else aborts triton-ascend 3.2's triton-to-linalg
                own = (r == rank).to(tl.int32)
                row0 = bs * BLOCK_S + own * (buf - bs) * BLOCK_S
                p_offs = r * seg + (row0 + rows).to(tl.int64)[:, None] * stride_ps + h * D + offs_d[None, :]
                x = tl.load(peer_ptr + p_offs, mask=mask, other=0.0)
                c_offs = offs_s.to(tl.int64)[:, None] * stride_cs + (r * H + h) * stride_ch + offs_d[None, :] * stride_cd
                tl.store(c_ptr + c_offs, x, mask=mask)
    # the next launch may overwrite these slots only after every consumer is done (host barrier)


def bulk_buffer_elems(world, S, H, D):
    return world * S * H * D


def bulk_signal_slots(world):
    return bar_slots(world)


# ---------------------------------------------------------------------------------------------
# (3) wait/notify: two signal regions, no global barrier


@triton.jit(do_not_specialize=['rank', 'world', 'buffer_num', 'n_send'])
def reverse_a2a_wait_notify_kernel(
    a_ptr, c_ptr, peer_ptr, sig_ptr,
    rank, world, buffer_num, n_send,
    S, H, D,
    stride_cs, stride_ch, stride_cd,
    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr, ELEM_BYTES: tl.constexpr, VEC_BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    ncore = tl.num_programs(0)
    role = pid % 2
    lc = pid // 2
    nrole = ncore // 2

    nbs = tl.cdiv(S, BLOCK_S)
    nbd = tl.cdiv(D, BLOCK_D)
    tasks_per_block = nbd * H
    seg = (S * H * D).to(tl.int64)
    stride_ps = (H * D).to(tl.int64)
    region_b = nbs * world  # slot index where region B starts
    rows = tl.arange(0, BLOCK_S)
    cols = tl.arange(0, BLOCK_D)

    if role == 0:
        if lc < n_send:
            # ---- senders: one putmem per (target, S block), then region A slot (bs, rank) at target
            n_items = nbs * (world - 1)
            for u in range(lc, n_items, n_send):
                bs = u // (world - 1)
                target = (rank + 1 + u % (world - 1)) % world
                lo = bs * BLOCK_S * stride_ps
                cur = (tl.minimum(S - bs * BLOCK_S, BLOCK_S) * stride_ps)
                bulk_putmem(peer_ptr + rank * seg + lo, a_ptr + target * seg + lo, cur * ELEM_BYTES, target,
                            VEC_BLOCK)
                # putmem's stores are issued by this program; the release in notify (after bar.sync)
                # orders all of them before the signal
                libshmem_device.fence()
                dl.notify(sig_ptr + (bs * world + rank) * SIG, target, 1)
        else:
            # ---- self-loop producer: region B handshake (wait 0, write, fence, notify 1)
            for bs in range(0, nbs):
                buf = bs % buffer_num
                offs_s = bs * BLOCK_S + rows
                for t in range(lc - n_send, tasks_per_block, nrole - n_send):
                    h = t % H
                    bd = t // H
                    offs_d = bd * BLOCK_D + cols
                    mask = (offs_s < S)[:, None] & (offs_d < D)[None, :]
                    slot = sig_ptr + (region_b + buf * tasks_per_block + t) * SIG
                    tok = dl.wait(slot, 1, "gpu", "acquire", waitValue=0)
                    dst = dl.consume_token(peer_ptr, tok)
                    a_rows = (rank * S + offs_s).to(tl.int64)
                    a = tl.load(a_ptr + a_rows[:, None] * stride_ps + h * D + offs_d[None, :], mask=mask, other=0.0)
                    p_offs = rank * seg + buf * BLOCK_S * stride_ps + rows[:, None] * stride_ps + h * D + offs_d[None, :]
                    tl.store(dst + p_offs, a, mask=mask)
                libshmem_device.fence()
                for t in range(lc - n_send, tasks_per_block, nrole - n_send):
                    dl.notify(sig_ptr + (region_b + buf * tasks_per_block + t) * SIG, rank, 1)
    else:
        # ---- consumers: wait per data source, copy to C, credit return for the self loop only
        for bs in range(0, nbs):
            buf = bs % buffer_num
            offs_s = bs * BLOCK_S + rows
            for t in range(lc, tasks_per_block * world, nrole):
                r = t % world
                tmp = t // world
                h = tmp % H
                bd = tmp // H
                offs_d = bd * BLOCK_D + cols
                mask = (offs_s < S)[:, None] & (offs_d < D)[None, :]
                # the own slot: region B credit, rows of the double buffer; a peer: region A slot
                # (bs, r), rows of its segment. Chosen arithmetically, one wait: a pointer or offset
                # tensor that leaves an if/else crashes triton-ascend 3.2's triton-to-unstructure
                own = (r == rank).to(tl.int32)
                slot = own * (region_b + buf * tasks_per_block + tmp) + (1 - own) * (bs * world + r)
                tok = dl.wait(sig_ptr + slot * SIG, 1, "gpu", "acquire", waitValue=1)
                src = dl.consume_token(peer_ptr, tok)
                row0 = bs * BLOCK_S + own * (buf - bs) * BLOCK_S
                p_offs = r * seg + (row0 + rows).to(tl.int64)[:, None] * stride_ps + h * D + offs_d[None, :]
                x = tl.load(src + p_offs, mask=mask, other=0.0)
                c_offs = offs_s.to(tl.int64)[:, None] * stride_cs + (r * H + h) * stride_ch + offs_d[None, :] * stride_cd
                tl.store(c_ptr + c_offs, x, mask=mask)
            libshmem_device.fence()
            for t in range(lc, tasks_per_block * world, nrole):
                if t % world == rank:
                    dl.notify(sig_ptr + (region_b + buf * tasks_per_block + t // world) * SIG, rank, 0)


def wait_notify_signal_slots(world, S, H, D, block_s, block_d, buffer_num):
    """Region A ``[nbs, W]`` then region B ``[buffer_num, nbd * H]`` (seed 002's sizes)."""
    return cdiv(S, block_s) * world + buffer_num * cdiv(D, block_d) * H


# ---------------------------------------------------------------------------------------------
# (4) direct: one pass into the peers' symmetric outputs


@triton.jit(do_not_specialize=['rank', 'world'])
def reverse_a2a_direct_kernel(
    a_ptr, out_ptr, ctl_ptr,
    rank, world, S, H, D,
    stride_as, stride_ah, stride_ad,
    stride_os, stride_oh, stride_od,
    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """Tiles ``pid, pid + grid, ...`` stored straight into their targets' symmetric outputs; the epoch
    protocol of ``_common`` (control area ``ctl_ptr``) replaces barriers around the launch. A grid of a
    few programs per SM, each looping over tiles, pays the protocol's fence and counter once per
    program instead of once per 16 KB tile (one program per tile put 16k atomics on one counter at
    256 MiB)."""
    direct_a2a_pass(a_ptr, out_ptr, ctl_ptr, rank, world, S, H, D, stride_as, stride_ah, stride_ad,
                    stride_os, stride_oh, stride_od, True, BLOCK_S, BLOCK_D)


def direct_grid(world, S, H, D, block_s, block_d, nsm, shared_gpu=True):
    """Programs of the direct all-to-alls: ``DIRECT_PROGRAMS_PER_SM[shared_gpu]`` per SM of the share,
    at most one per tile. Nothing waits on a program of its own launch, so residency is not required."""
    per_sm = DIRECT_PROGRAMS_PER_SM[bool(shared_gpu)]
    return max(1, min(direct_tile_count(world, S, H, D, block_s, block_d), per_sm * nsm))


# Programs per SM, by placement. Ranks sharing a GPU (MPS): the stores go to the GPU's own memory and
# more programs hide more latency (8). One rank per GPU: the stores cross NVLink, and the 4-GPU sweep
# (benchmarks/NOTES.md, sweep_a2a.py) was fastest at 2-4 per SM and 5-15 % slower at 8-16.
DIRECT_PROGRAMS_PER_SM = {True: 8, False: 2}


# ---------------------------------------------------------------------------------------------
# compile-only descriptions (tests/gpu_kernels AOT-compiles each for sm_90)


def compile_cases(dtype="fp16"):
    p = f"*{dtype}"
    i = "i32"
    elem = {"fp16": 2, "bf16": 2, "fp32": 4}[dtype]
    mte = ({"a_ptr": p, "c_ptr": p, "peer_ptr": p, "sig_ptr": "*i64", "rank": i, "world": i, "buffer_num": i,
            "S": i, "H": i, "D": i, "stride_as": i, "stride_ah": i, "stride_cs": i, "stride_ch": i},
           {"stride_ad": 1, "stride_cd": 1, "BLOCK_S": 16, "BLOCK_D": 128})
    bulk = ({"a_ptr": p, "c_ptr": p, "peer_ptr": p, "bar_ptr": "*i64", "rank": i, "world": i, "buffer_num": i, "split": i,
             "S": i, "H": i, "D": i, "stride_cs": i, "stride_ch": i},
            {"stride_cd": 1, "BLOCK_S": 16, "BLOCK_D": 128, "ELEM_BYTES": elem, "VEC_BLOCK": 1024})
    wn = ({"a_ptr": p, "c_ptr": p, "peer_ptr": p, "sig_ptr": "*i64", "rank": i, "world": i, "buffer_num": i,
           "n_send": i, "S": i, "H": i, "D": i, "stride_cs": i, "stride_ch": i},
          {"stride_cd": 1, "BLOCK_S": 16, "BLOCK_D": 128, "ELEM_BYTES": elem, "VEC_BLOCK": 1024})
    direct = ({"a_ptr": p, "out_ptr": p, "ctl_ptr": "*i64", "rank": i, "world": i, "S": i, "H": i, "D": i, "stride_as": i,
               "stride_ah": i, "stride_os": i, "stride_oh": i},
              {"stride_ad": 1, "stride_od": 1, "BLOCK_S": 32, "BLOCK_D": 256})
    return [("reverse_a2a_direct", reverse_a2a_direct_kernel, *direct),
            ("reverse_a2a_mte", reverse_a2a_mte_kernel, *mte),
            ("reverse_a2a_bulk", reverse_a2a_bulk_kernel, *bulk),
            ("reverse_a2a_wait_notify", reverse_a2a_wait_notify_kernel, *wn)]


__all__ = ["VARIANTS", "reverse_a2a_direct_kernel", "direct_grid", "reverse_a2a_mte_kernel", "reverse_a2a_bulk_kernel", "reverse_a2a_wait_notify_kernel",
           "mte_buffer_elems", "mte_signal_slots", "bulk_buffer_elems", "bulk_signal_slots", "wait_notify_signal_slots",
           "compile_cases", "SIG_ELEMS"]
