"""libshmem_device on NVIDIA GPUs with stock Triton 3.6, with NVSHMEM's scopes.

Triton runs scalar code in every thread of the program, and kernels written for Triton-distributed
use libshmem_device the way CUDA code uses NVSHMEM (``if tid(0) == 0: signal_op(...)``), so the
scope of a call is NVSHMEM's (docs/CONTRACT.md section 3, "libshmem_device scopes"):

* plain form: the calling thread does the whole operation, with no CTA barrier inside; called from
  every thread, every thread does it (a put copied by each, an ADD added by each), as with NVSHMEM;
* ``_warp``: every lane of a warp calls it with the same arguments; the warp cooperates;
* ``_block``: every thread of the program calls it with the same arguments; the program
  cooperates and joins (bar.sync) at entry and exit.

Puts: the blocking forms return when every byte is performed at system scope (each participant
fences before the exit join); the ``_nbi`` forms return as soon as the stores are issued: the
source may be reused, the data may still be in flight to the peer until the issuing threads call
``quiet()`` (or a later release made after a join orders it, e.g. ``putmem_signal``, ``signal_op``
by thread 0 after the ``_block`` form returned, ``dl.notify``, a barrier). Gets complete on return.
``putmem_signal``: data, join, one release signal; ``_nbi`` lets every participant but the signalling
one return without waiting for the signal. Signals (``signal_op``, ``putmem_signal``, ``<T>_p``) are
releases.

Barriers (``barrier_all``, ``barrier(team)``, ``sync_all``, ``sync(team)`` and their ``_warp`` /
``_block`` forms) are NVSHMEM's: across PEs, one participant per PE (a thread, a warp or a
program), typically ``if tl.program_id(0) == 0: barrier_all_block()``. A sync also completes the
caller's puts here (it is the same barrier). tdist's barrier over every program of the launch on
every PE is ``barrier_all_grid()``. Device-side teams: the world team, and the node and shared teams,
which are the world team (``_shmem_constants``).

Waits (``signal_wait_until``, ``<T>_wait_until``, ``<T>_wait_until_equals``) are the device ABI's
one wait, thread form, bounded by the runtime's budget (``timeout_ns`` extends NVSHMEM's
signature); a wait that gives up prints the fault record and stops the program.

Constants: ``extra/_shmem_constants.py`` (shared with the Ascend module).
"""
import triton
import triton.language as tl
from triton.language import core as tlc

from ... import core as dlcore

from .._shmem_constants import (  # noqa: F401  (the public constants and team calls of this module)
    CMP_EQ, CMP_NE, CMP_GT, CMP_GE, CMP_LT, CMP_LE, SIGNAL_SET, SIGNAL_ADD, NVSHMEM_CMP_EQ, NVSHMEM_CMP_NE,
    NVSHMEM_CMP_GT, NVSHMEM_CMP_GE, NVSHMEM_CMP_LT, NVSHMEM_CMP_LE, NVSHMEM_SIGNAL_SET, NVSHMEM_SIGNAL_ADD,
    TEAM_INVALID, TEAM_WORLD, TEAM_SHARED, TEAM_NODE, NVSHMEM_TEAM_INVALID, NVSHMEM_TEAM_WORLD, NVSHMEM_TEAM_SHARED,
    NVSHMEMX_TEAM_NODE, NVSHMEM_TEAM_NODE, team_my_pe, team_n_pes, team_translate_pe, check_team, sig_op_name)

_CMPS = (0, 1, 2, 3, 4, 5)
_SCOPES = ("thread", "warp", "block")


def _u(x):
    return tlc._unwrap_if_constexpr(x)


def _scalar(x, what, argname, _semantic):
    t = _semantic.to_tensor(_u(x))
    if t.type.is_block():
        raise dlcore.DistributedError(f"{what}: {argname} must be a scalar, got a block of shape {t.type.shape}")
    return t


