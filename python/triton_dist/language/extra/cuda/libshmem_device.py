"""libshmem_device on NVIDIA GPUs with stock Triton 3.6.

Scope of a call: Triton runs a call in every thread of the program, and the program is the unit of
work, so every ``*_block``, ``*_warp`` and plain variant here is *program-scope*: all threads of
the program cooperate on the copy, and signals are updated once per program (by thread 0, after a
``bar.sync``). The ``_nbi`` variants are the blocking ones (the stores are issued by the program);
``quiet`` / ``fence`` order them.

Constants: ``extra/_shmem_constants.py`` (shared with the Ascend module).
"""
import triton
import triton.language as tl
from triton.language import core as tlc

from .. import _proxy  # noqa: F401  (documentation cross-reference)
from ... import core as dlcore

from .._shmem_constants import (  # noqa: F401  (the public constants of this module)
    CMP_EQ, CMP_NE, CMP_GT, CMP_GE, CMP_LT, CMP_LE, SIGNAL_SET, SIGNAL_ADD, NVSHMEM_CMP_EQ, NVSHMEM_CMP_NE,
    NVSHMEM_CMP_GT, NVSHMEM_CMP_GE, NVSHMEM_CMP_LT, NVSHMEM_CMP_LE, NVSHMEM_SIGNAL_SET, NVSHMEM_SIGNAL_ADD,
    sig_op_name)

_CMPS = (CMP_EQ, CMP_NE, CMP_GT, CMP_GE, CMP_LT, CMP_LE)
COPY_BLOCK = tl.constexpr(2048)  # elements moved per program per loop iteration


@tlc.builtin
def my_pe(_semantic=None):
    return dlcore.rank(_semantic=_semantic)


@tlc.builtin
def n_pes(_semantic=None):
    return dlcore.num_ranks(_semantic=_semantic)


@tlc.builtin
def remote_ptr(ptr, pe, _semantic=None):
    return dlcore.symm_at(ptr, pe, _semantic=_semantic)


ptr = remote_ptr  # tdist_ptr / nvshmem_ptr spelling


# ---- bulk copies: program-cooperative, 16-byte vectors when every address and the size allow it


@triton.jit
def _copy(dst_i64, src_i64, nbytes, BLOCK: tl.constexpr):
    nbytes = nbytes.to(tl.int64)
    if ((dst_i64 | src_i64 | nbytes) & 15) == 0:
        d = tl.multiple_of(dst_i64.to(tl.pointer_type(tl.int32)), 16)
        s = tl.multiple_of(src_i64.to(tl.pointer_type(tl.int32)), 16)
        n = nbytes // 4
        for off in range(0, n, BLOCK):
            idx = off + tl.arange(0, BLOCK)
            m = idx < n
            tl.store(d + idx, tl.load(s + idx, mask=m), mask=m)
    else:
        d8 = dst_i64.to(tl.pointer_type(tl.uint8))
        s8 = src_i64.to(tl.pointer_type(tl.uint8))
        for off in range(0, nbytes, BLOCK):
            idx = off + tl.arange(0, BLOCK)
            m = idx < nbytes
            tl.store(d8 + idx, tl.load(s8 + idx, mask=m), mask=m)


@tlc.builtin
def _as_i64(p, _semantic=None):
    return _semantic.cast(_semantic.to_tensor(p), tl.int64)


@tlc.builtin
def dl_symm_at(p, pe, _semantic=None):
    return dlcore.symm_at(p, pe, _semantic=_semantic)


@triton.jit
def putmem(dst, src, nbytes, pe):
    """Copy ``nbytes`` from local ``src`` to symmetric ``dst`` on PE ``pe`` (program-scope)."""
    _copy(_as_i64(dl_symm_at(dst, pe)), _as_i64(src), nbytes, COPY_BLOCK)


@triton.jit
def getmem(dst, src, nbytes, pe):
    """Copy ``nbytes`` from symmetric ``src`` on PE ``pe`` to local ``dst`` (program-scope)."""
    _copy(_as_i64(dst), _as_i64(dl_symm_at(src, pe)), nbytes, COPY_BLOCK)


putmem_block = putmem_warp = putmem_nbi = putmem_nbi_block = putmem_nbi_warp = putmem
getmem_block = getmem_warp = getmem_nbi = getmem_nbi_block = getmem_nbi_warp = getmem


@tlc.builtin
def _sig_op_name(sig_op, _semantic=None):
    return tl.constexpr(sig_op_name(sig_op, "libshmem_device"))


