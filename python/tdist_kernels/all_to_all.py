"""All-to-all: the reverse all-to-all (EP MoE combine) in the seed's three variants plus a one-pass
form, and its inverse, the dispatch all-to-all; kernels (Triton with dl.*) and their plans.

Semantics. On each of ``W`` ranks the reverse all-to-all's input ``A`` is ``(S * W, H, D)`` and its
output ``C`` is ``(S, H * W, D)``::

    C_me[s, r * H + h, :] = A_r[me * S + s, h, :]      for every source rank r

i.e. rank ``r`` sends rows ``[t * S, (t + 1) * S)`` of its ``A`` to rank ``t``, which puts them in
column group ``r``. The dispatch all-to-all is its exact inverse::

    x_r: (S, H * W, D)  ->  out_me: (S * W, H, D),   out_me[r * S + s, h, :] = x_r[s, me * H + h, :]

so ``reverse(dispatch(x)) == x``. S and D need not be multiples of the tile sizes: every tile
access is masked (``(offs_s < S)[:, None] & (offs_d < D)[None, :]``).

Reverse variants (``REVERSE_VARIANTS``; named by algorithm, the same names as the CPU C++ kernels'
``A2AVariant`` and tdist-bench's ``a2a_<variant>``):

``pipeline``
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

Dispatch variants (``DISPATCH_VARIANTS``): ``staged`` (push design: every program stores its tiles
straight into the target's symmetric receive buffer, one device barrier, each rank copies its
receive buffer to the output) and ``direct`` (the one-pass body above, columns and rows swapped).

Host protocol of the staged variants (seed 002 "Reset signal before kernel launch"; the one
mechanism, ``_resources.signal_round``), enqueued on the stream so the host never blocks:
``signal.zero_()``; barrier (nobody's clear may erase a peer's signal of this round); launch;
barrier (the next round's clear must not erase this round's tail signals, and the next call's
pushes stay behind this call's copy-out). The direct variants run one launch on an epoch area
(``_resources.Resources.epoch_buffers``).

Plans (``reverse`` / ``dispatch`` below, called by ``ops`` after validation): tiles
(``a2a_tiles``, ``direct_tiles``), grids (``a2a_grid``, ``dispatch_grid``, ``direct_grid``),
buffers (cached in ``_resources.RESOURCES``) and the launch.
"""
import triton
import triton.language as tl

import triton_dist.language as dl
from triton_dist.language.extra import libshmem_device

from ._common import SIG, SIG_ELEMS, bar_slots, bulk_putmem, cdiv, epoch_begin, epoch_end, epoch_slots, team_pe
from ._common import epoch_wait_ready, grid_barrier, pow2, resident_grid
from ._resources import RESOURCES, signal_round

REVERSE_VARIANTS = ("pipeline", "bulk", "wait_notify", "direct")
DISPATCH_VARIANTS = ("staged", "direct")


# ---------------------------------------------------------------------------------------------
# reverse, pipeline: the producer/consumer pipeline (seed 002's "MTE Implementation")


