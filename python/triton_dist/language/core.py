"""The distributed primitives (``dl.*``) on stock Triton 3.6.

Seed 000 section 7.1: the core primitives take the *static* path -- each call becomes fixed code,
with no run-time platform branching. On stock Triton there is no ``distributed`` dialect, so each
primitive is a Triton builtin that emits

* calls into the device-ABI bitcode (``libtdist_device.bc``, docs/CONTRACT.md section 3), which
  Triton links and inlines: ``rank`` (``tdist_my_pe``), ``num_ranks`` (``tdist_n_pes``),
  ``symm_at`` (``tdist_ptr_i64``), ``wait`` (``tdistx_wait_<T>_i64``: the one device wait of
  include/tdist/NVIDIA/device.cuh) and ``notify`` (``tdistx_notify_<T>_i64``), and
* an opaque inline-asm identity for ``consume_token``.

Memory-ordering contract (include/tdist/abi.h):

* ``wait`` is an ACQUIRE at system scope, executed by every thread of the program, so every thread's
  later loads are ordered after it. It is non-consuming: it never writes the slot. ``scope`` "gpu"
  and "sys" both give system scope: a peer PE is another process or another GPU, which the PTX
  memory model only covers at ``.sys``.
* ``notify`` is a RELEASE: ``bar.sync 0`` joins every thread of the program (their earlier stores
  are then ordered before the signal by cumulativity), then thread 0 alone updates the slot. It
  executes once per program, never once per thread. Who resets a slot is the caller's protocol
  (seed 002: the consumer notifies 0 to itself, or the host fills 0 between launches).
* ``consume_token(x, token)`` returns ``x`` through a side-effecting inline asm that reads the
  token: nothing computed from the result can be hoisted above the wait.

Every wait is the ABI's one wait (docs/CONTRACT.md, "Waits"): bounded by ``timeout_ns`` (default
``None``: the runtime's budget, ``TDIST_WAIT_TIMEOUT_MS``; 0 = forever), ended at once by a fault
already recorded on this PE (a peer the watchdog saw die, an earlier expired wait). A wait that ends
without its condition records the fault (the PE owning the slot, heap offset, expected, seen), the
first such thread prints it, and the program traps: the host sees a launch failure at its next
synchronisation.
"""
from __future__ import annotations

import warnings

import triton
import triton.language as tl
from triton.language import core as tlc

from .. import _bitcode

SIGNAL_SLOT_BYTES = 64  # TDIST_SIGNAL_SLOT_BYTES: by default the slots of a multi-slot wait are one cache line apart
DEFAULT_WAIT_TIMEOUT_NS = None  # the runtime's wait budget (TDIST_WAIT_TIMEOUT_MS, default 60 s)

SIGNAL_SET = 1  # tdist_signal_op_t
SIGNAL_ADD = 2
_SIG_OPS = {"set": SIGNAL_SET, "add": SIGNAL_ADD}
_SCOPES = ("gpu", "sys", "system")
_SEMANTICS = ("acquire", "relaxed")
_COMM_SCOPES = ("gpu", "intra_node", "inter_node")

# dl.wait accepts every signal type of the device ABI (TDIST_FOR_EACH_SIGNAL_TYPE).
_WAIT_DTYPES = {"int32": 32, "int64": 64, "uint64": 64}


class SlotStrideWarning(UserWarning):
    """A multi-slot ``dl.wait`` without ``slot_stride``: tdist reads its slots 64 bytes apart, while
    kernels written for Triton-distributed lay them out contiguously (``slot_stride=1``)."""


from ._front import DistributedError, Front, SCOPE_CODES, SEMANTIC_CODES, SIG_OP_CODES, COMM_SCOPE_CODES  # noqa: E402,F401
from ._front import marker_symbol  # noqa: E402  (device/dist_ops.def: the bitcode names of rank, num_ranks, symm_at)


# --------------------------------------------------------------------------------------------
# helpers


def _unwrap(x):
    return tlc._unwrap_if_constexpr(x)


def _backend_name(_semantic):
    return getattr(_semantic.builder.options, "backend_name", "unknown")


def _require_cuda(what, _semantic):
    """For the CUDA-only helpers of the PTX lowering (``extra.cuda``): refuse any other target."""
    if _semantic is None:
        raise DistributedError(f"{what}: this is the CUDA implementation; it has no lowering for triton-ascend")
    name = _backend_name(_semantic)
    if name != "cuda":
        raise DistributedError(f"{what}: compile target {name!r} is not CUDA; this implementation emits PTX")