@triton.jit
def signal_op(sig_addr, signal, sig_op, pe):
    """Update the signal at ``sig_addr`` on ``pe`` (release, once per program)."""
    dl_notify(sig_addr, pe, signal, _sig_op_name(sig_op))


@tlc.builtin
def dl_notify(p, pe, signal, sig_op, _semantic=None):
    return dlcore.notify(p, pe, signal, sig_op, _semantic=_semantic)


@triton.jit
def putmem_signal(dst, src, nbytes, sig_addr, signal, sig_op, pe):
    """``putmem`` then ``signal_op``: whoever observes the signal sees the data."""
    putmem(dst, src, nbytes, pe)
    dl_notify(sig_addr, pe, signal, _sig_op_name(sig_op))


putmem_signal_block = putmem_signal_warp = putmem_signal_nbi = putmem_signal_nbi_block = putmem_signal
putmem_signal_nbi_warp = putmem_signal


@tlc.builtin
def signal_wait_until(sig_addr, cmp, cmp_val, timeout_ns=dlcore.DEFAULT_WAIT_TIMEOUT_NS, _semantic=None):
    """Wait (acquire, every thread) until ``*sig_addr <cmp> cmp_val`` on this PE; return the value seen.

    The ABI's one wait (``tdist_<T>_wait_until_i64``, T from the pointer: int32 / int64 compare
    signed, uint64 unsigned), bounded like ``dl.wait``: ``timeout_ns`` ``None`` (default) is the
    runtime's budget, 0 forever; a wait that ends without its condition records and prints the fault
    and traps. The argument extends NVSHMEM's signature, whose spin has no limit.
    """
    what = "libshmem_device.signal_wait_until"
    dlcore._require_cuda(what, _semantic)
    p = _semantic.to_tensor(sig_addr)
    elem, _ = dlcore._signal_width(p, what)
    dlcore._require_scalar(p, what, "sig_addr")
    cmp = tlc._unwrap_if_constexpr(cmp)
    if cmp not in _CMPS:
        raise dlcore.DistributedError(f"{what}: cmp={cmp!r} is not one of CMP_EQ..CMP_LE (0..5)")
    timeout = dlcore.wait_timeout_arg(timeout_ns, what)
    v = _semantic.cast(_semantic.to_tensor(tlc._unwrap_if_constexpr(cmp_val)), elem)
    args = [_semantic.cast(p, tl.int64), _semantic.cast(_semantic.to_tensor(cmp), tl.int32), v,
            _semantic.cast(_semantic.to_tensor(timeout), tl.int64)]
    return dlcore._extern(f"tdist_{elem.name}_wait_until_i64", args, [tl.int64, tl.int32, elem, tl.int64], elem,
                          _semantic, is_pure=False)


@tlc.builtin
def fence(_semantic=None):
    """Order this thread's earlier memory operations before its later ones, system-wide."""
    dlcore._require_cuda("libshmem_device.fence", _semantic)
    dlcore._inline_asm("fence.acq_rel.sys; mov.u32 $0, 0;", "=r", [], tl.int32, _semantic)


@tlc.builtin
def quiet(_semantic=None):
    """Complete the program's outstanding puts: a system fence, then every thread of the program joins."""
    dlcore._require_cuda("libshmem_device.quiet", _semantic)
    dlcore._inline_asm("fence.acq_rel.sys; bar.sync 0; mov.u32 $0, 0;", "=r", [], tl.int32, _semantic)


@tlc.builtin
def barrier_all(_semantic=None, _generator=None):
    """Device barrier over every program of the launch on every PE (docs/CONTRACT.md section 3).

    Every thread calls the bitcode's ``tdist_barrier_all_i64`` (void functions need an int-returning
    twin because Triton's ``extern_elementwise`` cannot return void), which is CTA-collective like
    ``tdist_barrier_all``: it joins ``bar.sync``, thread 0 runs the centralised pull barrier, and
    every thread joins again before it returns. (Calling it from thread 0 alone would pair its
    internal ``bar.sync`` with the other threads' and leave thread 0 at a barrier they never reach.)
    """
    dlcore._require_cuda("libshmem_device.barrier_all", _semantic)
    return _generator.call_JitFunction(_barrier_all, [], {})


@tlc.builtin
def _bitcode_barrier(_semantic=None):
    return dlcore._extern("tdist_barrier_all_i64", [], [], tl.int32, _semantic, is_pure=False)


@triton.jit
def _barrier_all():
    _bitcode_barrier()


barrier_all_block = barrier_all_warp = barrier_all
