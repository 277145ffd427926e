"""Constants and small device helpers shared by the tdist Triton kernels.

Signal slots are int64 values one cache line (64 bytes = ``SIG`` int64 elements) apart, the layout
``dl.wait(ptr, n)`` expects for a multi-slot wait (docs/CONTRACT.md section 3). Every device wait in
these kernels is the device ABI's one wait, bounded by the runtime's budget (``TDIST_WAIT_TIMEOUT_MS``)
and ended at once by a lost peer: the first waiting thread to give up prints the fault record (PE,
heap offset, expected, seen) and the program traps; the host sees a launch failure at its next
synchronisation.
"""
import triton
import triton.language as tl
from triton.language import core as tlc

import triton_dist.language as dl
from tdist.errors import InvalidParam
from triton_dist.language._front import Front
from triton_dist.language.extra import libshmem_device
from triton_dist.language.extra._shmem_constants import CMP_GE

SIG: tl.constexpr = tl.constexpr(8)  # int64 elements per signal slot (64 bytes)
SIG_ELEMS = 8

DTYPES = ("float16", "bfloat16", "float32")


class KernelArgError(InvalidParam):
    """A kernel layer was called with arguments it does not accept (the message names them)."""


def cdiv(a, b):
    return -(-a // b)


def pow2(n):
    """The smallest power of two >= n (1 for n <= 1)."""
    p = 1
    while p < n:
        p *= 2
    return p


# ---------------------------------------------------------------------------------------------
# Co-residency. Every persistent kernel here has programs that wait for other programs of the same
# launch (grid barrier, producer/consumer credits) and for the programs of the other ranks' launches
# sharing the GPU, so all of them must be resident at once or the waits trap at the wait budget ("CUDA
# error: unspecified launch failure" at the host's next synchronisation).
#
# Hopper (sm_90) limits per SM: 65536 registers (allocated per warp in units of 256), 2048 threads,
# 32 programs, 228 KB shared memory (227 KB per program, 1 KB reserved per program).

REGS_PER_SM = 65536
THREADS_PER_SM = 2048
PROGRAMS_PER_SM = 32
SMEM_PER_SM = 228 * 1024
SMEM_RESERVED_PER_PROGRAM = 1024

# Fraction of this rank's co-resident slots a persistent launch may fill. Under MPS the ranks' SM
# shares add up to the whole GPU (2 x 50 %, 4 x 25 %), and nothing documents that MPS places the
# ranks' programs on disjoint SMs. A launch that needs every slot of its share (2026-11-29: a2a grid =
# 2 programs per SM of the share, with 255-register 4-warp programs that fit exactly 2 per SM) needs a
# perfect packing of all ranks' programs plus their stream-barrier kernels: it deadlocked at 2 and 4
# ranks (the bulk variant's grid barrier waited for programs that were never scheduled, trap after
# 20 s) and passed only at 8 ranks, whose shares (8 x 12 %) leave 4 % of the SMs free. With half the
# slots the whole GPU is at most half full, whatever the placement.
RESIDENT_FILL = 0.5


def programs_per_sm(num_warps, smem_bytes=0, regs_per_thread=255):
    """Programs of ``num_warps`` warps that fit on one SM at once, assuming the worst register use
    (255 per thread, the compiler's cap) unless ``regs_per_thread`` says otherwise: 2 at 4 warps,
    1 at 8 warps."""
    threads = num_warps * 32
    regs_per_warp = cdiv(regs_per_thread * 32, 256) * 256
    by_regs = REGS_PER_SM // (regs_per_warp * num_warps)
    by_threads = THREADS_PER_SM // threads
    by_smem = SMEM_PER_SM // (smem_bytes + SMEM_RESERVED_PER_PROGRAM) if smem_bytes else PROGRAMS_PER_SM
    return max(0, min(by_regs, by_threads, by_smem, PROGRAMS_PER_SM))


def resident_grid(sms, num_warps, smem_bytes=0, fill=RESIDENT_FILL):
    """The most programs a persistent launch of ``num_warps``-warp programs may have on ``sms`` SMs
    (this rank's share) so that they stay co-resident with the other ranks' launches; at least 1."""
    return max(1, int(sms * programs_per_sm(num_warps, smem_bytes) * fill))


@triton.jit
def bulk_putmem(dst, src, nbytes, pe, VEC_BLOCK: tl.constexpr):
    """Program-scope bulk put of ``nbytes`` from local ``src`` to symmetric ``dst`` on PE ``pe``.

    The GPU's "UDMA": one call moves a whole segment. Same contract as ``libshmem_device.putmem``
    (blocking for the issuing program; order it before a signal with ``fence`` + ``dl.notify``), but
    ``VEC_BLOCK`` 16-byte words per iteration (e.g. 2048 = 32 KB) so one program keeps enough loads
    in flight to move tens of GB/s; libshmem_device.putmem moves 8 KB per iteration.
    """
    remote = dl.symm_at(dst, pe)
    nb = nbytes.to(tl.int64)
    d_i = remote.to(tl.int64, bitcast=True)
    s_i = src.to(tl.int64, bitcast=True)
    if ((d_i | s_i | nb) & 15) == 0:
        d = tl.multiple_of(d_i.to(tl.pointer_type(tl.int32)), 16)
        s = tl.multiple_of(s_i.to(tl.pointer_type(tl.int32)), 16)
        n = nb // 4
        for off in range(0, n, VEC_BLOCK * 4):
            idx = off + tl.arange(0, VEC_BLOCK * 4)
            m = idx < n
            tl.store(d + idx, tl.load(s + idx, mask=m), mask=m)
    else:
        d8 = d_i.to(tl.pointer_type(tl.uint8))
        s8 = s_i.to(tl.pointer_type(tl.uint8))
        for off in range(0, nb, VEC_BLOCK * 4):
            idx = off + tl.arange(0, VEC_BLOCK * 4)
            m = idx < nb
            tl.store(d8 + idx, tl.load(s8 + idx, mask=m), mask=m)


@triton.jit
def team_pe(r, pe0, pes):
    """The world PE of member ``r`` of the team the kernel runs over. A team is the world PEs ``pe0``,
    ``pe0 + pes``, ... (docs/CONTRACT.md section 8); ``rank`` and ``world`` in a kernel are the
    member's index and the team's size, so every PE a kernel names (``dl.symm_at``, ``dl.notify``,
    a put) is translated here: one integer multiply-add. Over the world, ``pe0 = 0`` and ``pes = 1``."""
    return pe0 + r * pes


# ---------------------------------------------------------------------------------------------
# Device barrier over every program of the launch on every PE, on a caller-owned signal area.
#
# Why not libshmem_device.barrier_all: that barrier's state is one per heap (the runtime's sync
# area), shared by every kernel that calls it; this one needs only dl.* and atomics, and its state
# lives in the kernel's own signal buffer, which the host protocol zeroes before each launch (so
# barrier number k of a launch waits for counters == k).
#
# Layout (BAR_SLOTS(world) slots of 64 bytes): slot 0 arrive counter (local programs), slot 1
# release flag (local), slots 2 .. 2 + world: "PE r reached barrier k" flags written by PE r.

@triton.jit
def grid_barrier(bar_ptr, k, rank, world, pe0, pes):
    """Barrier number ``k`` (1, 2, ...) of this launch. Orders every program's earlier stores (local
    and remote) before every program's later loads, on all PEs."""
    fence_sys()
    cta_sync()
    nprog = tl.num_programs(0)
    old = tl.atomic_add(bar_ptr, 1, sem="acq_rel", scope="sys")
    if old == k * nprog - 1:
        # last local arrival: tell every PE, then wait until every PE has arrived (>= k: a fast PE
        # may already be at barrier k + 1)
        for r in range(0, world):
            dl.notify(bar_ptr + (2 + rank) * SIG, team_pe(r, pe0, pes), k)
        for r in range(0, world):
            wait_ge(bar_ptr + (2 + r) * SIG, k)
        dl.notify(bar_ptr + SIG, team_pe(rank, pe0, pes), k)
    wait_ge(bar_ptr + SIG, k)


def bar_slots(world):
    return 2 + world


# ---------------------------------------------------------------------------------------------
# Epoch protocol of the one-pass all-to-alls: no host barrier and no reset around the launch.
#
# Control area (epoch_slots(world) slots of 64 bytes; zeroed once when created, then only grows):
# slot 0 this PE's epoch (launches completed with this area), slot 1 finished-program counter,
# slots 2 .. 2 + W: ready[r] = the epoch PE r has entered (written by PE r), slots 2 + W .. 2 + 2W:
# done[r] = the epoch whose stores into this PE's output PE r has finished (written by PE r).
# Launch e (every program reads e = slot 0 + 1; slot 0 changes only when the last program leaves):
#  1. every program tells every peer "this PE entered e" (relaxed: the receiver's earlier use of its
#     output ended at an earlier kernel boundary, so nothing needs ordering before it; every program
#     sends it, so a sender never waits on a program of the receiver that is not resident yet);
#  2. a program stores into peer t's output only after ready[t] == e here;
#  3. every program joins its threads and counts itself out (acq_rel: the program's stores are
#     ordered before its count); the last one fences system-wide, which on CUDA is cumulative: every
#     counted program's stores, observed through the counter, are ordered before the fence (the PTX
#     memory model's causality order is transitive across scopes). Where fences are not known to be
#     cumulative (``fences_cumulative``: Ascend, CPU ranks) every program fences before its count, as
#     each core's fence orders only its own transfers. The last program then signals done(e) to every
#     peer, waits for done[r] == e from every peer, and records e.
# Equality holds while anyone waits: a PE can enter e + 1 only after its launch e saw every
# peer's done(e), which each peer sends after all of its stores of epoch e.
# The grid must be the same at every launch with one area (the host keys the area by it).
# Until 2026-12-04 every program fenced system-wide before counting itself out on CUDA too; one
# fence by the last program orders the same stores, and on one H200 (2 ranks, 16 and 64 MiB per rank) the call
# took 1-2.4 us less (benchmarks/NOTES.md, "The direct all-to-all's end round").


def epoch_slots(world):
    return 2 + 2 * world


@triton.jit
def epoch_begin(ctl_ptr, rank, world, pe0, pes):
    e = tl.load(ctl_ptr) + 1
    for r in range(0, world):
        if r != rank:
            tl.atomic_xchg(dl.symm_at(ctl_ptr + (2 + rank) * SIG, team_pe(r, pe0, pes)), e, sem="relaxed", scope="sys")
    return e


@triton.jit
def epoch_wait_ready(ctl_ptr, target, rank, e):
    """Token for the stores into ``target``'s output: they may start once ``target`` entered ``e``."""
    tok = rank * 0
    if target != rank:
        tok = dl.wait(ctl_ptr + (2 + target) * SIG, 1, "sys", "acquire", waitValue=e)
    return tok


@triton.jit
def epoch_end(ctl_ptr, rank, world, pe0, pes, e):
    if not fences_cumulative():
        fence_sys()  # Ascend and CPU ranks: each program orders its own transfers
    cta_sync()
    old = tl.atomic_add(ctl_ptr + SIG, 1, sem="acq_rel", scope="gpu")
    if old == e * tl.num_programs(0) - 1:
        fence_sys()
        for r in range(0, world):
            if r != rank:
                dl.notify(ctl_ptr + (2 + world + rank) * SIG, team_pe(r, pe0, pes), e)
        for r in range(0, world):
            if r != rank:
                dl.wait(ctl_ptr + (2 + world + r) * SIG, 1, "sys", "acquire", waitValue=e)
        tl.store(ctl_ptr, e)


@triton.jit
def fence_sys():
    """Order this program's earlier stores (local and remote) before its later ones, system-wide:
    ``libshmem_device.fence`` (``fence.acq_rel.sys`` on CUDA, ``aclshmem_fence`` on Ascend / CPU ranks)."""
    libshmem_device.fence()


@tlc.builtin
def cta_sync(_semantic=None, _builder=None):
    """Join every thread of the program (``bar.sync 0`` on CUDA). On Ascend and CPU ranks a program
    is one vector core / one thread: nothing to join."""
    f = Front("cta_sync", _semantic, _builder)
    if f.lowering == "ptx":
        tlc.inline_asm_elementwise("bar.sync 0; mov.u32 $0, 0;", "=r", [], dtype=tl.int32, is_pure=False, pack=1,
                                   _semantic=_semantic)
    return None


@tlc.builtin
def fences_cumulative(_semantic=None, _builder=None):
    """``tl.constexpr(True)`` where one program's system-scope fence also orders the stores of the
    programs it observed through an acq_rel counter (CUDA, by the PTX memory model); False on
    Ascend and CPU ranks (triton-ascend's lowering), where each core fences its own transfers."""
    return tl.constexpr(Front("fences_cumulative", _semantic, _builder).lowering == "ptx")


@tlc.builtin
def fence_proxy_async(_semantic=None, _builder=None):
    """Order what this thread observed through the generic proxy (an acquire wait on a signal) before
    its later bulk tensor copies (TMA loads, the async proxy) of global memory: ``fence.proxy.async.global``
    on CUDA. Nothing elsewhere (no TMA there)."""
    f = Front("fence_proxy_async", _semantic, _builder)
    if f.lowering == "ptx":
        tlc.inline_asm_elementwise("fence.proxy.async.global; mov.u32 $0, 0;", "=r", [], dtype=tl.int32,
                                   is_pure=False, pack=1, _semantic=_semantic)
    return None


@triton.jit
def wait_ge(ptr, v):
    """Acquire wait (every thread) until the int64 at ``ptr`` >= ``v``: the one device wait through
    ``libshmem_device.signal_wait_until`` (the ABI's ``tdist_int64_wait_until_i64`` on CUDA,
    ``aclshmem_signal_wait_until`` on Ascend and CPU ranks)."""
    libshmem_device.signal_wait_until(ptr, CMP_GE, v)
