"""Constants and small device helpers shared by the tdist Triton kernels.

Signal slots are int64 values one cache line (64 bytes = ``SIG`` int64 elements) apart, the layout
``dl.wait(ptr, n)`` expects for a multi-slot wait (docs/CONTRACT.md section 3). Every device wait in
these kernels is bounded by ``WAIT_NS``: on expiry the waiting program prints the slot, the value it
expected and the value it saw, and traps; the host sees a launch failure at its next synchronisation.
"""
import triton
import triton.language as tl

import triton_dist.language as dl

SIG: tl.constexpr = tl.constexpr(8)  # int64 elements per signal slot (64 bytes)
SIG_ELEMS = 8
WAIT_NS: tl.constexpr = tl.constexpr(20_000_000_000)  # 20 s: far above any legitimate wait here

DTYPES = ("float16", "bfloat16", "float32")


class KernelArgError(ValueError):
    """A kernel layer was called with arguments it does not accept (the message names them)."""


def cdiv(a, b):
    return -(-a // b)


@triton.jit
def _cdiv(a, b):
    return (a + b - 1) // b


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


# ---------------------------------------------------------------------------------------------
# Device barrier over every program of the launch on every PE, on a caller-owned signal area.
#
# Why not libshmem_device.barrier_all: it calls ``tdist_barrier_all_i64``, which the real
# libtdist_device.bc (device/NVIDIA, 2026-11-29) does not define -- ptxas fails with "Unresolved
# extern function" (only the test bitcode tests/python/fake_device.cu has it). This barrier needs
# only dl.* and atomics, and its state lives in the kernel's own signal buffer, which the host
# protocol zeroes before each launch (so barrier number k of a launch waits for counters == k).
#
# Layout (BAR_SLOTS(world) slots of 64 bytes): slot 0 arrive counter (local programs), slot 1
# release flag (local), slots 2 .. 2 + world: "PE r reached barrier k" flags written by PE r.

@triton.jit
def grid_barrier(bar_ptr, k, rank, world):
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
            dl.notify(bar_ptr + (2 + rank) * SIG, r, k)
        for r in range(0, world):
            wait_ge(bar_ptr + (2 + r) * SIG, k)
        dl.notify(bar_ptr + SIG, rank, k)
    wait_ge(bar_ptr + SIG, k)


def bar_slots(world):
    return 2 + world


@triton.jit
def fence_sys():
    tl.inline_asm_elementwise("fence.acq_rel.sys; mov.u32 $0, 0;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def cta_sync():
    tl.inline_asm_elementwise("bar.sync 0; mov.u32 $0, 0;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)


_WAIT_GE_ASM: tl.constexpr = tl.constexpr("""{
        .reg .pred %tk_p;
        .reg .u64 %tk_t0, %tk_now;
        .reg .s64 %tk_v;
        mov.u64 %tk_t0, %globaltimer;
    tk_spin:
        ld.acquire.sys.global.s64 %tk_v, [$1];
        setp.ge.s64 %tk_p, %tk_v, $2;
        @%tk_p bra tk_done;
        mov.u64 %tk_now, %globaltimer;
        sub.u64 %tk_now, %tk_now, %tk_t0;
        setp.lt.u64 %tk_p, %tk_now, 20000000000;
        @%tk_p bra tk_spin;
        trap;
    tk_done:
        mov.u32 $0, 0;
    }""")


@triton.jit
def wait_ge(ptr, v):
    """Acquire spin (every thread) until the int64 at ``ptr`` >= ``v``; traps after WAIT_NS."""
    tl.inline_asm_elementwise(_WAIT_GE_ASM, "=r,l,l", [ptr.to(tl.int64, bitcast=True), tl.cast(v, tl.int64)],
                              dtype=tl.int32, is_pure=False, pack=1)
