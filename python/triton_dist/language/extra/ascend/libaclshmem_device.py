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

Names Triton-distributed kernels use, in terms of the same symbols: ``team_my_pe`` / ``team_n_pes`` /
``team_translate_pe`` (the world team; node and shared are the world team), ``int_p`` /
``int32_p`` (``dl.notify`` on an int32 slot: ``aclshmemx_signal_op`` SET) and ``int64_p`` /
``uint64_p`` (``aclshmem_<T>_p``), ``<T>_wait_until`` / ``<T>_wait_until_equals`` (64-bit:
``aclshmem_signal_wait_until``; int32 equality: ``dl.wait`` on one slot), ``sync_all*``, ``barrier*``
(a constant device-side team) and ``barrier_all_grid``: ``aclshmem_barrier_all``; ``quiet_pe``:
``aclshmem_quiet``. The aclshmem template library has no broadcast / fcollect and no thread / warp
scopes: those names fail to compile here, naming themselves.
"""
import triton.language as tl
from triton.language import core as tlc

from ... import core as dlcore
from ..._front import Front, SHMEM_LIB, DistributedError
from .._shmem_constants import (  # noqa: F401  (the public constants and team calls of this module)
    CMP_EQ, CMP_NE, CMP_GT, CMP_GE, CMP_LT, CMP_LE, SIGNAL_SET, SIGNAL_ADD, NVSHMEM_CMP_EQ, NVSHMEM_CMP_NE,
    NVSHMEM_CMP_GT, NVSHMEM_CMP_GE, NVSHMEM_CMP_LT, NVSHMEM_CMP_LE, NVSHMEM_SIGNAL_SET, NVSHMEM_SIGNAL_ADD,
    TEAM_INVALID, TEAM_WORLD, TEAM_SHARED, TEAM_NODE, NVSHMEM_TEAM_INVALID, NVSHMEM_TEAM_WORLD, NVSHMEM_TEAM_SHARED,
    NVSHMEMX_TEAM_NODE, NVSHMEM_TEAM_NODE, team_my_pe, team_n_pes, team_translate_pe, check_team, sig_op_name)

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
        args = [_addr(f, dst, "dst"), _addr(f, src, "src"), f.cast(f.tensor(nbytes), tl.int64),
                _addr(f, sig, "sig_addr"), f.cast(f.tensor(signal), tl.int64), f.i32(dlcore.SIG_OP_CODES[op]),
                f.cast(f.tensor(pe), tl.int32)]
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


# ---- names of Triton-distributed kernels, on the symbols above


def _p(name, dtype_name):

    @tlc.builtin
    def fn(dest, value, pe, _semantic=None, _builder=None):
        f = _front(name, _semantic, _builder)
        d = f.tensor(dest)
        if not d.type.scalar.is_ptr() or d.type.scalar.element_ty.name != dtype_name:
            raise DistributedError(f"libshmem_device.{name}: dest must point to {dtype_name}, got {d.type}")
        return dlcore.notify(d, pe, value, "set", _semantic=_semantic, _builder=_builder)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Store ``value`` at ``dest`` on ``pe`` (release): ``dl.notify`` on a {dtype_name} slot, SET."
    return fn


int_p = int32_p = _p("int_p", "int32")
int64_p = long_p = longlong_p = _p("int64_p", "int64")
uint64_p = ulonglong_p = _p("uint64_p", "uint64")


def _typed_wait(name, dtype_name, equals):

    def check(sig, what, f):
        p = f.tensor(sig)
        if not p.type.scalar.is_ptr() or p.type.scalar.element_ty.name != dtype_name:
            raise DistributedError(f"{what}: ivar must point to {dtype_name}, got {p.type}")
        return p

    def body(ivar, cmp, value, timeout_ns, _semantic, _builder):
        what = f"libshmem_device.{name}"
        f = _front(name, _semantic, _builder)
        p = check(ivar, what, f)
        if dtype_name == "int32":
            if tlc._unwrap_if_constexpr(cmp) != 0:
                raise DistributedError(f"{what}: on Ascend an int32 wait compares for equality only (dl.wait); "
                                       "use a 64-bit signal for other predicates")
            dlcore.wait(p, 1, "gpu", "acquire", waitValue=value, timeout_ns=timeout_ns, _semantic=_semantic,
                        _builder=_builder)
            return f.cast(f.tensor(value), p.type.scalar.element_ty)
        return signal_wait_until(p, cmp, value, timeout_ns, _semantic=_semantic, _builder=_builder)

    if equals:
        @tlc.builtin
        def fn(ivar, cmp_value, timeout_ns=None, _semantic=None, _builder=None):
            return body(ivar, 0, cmp_value, timeout_ns, _semantic, _builder)
    else:
        @tlc.builtin
        def fn(ivar, cmp, cmp_value, timeout_ns=None, _semantic=None, _builder=None):
            return body(ivar, cmp, cmp_value, timeout_ns, _semantic, _builder)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Wait until ``*ivar`` ({dtype_name}) satisfies the predicate; returns the value seen."
    return fn


for _tn, _dt in (("int32", "int32"), ("int", "int32"), ("int64", "int64"), ("long", "int64"), ("longlong", "int64"),
                 ("uint64", "uint64"), ("ulonglong", "uint64")):
    globals()[f"{_tn}_wait_until"] = _typed_wait(f"{_tn}_wait_until", _dt, False)
    globals()[f"{_tn}_wait_until_equals"] = _typed_wait(f"{_tn}_wait_until_equals", _dt, True)
del _tn, _dt


def _team_barrier(name):

    @tlc.builtin
    def fn(team, _semantic=None, _builder=None):
        what = f"libshmem_device.{name}"
        if check_team(team, what) is None:
            raise DistributedError(f"{what}: on Ascend the team must be a constant (NVSHMEM_TEAM_WORLD, "
                                   "NVSHMEMX_TEAM_NODE or NVSHMEM_TEAM_SHARED)")
        return barrier_all(_semantic=_semantic, _builder=_builder)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = "``aclshmem_barrier_all`` for a device-side team (all of them are the world team)."
    return fn


sync_all = sync_all_block = sync_all_warp = barrier_all_grid = barrier_all
barrier = _team_barrier("barrier")
barrier_block = _team_barrier("barrier_block")
barrier_warp = _team_barrier("barrier_warp")
sync = _team_barrier("sync")
team_sync_block = _team_barrier("team_sync_block")
team_sync_warp = _team_barrier("team_sync_warp")


@tlc.builtin
def quiet_pe(pe, _semantic=None, _builder=None):
    """``aclshmem_quiet`` (every outstanding put completes, those to ``pe`` among them)."""
    return quiet(_semantic=_semantic, _builder=_builder)