def _ptr_i64(p, what, argname, _semantic):
    t = _scalar(p, what, argname, _semantic)
    if not t.type.scalar.is_ptr():
        raise dlcore.DistributedError(f"{what}: {argname} must be a pointer, got {t.type}")
    return _semantic.cast(t, tl.int64)


def _int(x, dtype, what, argname, _semantic):
    return _semantic.cast(_scalar(x, what, argname, _semantic), dtype)


def _call(symbol, args, dtypes, _semantic, ret=tl.int32):
    return dlcore._extern(symbol, args, dtypes, ret, _semantic, is_pure=False)


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


# ---- bulk copies (device ABI: tdistx_shmem_{putmem,getmem,putmem_signal}_<scope>[_nbi]_i64)


def _rma(op, scope, nbi):
    name = op + ("" if scope == "thread" else "_" + scope)
    if nbi:
        name = op + "_nbi" + ("" if scope == "thread" else "_" + scope)
    symbol = f"tdistx_shmem_{op}_{scope}{'_nbi' if nbi and op == 'putmem' else ''}_i64"
    what = f"libshmem_device.{name}"

    @tlc.builtin
    def fn(dest, source, nbytes, pe, _semantic=None):
        dlcore._require_cuda(what, _semantic)
        args = [_ptr_i64(dest, what, "dest", _semantic), _ptr_i64(source, what, "source", _semantic),
                _int(nbytes, tl.int64, what, "nbytes", _semantic), _int(pe, tl.int32, what, "pe", _semantic)]
        _call(symbol, args, [tl.int64, tl.int64, tl.int64, tl.int32], _semantic)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``{symbol}``: {op} of ``nbytes`` bytes ({scope} scope"
                  + (", returns once the stores are issued" if nbi and op == "putmem" else "") + ").")
    return name, fn


def _rma_signal(scope, nbi):
    name = "putmem_signal" + ("_nbi" if nbi else "") + ("" if scope == "thread" else "_" + scope)
    symbol = f"tdistx_shmem_putmem_signal_{scope}{'_nbi' if nbi else ''}_i64"
    what = f"libshmem_device.{name}"

    @tlc.builtin
    def fn(dest, source, nbytes, sig_addr, signal, sig_op, pe, _semantic=None):
        dlcore._require_cuda(what, _semantic)
        op = dlcore.SIG_OP_CODES[sig_op_name(sig_op, what)]
        args = [_ptr_i64(dest, what, "dest", _semantic), _ptr_i64(source, what, "source", _semantic),
                _int(nbytes, tl.int64, what, "nbytes", _semantic), _signal_ptr(sig_addr, what, _semantic),
                _int(signal, tl.uint64, what, "signal", _semantic), _int(op, tl.int32, what, "sig_op", _semantic),
                _int(pe, tl.int32, what, "pe", _semantic)]
        _call(symbol, args, [tl.int64, tl.int64, tl.int64, tl.int64, tl.uint64, tl.int32, tl.int32], _semantic)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{symbol}``: put, then a release update of the 64-bit signal on ``pe`` ({scope} scope)."
    return name, fn


def _signal_ptr(sig_addr, what, _semantic):
    p = _scalar(sig_addr, what, "sig_addr", _semantic)
    if not p.type.scalar.is_ptr() or p.type.scalar.element_ty.name not in ("int64", "uint64"):
        raise dlcore.DistributedError(f"{what}: sig_addr must point to a 64-bit signal (int64 / uint64: NVSHMEM's "
                                      f"uint64_t), got {p.type}")
    return _semantic.cast(p, tl.int64)


for _scope in _SCOPES:
    for _nbi in (False, True):
        for _op in ("putmem", "getmem"):
            _n, _f = _rma(_op, _scope, _nbi)
            globals()[_n] = _f
        _n, _f = _rma_signal(_scope, _nbi)
        globals()[_n] = _f
del _scope, _nbi, _op, _n, _f