def ensure_linked(_semantic, lib_name=_bitcode.LIB_NAME, lib_path=None):
    """Make the compilation link ``lib_path`` (default: the tdist device bitcode).

    Triton links ``options.extern_libs`` into every kernel that declares external functions. A
    kernel launched with ``extern_libs={"libtdist_device": path}`` (see ``triton_dist.extern_libs()``)
    already has it, and then its path is part of Triton's cache key. Otherwise it is added here, while
    the kernel is being generated; the cache key then does not cover the bitcode file, so clear the
    Triton cache after rebuilding it.
    """
    options = _semantic.builder.options
    libs = dict(options.extern_libs or ())
    if lib_name in libs:
        return libs[lib_name]
    if lib_path is None and lib_name == _bitcode.LIB_NAME:
        ours = _bitcode.extern_libs()  # with NVSHMEM's library after ours in an engine job
        path = ours[lib_name]
        libs.update(ours)
    else:
        path = lib_path or _bitcode.find_bitcode()
        libs[lib_name] = path
    object.__setattr__(options, "extern_libs", tuple(libs.items()))
    return path


def _tensor(x, _semantic):
    return _semantic.to_tensor(_unwrap(x))


def _signal_width(ptr, what):
    ty = ptr.type
    if not ty.scalar.is_ptr():
        raise DistributedError(f"{what}: expected a pointer to a signal slot, got a value of type {ty}")
    elem = ty.scalar.element_ty
    if elem.name not in _WAIT_DTYPES:
        raise DistributedError(f"{what}: signal slots must be int32, int64 or uint64, got a pointer to {elem.name}")
    return elem, _WAIT_DTYPES[elem.name]


def _require_scalar(x, what, argname):
    if x.type.is_block():
        raise DistributedError(
            f"{what}: {argname} must be a scalar pointer (one signal slot per call, the call acts once per "
            f"program), got a block of shape {x.type.shape}")


def _choice(value, legal, what, argname):
    value = _unwrap(value)
    if not isinstance(value, str) or value not in legal:
        raise DistributedError(f"{what}: {argname}={value!r} is not one of {', '.join(map(repr, legal))}")
    return value


def _to_i64(ptr, _semantic):
    return _semantic.cast(ptr, tl.int64)


def _inline_asm(asm, constraints, args, dtype, _semantic, is_pure=False):
    return tlc.inline_asm_elementwise(asm, constraints, args, dtype=dtype, is_pure=is_pure, pack=1,
                                      _semantic=_semantic)


def _extern(symbol, args, arg_dtypes, ret_dtype, _semantic, is_pure=True):
    ensure_linked(_semantic)
    return tlc.extern_elementwise(_bitcode.LIB_NAME, "", list(args), {tuple(arg_dtypes): (symbol, ret_dtype)},
                                  is_pure=is_pure, _semantic=_semantic)


def wait_timeout_arg(timeout_ns, what):
    """The bound argument of the ABI's Triton-facing waits: -1 = the runtime's budget (``None``),
    0 = forever, else nanoseconds (a constant int)."""
    timeout_ns = _unwrap(timeout_ns)
    if timeout_ns is None:
        return -1
    if not isinstance(timeout_ns, int) or isinstance(timeout_ns, bool) or timeout_ns < 0:
        raise DistributedError(f"{what}: timeout_ns must be None (the runtime's budget) or a constant int >= 0 "
                               f"(0 = forever), got {timeout_ns!r}")
    return timeout_ns


def _slot_stride(slot_stride, elem, numBarriers, what, _generator):
    """The slot stride in elements (``slot_stride`` checked; ``None``: tdist's 64-byte layout, with a
    SlotStrideWarning when the wait may cover more than one slot)."""
    slot_stride = _unwrap(slot_stride)
    bits = _WAIT_DTYPES[elem.name]
    if slot_stride is None:
        n = _unwrap(numBarriers)
        if not (isinstance(n, int) and n == 1):
            _warn_at(_generator, f"{what}: numBarriers={n if isinstance(n, int) else '<run-time value>'} without "
                     f"slot_stride reads its {elem.name} slots {SIGNAL_SLOT_BYTES} bytes apart (tdist's layout, "
                     f"slot_stride={SIGNAL_SLOT_BYTES * 8 // bits}); a kernel written for Triton-distributed lays "
                     "them out contiguously: pass slot_stride=1 (or the stride you mean) to say which",
                     SlotStrideWarning)
        return SIGNAL_SLOT_BYTES * 8 // bits
    if not isinstance(slot_stride, int) or isinstance(slot_stride, bool) or slot_stride < 1:
        raise DistributedError(f"{what}: slot_stride must be None (64-byte slots) or a constant int >= 1 (elements), "
                               f"got {slot_stride!r}")
    return slot_stride