@triton.jit(do_not_specialize=['rank', 'world', 'buffer_num'])
def reverse_a2a_mte_kernel(
    a_ptr, c_ptr, peer_ptr, sig_ptr,
    rank, world, pe0, pes, buffer_num,
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
                tok = dl.wait(dl.symm_at(slot, team_pe(target, pe0, pes)), 1, "gpu", "acquire", waitValue=0)
                rp = dl.consume_token(dl.symm_at(peer_ptr, team_pe(target, pe0, pes)), tok)
                p_offs = buf * buf_elems + rows[:, None] * stride_ps + (rank * H + h) * D + offs_d[None, :]
                tl.store(rp + p_offs, a, mask=mask)
            libshmem_device.fence()  # every remote store above is visible before any notify below
            for t in range(lc, tasks, nrole):
                tmp = t // world
                target = (rank + t % world) % world
                dl.notify(sig_ptr + (buf * slots_per_buf + rank * nbd * H + tmp) * SIG, team_pe(target, pe0, pes), 1)
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
                c_offs = (offs_s.to(tl.int64)[:, None] * stride_cs + (r * H + h) * stride_ch
                          + offs_d[None, :] * stride_cd)
                tl.store(c_ptr + c_offs, x, mask=mask)
            libshmem_device.fence()  # the reads above complete before the credit goes back
            for t in range(lc, tasks, nrole):
                r = t % world
                tmp = t // world
                dl.notify(sig_ptr + (buf * slots_per_buf + r * nbd * H + tmp) * SIG, team_pe(rank, pe0, pes), 0)


def pipeline_buffer_elems(world, S, H, D, block_s, buffer_num):
    return buffer_num * block_s * H * world * D


def pipeline_signal_slots(world, S, H, D, block_d, buffer_num):
    return buffer_num * world * cdiv(D, block_d) * H


# ---------------------------------------------------------------------------------------------
# reverse, bulk: two phases (one bulk putmem per peer and piece, tiled self copy, barrier per S block)


@triton.jit(do_not_specialize=['rank', 'world', 'buffer_num', 'split'])
def reverse_a2a_bulk_kernel(
    a_ptr, c_ptr, peer_ptr, bar_ptr,
    rank, world, pe0, pes, buffer_num, split,
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
                bulk_putmem(peer_ptr + rank * seg + lo, a_ptr + target * seg + lo, n * ELEM_BYTES, team_pe(target,
                                                                                                           pe0, pes),
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
                    p_offs = (rank * seg + buf * BLOCK_S * stride_ps + rows[:, None] * stride_ps + h * D
                              + offs_d[None, :])
                    tl.store(peer_ptr + p_offs, a, mask=mask)
        # one barrier covers the bulk puts (first block) and the self copies of this block; it also
        # keeps the self copy of block bs + buffer_num behind the consumers of block bs
        grid_barrier(bar_ptr, bs + 1, rank, world, pe0, pes)
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
                c_offs = (offs_s.to(tl.int64)[:, None] * stride_cs + (r * H + h) * stride_ch
                          + offs_d[None, :] * stride_cd)
                tl.store(c_ptr + c_offs, x, mask=mask)
    # the next launch may overwrite these slots only after every consumer is done (host barrier)


def bulk_buffer_elems(world, S, H, D):
    return world * S * H * D


def bulk_signal_slots(world):
    return bar_slots(world)


# ---------------------------------------------------------------------------------------------
# reverse, wait_notify: two signal regions, no global barrier


@triton.jit(do_not_specialize=['rank', 'world', 'buffer_num', 'n_send'])
def reverse_a2a_wait_notify_kernel(
    a_ptr, c_ptr, peer_ptr, sig_ptr,
    rank, world, pe0, pes, buffer_num, n_send,
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
                bulk_putmem(peer_ptr + rank * seg + lo, a_ptr + target * seg + lo, cur * ELEM_BYTES, team_pe(target,
                                                                                                             pe0, pes),
                            VEC_BLOCK)
                # putmem's stores are issued by this program; the release in notify (after bar.sync)
                # orders all of them before the signal
                libshmem_device.fence()
                dl.notify(sig_ptr + (bs * world + rank) * SIG, team_pe(target, pe0, pes), 1)
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
                    p_offs = (rank * seg + buf * BLOCK_S * stride_ps + rows[:, None] * stride_ps + h * D
                              + offs_d[None, :])
                    tl.store(dst + p_offs, a, mask=mask)
                libshmem_device.fence()
                for t in range(lc - n_send, tasks_per_block, nrole - n_send):
                    dl.notify(sig_ptr + (region_b + buf * tasks_per_block + t) * SIG, team_pe(rank, pe0, pes), 1)
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
                c_offs = (offs_s.to(tl.int64)[:, None] * stride_cs + (r * H + h) * stride_ch
                          + offs_d[None, :] * stride_cd)
                tl.store(c_ptr + c_offs, x, mask=mask)
            libshmem_device.fence()
            for t in range(lc, tasks_per_block * world, nrole):
                if t % world == rank:
                    dl.notify(sig_ptr + (region_b + buf * tasks_per_block + t // world) * SIG, team_pe(rank, pe0,
                                                                                                       pes), 0)


def wait_notify_signal_slots(world, S, H, D, block_s, block_d, buffer_num):
    """Region A ``[nbs, W]`` then region B ``[buffer_num, nbd * H]`` (seed 002's sizes)."""
    return cdiv(S, block_s) * world + buffer_num * cdiv(D, block_d) * H


# ---------------------------------------------------------------------------------------------
# reverse, direct: one pass into the peers' symmetric outputs


@triton.jit(do_not_specialize=['rank', 'world'])
def reverse_a2a_direct_kernel(
    a_ptr, out_ptr, ctl_ptr,
    rank, world, pe0, pes, S, H, D,
    stride_as, stride_ah, stride_ad,
    stride_os, stride_oh, stride_od,
    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """Tiles ``pid, pid + grid, ...`` stored straight into their targets' symmetric outputs; the epoch
    protocol of ``_common`` (control area ``ctl_ptr``) replaces barriers around the launch. A grid of a
    few programs per SM, each looping over tiles, pays the protocol's fence and counter once per
    program instead of once per 16 KB tile (one program per tile put 16k atomics on one counter at
    256 MiB)."""
    direct_a2a_pass(a_ptr, out_ptr, ctl_ptr, rank, world, pe0, pes, S, H, D, stride_as, stride_ah, stride_ad,
                    stride_os, stride_oh, stride_od, True, BLOCK_S, BLOCK_D)


# ---------------------------------------------------------------------------------------------
# dispatch, staged: push into the targets' receive buffers, grid barrier, copy out


@triton.jit(do_not_specialize=['rank', 'world'])
def dispatch_a2a_kernel(
    x_ptr, out_ptr, recv_ptr, bar_ptr,
    rank, world, pe0, pes, S, H, D,
    stride_xs, stride_xh, stride_xd,
    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    nbs = tl.cdiv(S, BLOCK_S)
    nbd = tl.cdiv(D, BLOCK_D)
    rows = tl.arange(0, BLOCK_S)
    cols = tl.arange(0, BLOCK_D)
    HD = (H * D).to(tl.int64)
    tasks = world * nbs * H * nbd
    # target-major order, starting with the next rank, so the ranks do not all hit one target at once
    for t in range(pid, tasks, nprog):
        bd = t % nbd
        tmp = t // nbd
        h = tmp % H
        tmp = tmp // H
        bs = tmp % nbs
        target = (rank + 1 + tmp // nbs) % world
        offs_s = bs * BLOCK_S + rows
        offs_d = bd * BLOCK_D + cols
        mask = (offs_s < S)[:, None] & (offs_d < D)[None, :]
        x = tl.load(x_ptr + offs_s.to(tl.int64)[:, None] * stride_xs + (target * H + h) * stride_xh
                    + offs_d[None, :] * stride_xd, mask=mask, other=0.0)
        dst = dl.symm_at(recv_ptr, team_pe(target, pe0, pes))
        tl.store(dst + (rank * S + offs_s).to(tl.int64)[:, None] * HD + h * D + offs_d[None, :], x, mask=mask)
    grid_barrier(bar_ptr, 1, rank, world, pe0, pes)
    n = world * S * HD
    for off in range(pid * 4096, n, nprog * 4096):
        idx = off + tl.arange(0, 4096)
        m = idx < n
        tl.store(out_ptr + idx, tl.load(recv_ptr + idx, mask=m), mask=m)


# ---------------------------------------------------------------------------------------------
# dispatch, direct: one pass into the peers' symmetric outputs


@triton.jit(do_not_specialize=['rank', 'world'])
def dispatch_a2a_direct_kernel(
    x_ptr, out_ptr, ctl_ptr,
    rank, world, pe0, pes, S, H, D,
    stride_xs, stride_xh, stride_xd,
    stride_os, stride_oh, stride_od,
    BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """One pass into the peers' symmetric outputs, tiles as in ``reverse_a2a_direct_kernel`` (each
    program loops over tiles, peers interleaved); the epoch protocol of ``_common`` (control area
    ``ctl_ptr``) replaces barriers around the launch."""
    direct_a2a_pass(x_ptr, out_ptr, ctl_ptr, rank, world, pe0, pes, S, H, D, stride_xs, stride_xh, stride_xd,
                    stride_os, stride_oh, stride_od, False, BLOCK_S, BLOCK_D)



# ---------------------------------------------------------------------------------------------
# the one-pass body of both direct variants (epoch protocol: _common.epoch_begin / epoch_end)


@triton.jit
def direct_tile(pid, rank, world, S, H, D, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    """Tile ``pid`` of the one-pass all-to-alls' ``direct_tiles`` = ``world * H * cdiv(S, BLOCK_S) *
    cdiv(D, BLOCK_D)`` tiles: peers vary fastest, so consecutive tiles go to different peers.
    Returns (target PE, h, row offsets, column offsets, mask)."""
    nbd = tl.cdiv(D, BLOCK_D)
    j = pid % world
    rest = pid // world
    bd = rest % nbd
    rest = rest // nbd
    h = rest % H
    bs = rest // H
    target = (rank + 1 + j) % world
    offs_s = bs * BLOCK_S + tl.arange(0, BLOCK_S)
    offs_d = bd * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = (offs_s < S)[:, None] & (offs_d < D)[None, :]
    return target, h, offs_s, offs_d, mask



@triton.jit
def direct_a2a_pass(src_ptr, out_ptr, ctl_ptr, rank, world, pe0, pes, S, H, D,
                    stride_ss, stride_sh, stride_sd, stride_os, stride_oh, stride_od,
                    REVERSE: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    """The one-pass all-to-alls' body: program ``pid`` moves tiles ``pid, pid + grid, ...`` straight
    into their targets' symmetric outputs under the epoch protocol above. ``REVERSE``: the reverse
    all-to-all (rows ``target * S + s`` of the source go to rows ``s``, column ``rank * H + h``);
    else the dispatch (column ``target * H + h`` of the source goes to rows ``rank * S + s``)."""
    e = epoch_begin(ctl_ptr, rank, world, pe0, pes)
    ntiles = world * H * tl.cdiv(S, BLOCK_S) * tl.cdiv(D, BLOCK_D)
    for t in range(tl.program_id(0), ntiles, tl.num_programs(0)):
        target, h, offs_s, offs_d, mask = direct_tile(t, rank, world, S, H, D, BLOCK_S, BLOCK_D)
        if REVERSE:
            src_rows = (target * S + offs_s).to(tl.int64)
            src_col = h
            dst_rows = offs_s.to(tl.int64)
            dst_col = rank * H + h
        else:
            src_rows = offs_s.to(tl.int64)
            src_col = target * H + h
            dst_rows = (rank * S + offs_s).to(tl.int64)
            dst_col = h
        x = tl.load(src_ptr + src_rows[:, None] * stride_ss + src_col * stride_sh + offs_d[None, :] * stride_sd,
                    mask=mask)
        tok = epoch_wait_ready(ctl_ptr, target, rank, e)
        dst = dl.consume_token(dl.symm_at(out_ptr, team_pe(target, pe0, pes)), tok)
        tl.store(dst + dst_rows[:, None] * stride_os + dst_col * stride_oh + offs_d[None, :] * stride_od, x,
                 mask=mask)
    epoch_end(ctl_ptr, rank, world, pe0, pes, e)



def direct_tile_count(world, S, H, D, block_s, block_d):
    return world * H * cdiv(S, block_s) * cdiv(D, block_d)



# ---------------------------------------------------------------------------------------------
# Tiles and grids (pure functions of the sizes and of this rank's SM budget, so the co-residency
# arithmetic is testable without a GPU: tests/gpu_kernels/test_residency.py, test_shapes.py).

A2A_WARPS = 4


def a2a_grid(nsm):
    """Reverse all-to-all: producer/consumer pairs (even), >= 2 producers so the bulk variants have a
    self copier, and every program resident (credits, grid barrier): half of the share's slots."""
    return max(4, resident_grid(nsm, A2A_WARPS) // 2 * 2)


def dispatch_grid(nsm):
    return max(2, resident_grid(nsm, A2A_WARPS))


def a2a_tiles(D, elem):
    """~16 KB tiles, tall in S: the pipelines synchronise once per S block, so fewer, taller blocks
    cost fewer rounds (the first GPU run used 8 x 1024 tiles: 256 rounds for S = 2048, and the
    per-round signalling dominated)."""
    block_d = min(pow2(D), 128)
    block_s = max(1, min(128, 16384 // (block_d * elem)))
    return block_s, block_d


def direct_tiles(D, elem, shared_gpu=True):
    """Tiles of the one-pass kernels. Ranks sharing a GPU: 16 KB, up to 256 columns wide (16-byte
    vectors, 8 per thread). One rank per GPU: 32 KB, up to 512 columns wide, fewer and larger NVLink
    bursts per program (the 4-GPU sweep's best at 1 and 64 MiB per rank)."""
    cols, tile = (256, 16384) if shared_gpu else (512, 32768)
    block_d = min(pow2(D), cols)
    block_s = max(1, min(64, tile // (block_d * elem)))
    return block_s, block_d


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
# Plans: buffers, grid and launch of each variant. ``ops`` has validated the arguments, made
# ``out`` and made ``a`` contiguous where a variant needs it.


def reverse(variant, a, out, S, H, D, W, me, dt, buffer_num=2, block_s=None, block_d=None):
    """``ops.reverse_all_to_all`` after validation: ``out[s, r * H + h] = a_r[me * S + s, h]``."""
    if variant == "direct":
        return _direct(reverse_a2a_direct_kernel, "reverse_all_to_all", a, out, S, H, D, W, me, dt, block_s, block_d)
    bs0, bd0 = a2a_tiles(D, a.element_size())
    bs, bd = block_s or bs0, block_d or bd0
    grid = a2a_grid(RESOURCES.sm_budget())
    key = ("reverse_all_to_all", variant, S, H, D, dt, W, bs, bd, buffer_num)
    sig, launch = _STAGED[variant](key, a, out, S, H, D, W, me, buffer_num, bs, bd, grid)
    with signal_round(sig):
        launch()
    return out


def _pipeline_plan(key, a, out, S, H, D, W, me, buffer_num, bs, bd, grid):
    import torch
    peer, sig = RESOURCES.symmetric(key, ([pipeline_buffer_elems(W, S, H, D, bs, buffer_num)], a.dtype),
                                    ([pipeline_signal_slots(W, S, H, D, bd, buffer_num) * SIG_ELEMS], torch.int64))
    return sig, lambda: reverse_a2a_mte_kernel[(grid,)](
        a, out, peer, sig, me, W, *RESOURCES.pe_map(), buffer_num, S, H, D, *a.stride(), *out.stride(),
        BLOCK_S=bs, BLOCK_D=bd, num_warps=4)


def _bulk_plan(key, a, out, S, H, D, W, me, buffer_num, bs, bd, grid):
    import torch
    peer, sig = RESOURCES.symmetric(key, ([bulk_buffer_elems(W, S, H, D)], a.dtype),
                                    ([bulk_signal_slots(W) * SIG_ELEMS], torch.int64))
    nrole = grid // 2
    # about 3/4 of the producers send; at least one producer is left for the self copy when it can be
    split = max(1, (nrole * 3 // 4) // max(W - 1, 1)) if W > 1 else 1
    return sig, lambda: reverse_a2a_bulk_kernel[(grid,)](
        a, out, peer, sig, me, W, *RESOURCES.pe_map(), buffer_num, split, S, H, D, *out.stride(),
        BLOCK_S=bs, BLOCK_D=bd, ELEM_BYTES=a.element_size(), VEC_BLOCK=2048, num_warps=4)


def _wait_notify_plan(key, a, out, S, H, D, W, me, buffer_num, bs, bd, grid):
    import torch
    peer, sig = RESOURCES.symmetric(key, ([bulk_buffer_elems(W, S, H, D)], a.dtype), (
        [wait_notify_signal_slots(W, S, H, D, bs, bd, buffer_num) * SIG_ELEMS], torch.int64))
    nrole = grid // 2
    n_send = min(max(1, nrole * 3 // 4), nrole - 1) if W > 1 else 0  # >= 1 self-loop producer
    return sig, lambda: reverse_a2a_wait_notify_kernel[(grid,)](
        a, out, peer, sig, me, W, *RESOURCES.pe_map(), buffer_num, n_send, S, H, D, *out.stride(),
        BLOCK_S=bs, BLOCK_D=bd, ELEM_BYTES=a.element_size(), VEC_BLOCK=2048, num_warps=4)


_STAGED = {"pipeline": _pipeline_plan, "bulk": _bulk_plan, "wait_notify": _wait_notify_plan}


def dispatch(variant, x, out, S, H, D, W, me, dt):
    """``ops.dispatch_all_to_all`` after validation: ``out[r * S + s, h] = x_r[s, me * H + h]``."""
    if variant == "direct":
        return _direct(dispatch_a2a_direct_kernel, "dispatch_all_to_all", x, out, S, H, D, W, me, dt)
    import torch
    bs, bd = a2a_tiles(D, x.element_size())
    recv, sig = RESOURCES.symmetric(("dispatch_all_to_all", S, H, D, dt, W), ([W * S * H * D], x.dtype),
                                    ([bar_slots(W) * SIG_ELEMS], torch.int64))
    grid = dispatch_grid(RESOURCES.sm_budget())
    with signal_round(sig):
        dispatch_a2a_kernel[(grid,)](x, out, recv, sig, me, W, *RESOURCES.pe_map(), S, H, D, *x.stride(), BLOCK_S=bs,
                                     BLOCK_D=bd, num_warps=4)
    return out


def _direct(kernel, what, src, out, S, H, D, W, me, dt, block_s=None, block_d=None):
    """Both direct variants: one launch on the op's epoch area (one per op, shape and grid), into the
    symmetric ``out`` of every peer."""
    import torch
    shared = RESOURCES.shared_gpu()
    bs0, bd0 = direct_tiles(D, src.element_size(), shared)
    bs, bd = block_s or bs0, block_d or bd0
    grid = direct_grid(W, S, H, D, bs, bd, RESOURCES.sm_budget(), shared)
    ctl, = RESOURCES.epoch_buffers((what, "direct", S, H, D, dt, W, bs, bd, grid), what,
                                   ([epoch_slots(W) * SIG_ELEMS], torch.int64))
    kernel[(grid,)](src, out, ctl, me, W, *RESOURCES.pe_map(), S, H, D, *src.stride(), *out.stride(), BLOCK_S=bs,
                    BLOCK_D=bd, num_warps=4)
    return out


# ---------------------------------------------------------------------------------------------
# compile-only descriptions (tests/gpu_kernels AOT-compiles each for sm_90; the names are the
# kernels' and stay fixed: tests/ascend and tools/compare_ptx.py key on them)


def compile_cases(dtype="fp16"):
    p = f"*{dtype}"
    i = "i32"
    elem = {"fp16": 2, "bf16": 2, "fp32": 4}[dtype]
    mte = ({"a_ptr": p, "c_ptr": p, "peer_ptr": p, "sig_ptr": "*i64", "rank": i, "world": i, "pe0": i, "pes": i,
            "buffer_num": i,
            "S": i, "H": i, "D": i, "stride_as": i, "stride_ah": i, "stride_cs": i, "stride_ch": i},
           {"stride_ad": 1, "stride_cd": 1, "BLOCK_S": 16, "BLOCK_D": 128})
    bulk = ({"a_ptr": p, "c_ptr": p, "peer_ptr": p, "bar_ptr": "*i64", "rank": i, "world": i, "pe0": i, "pes": i,
             "buffer_num": i,
             "split": i, "S": i, "H": i, "D": i, "stride_cs": i, "stride_ch": i},
            {"stride_cd": 1, "BLOCK_S": 16, "BLOCK_D": 128, "ELEM_BYTES": elem, "VEC_BLOCK": 1024})
    wn = ({"a_ptr": p, "c_ptr": p, "peer_ptr": p, "sig_ptr": "*i64", "rank": i, "world": i, "pe0": i, "pes": i,
           "buffer_num": i,
           "n_send": i, "S": i, "H": i, "D": i, "stride_cs": i, "stride_ch": i},
          {"stride_cd": 1, "BLOCK_S": 16, "BLOCK_D": 128, "ELEM_BYTES": elem, "VEC_BLOCK": 1024})
    direct = ({"a_ptr": p, "out_ptr": p, "ctl_ptr": "*i64", "rank": i, "world": i, "pe0": i, "pes": i, "S": i,
               "H": i, "D": i,
               "stride_as": i, "stride_ah": i, "stride_os": i, "stride_oh": i},
              {"stride_ad": 1, "stride_od": 1, "BLOCK_S": 32, "BLOCK_D": 256})
    return [("reverse_a2a_direct", reverse_a2a_direct_kernel, *direct),
            ("reverse_a2a_mte", reverse_a2a_mte_kernel, *mte),
            ("reverse_a2a_bulk", reverse_a2a_bulk_kernel, *bulk),
            ("reverse_a2a_wait_notify", reverse_a2a_wait_notify_kernel, *wn),
            ("dispatch_a2a", dispatch_a2a_kernel,
             {"x_ptr": p, "out_ptr": p, "recv_ptr": p, "bar_ptr": "*i64", "rank": i, "world": i, "pe0": i, "pes": i,
              "S": i, "H": i,
              "D": i, "stride_xs": i, "stride_xh": i}, {"stride_xd": 1, "BLOCK_S": 16, "BLOCK_D": 128}),
            ("dispatch_a2a_direct", dispatch_a2a_direct_kernel,
             {"x_ptr": p, "out_ptr": p, "ctl_ptr": "*i64", "rank": i, "world": i, "pe0": i, "pes": i, "S": i, "H": i,
              "D": i,
              "stride_xs": i, "stride_xh": i, "stride_os": i, "stride_oh": i},
             {"stride_xd": 1, "stride_od": 1, "BLOCK_S": 32, "BLOCK_D": 256})]