@tlc.builtin
def _put(dest, source, nbytes, pe, SCOPE, _semantic=None):
    fn = {"thread": putmem, "warp": putmem_warp, "block": putmem_block}[_u(SCOPE)]  # noqa: F821
    return fn(dest, source, nbytes, pe, _semantic=_semantic)


# ---- signals and single elements


@tlc.builtin
def signal_op(sig_addr, signal, sig_op, pe, _semantic=None):
    """The calling thread updates the 64-bit signal at ``sig_addr`` on ``pe`` (SET / ADD, release)."""
    what = "libshmem_device.signal_op"
    dlcore._require_cuda(what, _semantic)
    op = dlcore.SIG_OP_CODES[sig_op_name(sig_op, what)]
    args = [_signal_ptr(sig_addr, what, _semantic), _int(signal, tl.uint64, what, "signal", _semantic),
            _int(op, tl.int32, what, "sig_op", _semantic), _int(pe, tl.int32, what, "pe", _semantic)]
    _call("tdistx_shmem_signal_op_i64", args, [tl.int64, tl.uint64, tl.int32, tl.int32], _semantic)


def _wait(sig_addr, cmp, cmp_val, timeout_ns, what, _semantic, elem_name=None):
    dlcore._require_cuda(what, _semantic)
    p = _semantic.to_tensor(sig_addr)
    elem, _ = dlcore._signal_width(p, what)
    if elem_name is not None and elem.name != elem_name:
        raise dlcore.DistributedError(f"{what}: ivar must point to {elem_name}, got a pointer to {elem.name}")
    dlcore._require_scalar(p, what, "sig_addr")
    cmp = _u(cmp)
    if cmp not in _CMPS:
        raise dlcore.DistributedError(f"{what}: cmp={cmp!r} is not one of CMP_EQ..CMP_LE (0..5)")
    timeout = dlcore.wait_timeout_arg(timeout_ns, what)
    v = _semantic.cast(_semantic.to_tensor(_u(cmp_val)), elem)
    args = [_semantic.cast(p, tl.int64), _semantic.cast(_semantic.to_tensor(cmp), tl.int32), v,
            _semantic.cast(_semantic.to_tensor(timeout), tl.int64)]
    return dlcore._extern(f"tdist_{elem.name}_wait_until_i64", args, [tl.int64, tl.int32, elem, tl.int64], elem,
                          _semantic, is_pure=False)


@tlc.builtin
def signal_wait_until(sig_addr, cmp, cmp_val, timeout_ns=dlcore.DEFAULT_WAIT_TIMEOUT_NS, _semantic=None):
    """Wait (acquire, the calling thread) until ``*sig_addr <cmp> cmp_val`` on this PE; return the value seen.

    The ABI's one wait (``tdist_<T>_wait_until_i64``, T from the pointer: int32 / int64 compare
    signed, uint64 unsigned), bounded like ``dl.wait``: ``timeout_ns`` ``None`` (default) is the
    runtime's budget, 0 forever; a wait that ends without its condition records and prints the fault
    and traps. The argument extends NVSHMEM's signature, whose spin has no limit.
    """
    return _wait(sig_addr, cmp, cmp_val, timeout_ns, "libshmem_device.signal_wait_until", _semantic)


# NVSHMEM type names of the waits the device ABI has (int32 / int64 / uint64 slots)
_WAIT_TYPES = {"int32": "int32", "int64": "int64", "uint64": "uint64", "int": "int32", "long": "int64",
               "longlong": "int64", "ptrdiff": "int64", "ulong": "uint64", "ulonglong": "uint64", "size": "uint64"}