def _warn_at(_generator, message, category):
    """``warnings.warn`` attributed to the kernel source line being compiled (once per line)."""
    node = getattr(_generator, "cur_node", None)
    fn = getattr(_generator, "jit_fn", None)
    filename = getattr(_generator, "file_name", None) or getattr(fn, "__module__", None) or "<kernel>"
    lineno = getattr(node, "lineno", 0) or 0
    begin = getattr(_generator, "begin_line", 0) or 0
    name = getattr(fn, "__name__", "") if fn is not None else ""
    warnings.warn_explicit(f"{message} [kernel {name}]" if name else message, category, filename,
                           lineno + begin, module=filename, registry=_WARNED)


_WARNED = {}


# --------------------------------------------------------------------------------------------
# the primitives


@tlc.builtin
def wait(barrierPtrs, numBarriers, scope="gpu", semantic="acquire", waitValue=1, timeout_ns=DEFAULT_WAIT_TIMEOUT_NS,
         slot_stride=None, _semantic=None, _builder=None, _generator=None):
    """Wait until each of ``numBarriers`` signal slots equals ``waitValue``; return a token (int32).

    ``barrierPtrs`` is a scalar pointer to int32 / int64 / uint64. ``scope``: "gpu" or "sys" (both
    system scope, see the module docstring); ``semantic``: "acquire" or "relaxed". Non-consuming.
    Pass the token to ``consume_token`` to order later loads after the wait.

    ``slot_stride`` (a constant, in elements of the slot type): slot i is ``barrierPtrs + i *
    slot_stride``. ``None`` (default) is tdist's layout, one slot per 64-byte cache line (seed 000
    section 4.2: 16 int32 or 8 int64 elements apart). Kernels written for Triton-distributed, whose
    ``dl.wait`` reads consecutive elements, pass ``slot_stride=1``. A wait on more than one slot
    (``numBarriers`` not the constant 1) without ``slot_stride`` compiles with tdist's layout and a
    ``SlotStrideWarning`` naming the call, so a ported kernel never watches other words silently
    (docs/CONTRACT.md section 3, docs/PORTING.md).

    ``timeout_ns``: ``None`` (default) = the runtime's budget (``option_attr.wait_timeout_ms`` /
    ``TDIST_WAIT_TIMEOUT_MS``), 0 = forever, else nanoseconds; see the module docstring for what an
    expired wait does. On Ascend and CPU ranks the template library's wait takes no limit argument:
    the runtime's budget bounds it, and ``timeout_ns`` is only checked. "relaxed" is served by the
    acquire wait (stronger).
    """
    what = "dl.wait"
    f = Front(what, _semantic, _builder)
    _choice(scope, _SCOPES, what, "scope")
    semantic = _choice(semantic, _SEMANTICS, what, "semantic")
    ptr = f.tensor(barrierPtrs)
    elem, bits = _signal_width(ptr, what)
    _require_scalar(ptr, what, "barrierPtrs")
    n = _unwrap(numBarriers)
    if isinstance(n, int) and n < 1:
        raise DistributedError(f"{what}: numBarriers must be >= 1, got {n}")
    n = f.cast(f.tensor(n), tl.int32)
    if n.type.is_block():
        raise DistributedError(f"{what}: numBarriers must be a scalar, got a block of shape {n.type.shape}")
    value = f.cast(f.tensor(waitValue), elem)
    timeout = wait_timeout_arg(timeout_ns, what)
    stride = _slot_stride(slot_stride, elem, numBarriers, what, _generator)
    default_stride = SIGNAL_SLOT_BYTES // (bits // 8)
    if stride != default_stride and not (isinstance(_unwrap(numBarriers), int) and _unwrap(numBarriers) == 1):
        if f.lowering == "marker":
            # The template library's wait reads 64-byte slots: wait for each slot alone, in order (each
            # call is the ABI's one wait on one slot).
            if _generator is None:
                raise DistributedError(f"{what}: slot_stride={stride} needs the code generator (call it from a kernel)")
            return _generator.call_JitFunction(_wait_each, [ptr, n, value], {
                "STRIDE": tl.constexpr(stride), "SCOPE": tl.constexpr(_unwrap(scope)),
                "SEMANTIC": tl.constexpr(semantic)})
        return _extern(f"tdistx_wait_{elem.name}_strided_i64",
                       [_to_i64(ptr, _semantic), n, f.i64(stride * (bits // 8)), value, f.i64(timeout)],
                       [tl.int64, tl.int32, tl.int64, elem, tl.int64], tl.int32, _semantic, is_pure=False)
    if f.lowering == "marker":
        args = [f.ptr_as_i64(ptr, "barrierPtrs"), n, value, f.i32(SCOPE_CODES[_unwrap(scope)]),
                f.i32(SEMANTIC_CODES[semantic])]
        return f.marker("wait", args, [tl.int64, tl.int32, elem, tl.int32, tl.int32], tl.int32, suffix=elem.name)
    return _extern(f"tdistx_wait_{elem.name}_i64", [_to_i64(ptr, _semantic), n, value, f.i64(timeout)],
                   [tl.int64, tl.int32, elem, tl.int64], tl.int32, _semantic, is_pure=False)


# Alignment the compiler may assume for the zero that consume_token adds and for the heap delta that
# symm_at adds (both are multiples of this many elements: 0 trivially, the delta because every heap
# base is aligned to the allocation granularity, 2 MiB). Without it Triton's axis analysis sees an
# opaque inline-asm / extern result and falls back to 2-byte scalar loads and stores.
_KNOWN_ALIGN_ELEMS = 16


def _opaque_zero(token, dtype, _semantic):
    """0 of ``dtype``, computed by inline asm that reads ``token``: adding it to a value makes the
    value depend on the wait that produced the token, while the axis analysis still knows it is a
    constant multiple of anything (so contiguity and alignment of the value survive)."""
    bits = dtype.primitive_bitwidth
    c = "r" if bits == 32 else "l"
    z = _inline_asm(f"mov.b{bits} $0, 0; // consume_token $1", f"={c},r", [token], dtype, _semantic)
    z = _semantic.multiple_of(z, [_KNOWN_ALIGN_ELEMS] * max(1, len(z.shape)))
    if z.type.is_block():
        z = _semantic.max_constancy(z, list(z.shape))
    return z


@tlc.builtin
def consume_token(value, token, _semantic=None, _builder=None):
    """Return ``value`` (a pointer, a block of pointers, or an integer) made dependent on ``token``.

    At run time it is the identity. In the IR the result is ``value + z`` where ``z`` is a zero
    produced by a side-effecting inline asm that reads the token, so loads through the result cannot
    be moved above the wait that produced the token; ``z`` is known to be a constant multiple of 16,
    so the result keeps the contiguity and alignment of ``value`` (vectorised loads stay vectorised).
    On Ascend and CPU ranks it is ``distributed.consume_token`` (scalar values only).
    """
    what = "dl.consume_token"
    f = Front(what, _semantic, _builder)
    x = f.tensor(value)
    tok = f.tensor(token)
    if not tok.type.scalar.is_int():
        raise DistributedError(f"{what}: token must be the integer returned by dl.wait, got {tok.type}")
    tok = f.cast(tok, tl.int32)
    sca = x.type.scalar
    if f.lowering == "marker":
        f.scalar(x, "value")
        f.scalar(tok, "token")
        if sca.is_ptr():
            out = f.marker("consume_token", [f.cast(x, tl.int64), tok], [tl.int64, tl.int32], tl.int64, suffix="ptr")
            return f.cast(out, x.type)
        if sca.is_int() and sca.primitive_bitwidth in (32, 64):
            ity = tl.int32 if sca.primitive_bitwidth == 32 else tl.int64
            out = f.marker("consume_token", [f.cast(x, ity), tok], [ity, tl.int32], ity, suffix=ity.name)
            return f.cast(out, sca)
        raise DistributedError(f"{what}: value must be a pointer or a 32/64-bit integer, got {x.type}")
    if sca.is_ptr():
        return _semantic.add(x, _opaque_zero(tok, tl.int64, _semantic), True)
    if sca.is_int() and sca.primitive_bitwidth in (32, 64):
        return _semantic.add(x, _opaque_zero(tok, sca, _semantic), True)
    raise DistributedError(f"{what}: value must be a pointer or a 32/64-bit integer, got {x.type}")


def _world_axis(axis, what):
    axis = _unwrap(axis)
    if axis not in (-1, 0):
        raise DistributedError(f"{what}: axis={axis!r} not supported (only -1 / 0: the world team)")


@tlc.builtin
def rank(axis=-1, _semantic=None, _builder=None):
    """This PE's id in the world team (``tdist_my_pe``; ``distributed.get_rank``)."""
    _world_axis(axis, "dl.rank")
    f = Front("dl.rank", _semantic, _builder)
    if f.lowering == "marker":
        return f.marker("get_rank", [], [], tl.int32)
    return _extern(marker_symbol("get_rank"), [], [], tl.int32, _semantic)


@tlc.builtin
def num_ranks(axis=-1, _semantic=None, _builder=None):
    """Number of PEs in the world team (``tdist_n_pes``; ``distributed.get_num_ranks``)."""
    _world_axis(axis, "dl.num_ranks")
    f = Front("dl.num_ranks", _semantic, _builder)
    if f.lowering == "marker":
        return f.marker("get_num_ranks", [], [], tl.int32)
    return _extern(marker_symbol("get_num_ranks"), [], [], tl.int32, _semantic)


def _symm_at_i64(ptr, rank_, _semantic):
    r = _semantic.cast(_tensor(rank_, _semantic), tl.int32)
    return _extern(marker_symbol("symm_at"), [_to_i64(ptr, _semantic), r], [tl.int64, tl.int32], tl.int64, _semantic)


@tlc.builtin
def symm_at(ptr, rank, _semantic=None, _builder=None):
    """The address of symmetric ``ptr`` (scalar or block of pointers) on PE ``rank``.

    ``p2p_heap_base[rank] + (ptr - heap_base)`` (seed 000 section 5.3). A pointer outside the
    symmetric heap gives a sticky device fault (TDIST_ERR_INVALID_PARAM) and NULL; host code can
    check arguments beforehand with ``shmem.check_symmetric``.

    For a scalar pointer the result is built as ``ptr + delta`` with ``delta`` (the heap distance,
    in elements) known to be a multiple of 16, so offsets added afterwards keep their contiguity and
    alignment: translate a scalar base, then add the tile's offsets, for vectorised remote access.
    A block of pointers is translated element by element.
    """
    what = "dl.symm_at"
    f = Front(what, _semantic, _builder)
    p = f.tensor(ptr)
    if not p.type.scalar.is_ptr():
        raise DistributedError(f"{what}: expected a pointer, got {p.type}")
    if f.lowering == "marker":
        r = f.scalar(f.cast(f.tensor(rank), tl.int32), "rank")
        out = f.marker("symm_at", [f.ptr_as_i64(p, "ptr"), r], [tl.int64, tl.int32], tl.int64)
        return f.cast(out, p.type)
    out = _symm_at_i64(p, rank, _semantic)
    if p.type.is_block():
        return _semantic.cast(out, p.type)
    elem_bytes = max(1, p.type.element_ty.primitive_bitwidth // 8)
    delta = _semantic.sub(out, _to_i64(p, _semantic), True)
    if elem_bytes > 1:
        delta = _semantic.floordiv(delta, elem_bytes)
    delta = _semantic.multiple_of(delta, [_KNOWN_ALIGN_ELEMS])
    return _semantic.add(p, delta, True)


def check_notify_dtype(dtype_name: str, sig_op: str, platform: str) -> None:
    """Seed 000 section 7.4: Ascend allows int32 (set and add) and int64 / uint64 (set only). CUDA
    allows every signal type of the device ABI (int32, int64, uint64; set and add:
    ``tdistx_notify_<T>_i64``); every other platform allows int64 / uint64 only."""
    if platform == "ascend":
        if dtype_name == "int32":
            return
        if dtype_name in ("int64", "uint64"):
            if sig_op != "set":
                raise DistributedError(
                    f"dl.notify: on Ascend a {dtype_name} signal supports sig_op='set' only, got {sig_op!r}")
            return
        raise DistributedError(f"dl.notify: on Ascend the signal must be int32, int64 or uint64, got {dtype_name}")
    if platform == "cuda":
        if dtype_name not in _WAIT_DTYPES:
            raise DistributedError(f"dl.notify: on cuda the signal must be int32, int64 or uint64, got {dtype_name}")
        return
    if dtype_name not in ("int64", "uint64"):
        raise DistributedError(f"dl.notify: on {platform} the signal must be int64 or uint64, got {dtype_name}")


@tlc.builtin
def notify(ptr, rank, signal=1, sig_op="set", comm_scope="inter_node", _semantic=None, _builder=None):
    """Update the signal slot ``ptr`` (a symmetric scalar pointer) on PE ``rank``, with release.

    ``sig_op``: "set" (store ``signal``) or "add" (atomic add). Executes once per program; all the
    program's earlier stores (local and remote) are visible to whoever observes the new value.
    ``comm_scope`` ("gpu", "intra_node", "inter_node") is accepted for compatibility; the route is the
    PE's, whatever the scope: through its peer mapping when this PE has one, else (another host, or
    ``TDIST_ROCE_PEERS=all``) through the ROCE engine, NVSHMEM's signal op on the NVIDIA backend.
    """
    what = "dl.notify"
    f = Front(what, _semantic, _builder)
    sig_op = _choice(sig_op, tuple(_SIG_OPS), what, "sig_op")
    comm_scope = _choice(comm_scope, _COMM_SCOPES, what, "comm_scope")
    p = f.tensor(ptr)
    if not p.type.scalar.is_ptr():
        raise DistributedError(f"{what}: expected a pointer to a signal slot, got {p.type}")
    elem = p.type.scalar.element_ty
    check_notify_dtype(elem.name, sig_op, f.platform)
    _require_scalar(p, what, "ptr")
    value = f.cast(f.tensor(signal), elem)
    if value.type.is_block():
        raise DistributedError(f"{what}: signal must be a scalar, got a block of shape {value.type.shape}")
    if f.lowering == "marker":
        r = f.scalar(f.cast(f.tensor(rank), tl.int32), "rank")
        args = [f.ptr_as_i64(p, "ptr"), f.cast(value, tl.int64), r, f.i32(SIG_OP_CODES[sig_op]),
                f.i32(COMM_SCOPE_CODES[comm_scope])]
        f.marker("notify", args, [tl.int64, tl.int64, tl.int32, tl.int32, tl.int32], tl.int32, suffix=elem.name)
        return None
    r = _semantic.cast(_tensor(rank, _semantic), tl.int32)
    _extern(f"tdistx_notify_{elem.name}_i64", [_to_i64(p, _semantic), value, r, f.i32(_SIG_OPS[sig_op])],
            [tl.int64, elem, tl.int32, tl.int32], tl.int32, _semantic, is_pure=False)
    return None


@tlc.builtin
def extern_call(lib_name, lib_path, args, arg_type_symbol_dict, is_pure, _semantic=None, _builder=None):
    """Call a device function from a bitcode library (Triton-distributed's ``dl.extern_call``).

    Same arguments as ``tl.extern_elementwise``; the library at ``lib_path`` is added to the
    kernel's ``extern_libs`` (if ``lib_path`` is empty, the tdist device bitcode is meant).
    """
    lib_name = _unwrap(lib_name)
    lib_path = _unwrap(lib_path)
    f = Front("dl.extern_call", _semantic, _builder)
    if f.lowering == "marker":
        # distributed.extern_call after the raise; the library is the platform's (linked later).
        return tlc.extern_elementwise(lib_name, lib_path, list(args), _unwrap(arg_type_symbol_dict),
                                      is_pure=_unwrap(is_pure), **f.kw)
    if lib_path:
        ensure_linked(_semantic, lib_name, lib_path)
    else:
        ensure_linked(_semantic)
    return tlc.extern_elementwise(lib_name, lib_path, list(args), _unwrap(arg_type_symbol_dict),
                                  is_pure=_unwrap(is_pure), _semantic=_semantic)


@triton.jit
def _wait_each(ptr, n, value, STRIDE: tl.constexpr, SCOPE: tl.constexpr, SEMANTIC: tl.constexpr):
    """dl.wait on slots STRIDE elements apart where the platform's multi-slot wait reads 64-byte
    slots: one single-slot wait (the ABI's wait) per slot, in order."""
    tok = wait(ptr, 1, SCOPE, SEMANTIC, waitValue=value)
    for i in range(1, n):
        tok = wait(ptr + i * STRIDE, 1, SCOPE, SEMANTIC, waitValue=value)
    return tok
