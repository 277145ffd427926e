"""libshmem_device on Ascend (seed 000 section 7.4: the proxy's Ascend entry), under triton-ascend.

Seed 7.1's dynamic path: each call becomes ``extern_call`` of an aclshmem template-library symbol
(``device/Ascend/symbols.def``), emitted as a ``tt.extern_elementwise`` with libname
``libshmem_device`` and pointers passed as i64 (docs/COMPILE.md section 1). tdist-opt raises it
into ``distributed.extern_call`` and lowers it with the seed's attributes (TCoreType table 3.4).
CPU ranks run the same lowering against tdist's CPU template library (device/CPU/aclshmem.cpp).

``remote_ptr`` and ``signal_op`` are the static primitives (``dl.symm_at``, ``dl.notify``), so their
symbols are typed by the pointer (``aclshmem_ptr_<T>``, ``aclshmemx_signal_op`` / ``aclshmem_<T>_p``).
Scopes: an Ascend program is one vector core; ``_block`` / ``_warp`` variants are the plain call.
``signal_wait_until`` is ``aclshmem_signal_wait_until`` (every predicate, 64-bit signals).
"""
import triton.language as tl
from triton.language import core as tlc

from ... import core as dlcore
from ..._front import Front, SHMEM_LIB, DistributedError
from .._shmem_constants import (  # noqa: F401  (the public constants of this module)
    CMP_EQ, CMP_NE, CMP_GT, CMP_GE, CMP_LT, CMP_LE, SIGNAL_SET, SIGNAL_ADD, NVSHMEM_CMP_EQ, NVSHMEM_CMP_NE,
    NVSHMEM_CMP_GT, NVSHMEM_CMP_GE, NVSHMEM_CMP_LT, NVSHMEM_CMP_LE, NVSHMEM_SIGNAL_SET, NVSHMEM_SIGNAL_ADD,
    sig_op_name)

PLATFORM = "ascend"


def _front(name, _semantic, _builder):
    f = Front(f"libshmem_device.{name}", _semantic, _builder)
    if f.lowering != "marker":
        raise DistributedError(f"libshmem_device.{name}: the Ascend implementation compiles under triton-ascend only "
                               f"(this kernel is compiled for {f.platform})")
    return f


def _call(f, symbol, args, dtypes, ret=tl.int32, pure=False):
    for n, a in enumerate(args):
        f.scalar(a, f"argument {n}")
    return f.extern(SHMEM_LIB, symbol, args, dtypes, ret, pure)


def _addr(f, p, name):
    return f.ptr_as_i64(f.tensor(p), name)


@tlc.builtin
def my_pe(_semantic=None, _builder=None):
    f = _front("my_pe", _semantic, _builder)
    return _call(f, "aclshmem_my_pe", [], [], tl.int32, pure=True)


@tlc.builtin
def n_pes(_semantic=None, _builder=None):
    f = _front("n_pes", _semantic, _builder)
    return _call(f, "aclshmem_n_pes", [], [], tl.int32, pure=True)


@tlc.builtin
def remote_ptr(ptr, pe, _semantic=None, _builder=None):
    return dlcore.symm_at(ptr, pe, _semantic=_semantic, _builder=_builder)


ptr = remote_ptr


def _rma(name, symbol):

    @tlc.builtin
    def fn(dst, src, nbytes, pe, _semantic=None, _builder=None):
        f = _front(name, _semantic, _builder)
        args = [_addr(f, dst, "dst"), _addr(f, src, "src"), f.cast(f.tensor(nbytes), tl.int64),
                f.cast(f.tensor(pe), tl.int32)]
        _call(f, symbol, args, [tl.int64, tl.int64, tl.int64, tl.int32])
        return None

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{symbol}``: copy ``nbytes`` (program-scope on Ascend: one vector core)."
    return fn