def _typed_wait(tname, elem_name, equals):
    name = f"{tname}_wait_until" + ("_equals" if equals else "")
    what = f"libshmem_device.{name}"
    if equals:
        @tlc.builtin
        def fn(ivar, cmp_value, timeout_ns=None, _semantic=None):
            return _wait(ivar, 0, cmp_value, timeout_ns, what, _semantic, elem_name)
        fn.__doc__ = f"Wait until ``*ivar == cmp_value`` (``{elem_name}``); returns the value seen."
    else:
        @tlc.builtin
        def fn(ivar, cmp, cmp_value, timeout_ns=None, _semantic=None):
            return _wait(ivar, cmp, cmp_value, timeout_ns, what, _semantic, elem_name)
        fn.__doc__ = f"Wait until ``*ivar <cmp> cmp_value`` (``{elem_name}``); returns the value seen."
    fn.__name__ = fn.__qualname__ = name
    return name, fn


for _t, _e in _WAIT_TYPES.items():
    for _eq in (False, True):
        _n, _f = _typed_wait(_t, _e, _eq)
        globals()[_n] = _f
del _t, _e, _eq, _n, _f

# NVSHMEM type names of single-element put / get (tdist's TDIST_FOR_EACH_RMA_TYPE, and half / bfloat16)
_PG_TYPES = {"float": tl.float32, "double": tl.float64, "half": tl.float16, "bfloat16": tl.bfloat16,
             "char": tl.int8, "schar": tl.int8, "short": tl.int16, "int": tl.int32, "long": tl.int64,
             "longlong": tl.int64, "int8": tl.int8, "int16": tl.int16, "int32": tl.int32, "int64": tl.int64,
             "uint8": tl.uint8, "uint16": tl.uint16, "uint32": tl.uint32, "uint64": tl.uint64, "size": tl.uint64,
             "ptrdiff": tl.int64}


# half / bfloat16 travel as their 16-bit patterns (the ABI's uint16 forms)
_PG_BITS = {"half": "uint16", "bfloat16": "uint16"}


def _pg(tname, dtype, put):
    name = f"{tname}_{'p' if put else 'g'}"
    what = f"libshmem_device.{name}"
    abi = _PG_BITS.get(tname, tname)
    carrier = _PG_TYPES[abi]
    symbol = f"tdistx_shmem_{abi}_{'p' if put else 'g'}_i64"

    def _addr(p, _semantic):
        t = _scalar(p, what, "dest" if put else "source", _semantic)
        if not t.type.scalar.is_ptr() or t.type.scalar.element_ty != dtype:
            raise dlcore.DistributedError(f"{what}: the pointer must be to {dtype}, got {t.type}")
        return _semantic.cast(t, tl.int64)

    # The device ABI's thread forms (tdist_<type>_p: release store; tdist_<type>_g: relaxed system-scope
    # load), so that a PE reached only through the ROCE engine gets the same call.
    if put:
        @tlc.builtin
        def fn(dest, value, pe, _semantic=None):
            dlcore._require_cuda(what, _semantic)
            v = _semantic.cast(_scalar(value, what, "value", _semantic), dtype)
            if carrier != dtype:
                v = _semantic.bitcast(v, carrier)
            _call(symbol, [_addr(dest, _semantic), v, _int(pe, tl.int32, what, "pe", _semantic)],
                  [tl.int64, carrier, tl.int32], _semantic)
        fn.__doc__ = f"The calling thread stores ``value`` ({dtype}) at ``dest`` on ``pe`` (a release store)."
    else:
        @tlc.builtin
        def fn(source, pe, _semantic=None):
            dlcore._require_cuda(what, _semantic)
            v = _call(symbol, [_addr(source, _semantic), _int(pe, tl.int32, what, "pe", _semantic)],
                      [tl.int64, tl.int32], _semantic, ret=carrier)
            return _semantic.bitcast(v, dtype) if carrier != dtype else v
        fn.__doc__ = f"The calling thread loads the {dtype} at ``source`` on ``pe`` (relaxed, system scope)."
    fn.__name__ = fn.__qualname__ = name
    return name, fn


for _t, _d in _PG_TYPES.items():
    for _put_form in (True, False):
        _n, _f = _pg(_t, _d, _put_form)
        globals()[_n] = _f
del _t, _d, _put_form, _n, _f


# ---- ordering


@tlc.builtin
def fence(_semantic=None):
    """Order this thread's earlier memory operations before its later ones, system-wide."""
    dlcore._require_cuda("libshmem_device.fence", _semantic)
    dlcore._inline_asm("fence.acq_rel.sys; mov.u32 $0, 0;", "=r", [], tl.int32, _semantic)


@tlc.builtin
def quiet(_semantic=None):
    """Complete the calling thread's outstanding puts (``tdist_quiet``: fence.sc.sys); thread scope.
    After a ``_block`` / ``_warp`` nbi put, every participant that issued stores calls it (or a
    later release by a thread that joined them orders the data)."""
    dlcore._require_cuda("libshmem_device.quiet", _semantic)
    _call("tdist_quiet_i64", [], [], _semantic)


@tlc.builtin
def quiet_pe(pe, _semantic=None):
    """``quiet`` (the calling thread's puts to every PE complete, those to ``pe`` among them)."""
    dlcore._require_cuda("libshmem_device.quiet_pe", _semantic)
    _int(pe, tl.int32, "libshmem_device.quiet_pe", "pe", _semantic)
    _call("tdist_quiet_i64", [], [], _semantic)


# ---- barriers


def _barrier(name, scope, team_arg):
    what = f"libshmem_device.{name}"
    symbol = f"tdistx_shmem_barrier_{scope}_i64"

    def body(team, _semantic):
        dlcore._require_cuda(what, _semantic)
        check_team(team, what)
        _call(symbol, [_int(team, tl.int32, what, "team", _semantic)], [tl.int32], _semantic)

    if team_arg:
        @tlc.builtin
        def fn(team, _semantic=None):
            body(team, _semantic)
    else:
        @tlc.builtin
        def fn(_semantic=None):
            body(0, _semantic)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``{symbol}``: barrier across the PEs of " + ("``team``" if team_arg else "the world team")
                  + f", one {scope if scope != 'block' else 'program'} per PE participating; every store the "
                  "participants made before it is visible on every PE after it.")
    return fn


for _s, _sfx in (("thread", ""), ("warp", "_warp"), ("block", "_block")):
    globals()["barrier_all" + _sfx] = _barrier("barrier_all" + _sfx, _s, False)
    globals()["sync_all" + _sfx] = _barrier("sync_all" + _sfx, _s, False)
    globals()["barrier" + _sfx] = _barrier("barrier" + _sfx, _s, True)
    globals()[("sync" if _s == "thread" else "team_sync") + _sfx] = _barrier(
        ("sync" if _s == "thread" else "team_sync") + _sfx, _s, True)
del _s, _sfx


@tlc.builtin
def _barrier_scope(team, SCOPE, _semantic=None):
    fn = {"thread": barrier, "warp": barrier_warp, "block": barrier_block}[_u(SCOPE)]  # noqa: F821
    return fn(team, _semantic=_semantic)


@tlc.builtin
def barrier_all_grid(_semantic=None, _generator=None):
    """tdist's device barrier (docs/CONTRACT.md section 3): over every program of the launch on every
    PE; every thread of every program calls it, and every program must be co-resident.

    Every thread calls the bitcode's ``tdist_barrier_all_i64`` (CTA-collective like
    ``tdist_barrier_all``: it joins ``bar.sync``, thread 0 runs the barrier, every thread joins
    again before it returns)."""
    dlcore._require_cuda("libshmem_device.barrier_all_grid", _semantic)
    return _generator.call_JitFunction(_barrier_all_grid, [], {})


@tlc.builtin
def _bitcode_barrier(_semantic=None):
    return dlcore._extern("tdist_barrier_all_i64", [], [], tl.int32, _semantic, is_pure=False)