def _rma_signal(name, symbol):

    @tlc.builtin
    def fn(dst, src, nbytes, sig_addr, signal, sig_op, pe, _semantic=None, _builder=None):
        f = _front(name, _semantic, _builder)
        op = sig_op_name(sig_op, f"libshmem_device.{name}")
        sig = f.tensor(sig_addr)
        dlcore._signal_width(sig, f"libshmem_device.{name}")
        args = [_addr(f, dst, "dst"), _addr(f, src, "src"), f.cast(f.tensor(nbytes), tl.int64), _addr(f, sig, "sig_addr"),
                f.cast(f.tensor(signal), tl.int64), f.i32(dlcore.SIG_OP_CODES[op]), f.cast(f.tensor(pe), tl.int32)]
        _call(f, symbol, args, [tl.int64, tl.int64, tl.int64, tl.int64, tl.int64, tl.int32, tl.int32])
        return None

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{symbol}``: put, then a release update of the signal on ``pe``."
    return fn


for _base in ("putmem", "getmem"):
    for _suffix in ("", "_block", "_warp", "_nbi", "_nbi_block", "_nbi_warp"):
        _sym = f"aclshmem_{_base}" + ("_nbi" if "_nbi" in _suffix else "")
        globals()[_base + _suffix] = _rma(_base + _suffix, _sym)
for _suffix in ("", "_block", "_warp", "_nbi", "_nbi_block", "_nbi_warp"):
    _sym = "aclshmem_putmem_signal" + ("_nbi" if "_nbi" in _suffix else "")
    globals()["putmem_signal" + _suffix] = _rma_signal("putmem_signal" + _suffix, _sym)


@tlc.builtin
def signal_op(sig_addr, signal, sig_op, pe, _semantic=None, _builder=None):
    """``dl.notify`` (``aclshmemx_signal_op`` for an i32 slot, ``aclshmem_<T>_p`` for 64-bit SET)."""
    op = sig_op_name(sig_op, "libshmem_device.signal_op")
    return dlcore.notify(sig_addr, pe, signal, op, _semantic=_semantic, _builder=_builder)


_CMP_NAMES = {0: "CMP_EQ", 1: "CMP_NE", 2: "CMP_GT", 3: "CMP_GE", 4: "CMP_LT", 5: "CMP_LE"}


@tlc.builtin
def signal_wait_until(sig_addr, cmp, cmp_val, timeout_ns=None, _semantic=None, _builder=None):
    """``aclshmem_signal_wait_until``: wait (acquire) until ``*sig_addr <cmp> cmp_val`` on this PE (a
    64-bit signal, compared as the device ABI's ``tdist_signal_wait_until`` does); returns the value
    seen. Bounded by the runtime's wait budget (the template library's wait takes no limit argument:
    ``timeout_ns`` is only checked, as in ``dl.wait``)."""
    what = "libshmem_device.signal_wait_until"
    f = _front("signal_wait_until", _semantic, _builder)
    dlcore.wait_timeout_arg(timeout_ns, what)
    cmp = tlc._unwrap_if_constexpr(cmp)
    if cmp not in _CMP_NAMES:
        raise DistributedError(f"{what}: cmp={cmp!r} is not one of CMP_EQ..CMP_LE (0..5)")
    p = f.tensor(sig_addr)
    elem, bits = dlcore._signal_width(p, what)
    if bits != 64:
        raise DistributedError(f"{what}: the signal must be 64-bit (int64 / uint64), got a pointer to {elem.name}")
    args = [f.ptr_as_i64(p, "sig_addr"), f.i32(cmp), f.cast(f.tensor(cmp_val), tl.int64)]
    seen = _call(f, "aclshmem_signal_wait_until", args, [tl.int64, tl.int32, tl.int64], tl.int64)
    return f.cast(seen, elem)


def _void(name, symbol, doc):

    @tlc.builtin
    def fn(_semantic=None, _builder=None):
        f = _front(name, _semantic, _builder)
        _call(f, symbol, [], [])
        return None

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


barrier_all = _void("barrier_all", "aclshmem_barrier_all",
                    "Barrier over every program of the launch on every PE (CUBE_AND_VECTOR, seed 3.4).")
barrier_all_block = barrier_all_warp = barrier_all
barrier_all_vec = _void("barrier_all_vec", "aclshmemx_barrier_all_vec", "Barrier over the vector cores (VECTOR).")
fence = _void("fence", "aclshmem_fence", "Order this program's earlier puts before its later ones.")
quiet = _void("quiet", "aclshmem_quiet", "Complete this program's outstanding puts.")