@triton.jit
def _barrier_all_grid():
    _bitcode_barrier()


# ---- collectives over a team: root / every PE pushes, then the team's barrier (NVSHMEM's put-to-all)


@tlc.builtin
def _elem_bytes(p, _semantic=None):
    t = _semantic.to_tensor(_u(p))
    if not t.type.scalar.is_ptr():
        raise dlcore.DistributedError(f"libshmem_device: expected a pointer, got {t.type}")
    return tl.constexpr(max(1, t.type.scalar.element_ty.primitive_bitwidth // 8))


@triton.jit
def _broadcast(team, dest, source, nbytes, pe_root, SCOPE: tl.constexpr):
    if team_my_pe(team) == pe_root:
        for pe in range(0, team_n_pes(team)):
            _put(dest, source, nbytes, team_translate_pe(team, pe, 0), SCOPE)
    _barrier_scope(team, SCOPE)


@triton.jit
def _fcollect(team, dest, source, nbytes, SCOPE: tl.constexpr):
    me = team_my_pe(team)
    slot = dest.to(tl.pointer_type(tl.int8)) + me.to(tl.int64) * nbytes
    for pe in range(0, team_n_pes(team)):
        _put(slot, source, nbytes, team_translate_pe(team, pe, 0), SCOPE)
    _barrier_scope(team, SCOPE)


# broadcast / broadcastmem: ``nelems`` elements of dest's type / bytes from ``source`` on the root
# (a team PE number) to ``dest`` on every PE of the team, the root's included. fcollect /
# fcollectmem: every PE's ``source`` into slot ``team_my_pe`` of ``dest`` on every PE. All PEs of the
# team call them (the same scope on every PE); on return the data is in place everywhere.


@triton.jit
def broadcast(team, dest, source, nelems, pe_root):
    _broadcast(team, dest, source, tl.cast(nelems, tl.int64) * _elem_bytes(dest), pe_root, "thread")


@triton.jit
def broadcast_warp(team, dest, source, nelems, pe_root):
    _broadcast(team, dest, source, tl.cast(nelems, tl.int64) * _elem_bytes(dest), pe_root, "warp")


@triton.jit
def broadcast_block(team, dest, source, nelems, pe_root):
    _broadcast(team, dest, source, tl.cast(nelems, tl.int64) * _elem_bytes(dest), pe_root, "block")


@triton.jit
def broadcastmem(team, dest, source, nelems, pe_root):
    _broadcast(team, dest, source, tl.cast(nelems, tl.int64), pe_root, "thread")


@triton.jit
def broadcastmem_warp(team, dest, source, nelems, pe_root):
    _broadcast(team, dest, source, tl.cast(nelems, tl.int64), pe_root, "warp")


@triton.jit
def broadcastmem_block(team, dest, source, nelems, pe_root):
    _broadcast(team, dest, source, tl.cast(nelems, tl.int64), pe_root, "block")


@triton.jit
def fcollect(team, dest, source, nelems):
    _fcollect(team, dest, source, tl.cast(nelems, tl.int64) * _elem_bytes(dest), "thread")


@triton.jit
def fcollect_warp(team, dest, source, nelems):
    _fcollect(team, dest, source, tl.cast(nelems, tl.int64) * _elem_bytes(dest), "warp")


@triton.jit
def fcollect_block(team, dest, source, nelems):
    _fcollect(team, dest, source, tl.cast(nelems, tl.int64) * _elem_bytes(dest), "block")


@triton.jit
def fcollectmem(team, dest, source, nelems):
    _fcollect(team, dest, source, tl.cast(nelems, tl.int64), "thread")


@triton.jit
def fcollectmem_warp(team, dest, source, nelems):
    _fcollect(team, dest, source, tl.cast(nelems, tl.int64), "warp")


@triton.jit
def fcollectmem_block(team, dest, source, nelems):
    _fcollect(team, dest, source, tl.cast(nelems, tl.int64), "block")
