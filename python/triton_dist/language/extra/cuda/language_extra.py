"""``language_extra`` on NVIDIA GPUs (stock Triton 3.6): the SIMT layer of Triton-distributed's kernels.

Triton runs scalar code in every thread of the program, so these calls are per thread, as in CUDA:
``tid(0)`` is this thread's index, ``if tid(0) == 0:`` is a branch only thread 0 takes, ``ld`` /
``st`` / ``atomic_*`` are one memory instruction of the calling thread (on a scalar pointer; on a
block of pointers, one per element). Every PTX template of the front end's SIMT layer is in this
module, and only where the PTX instruction is the primitive itself (a load with a scope and a
semantic, a shuffle, a special register). Waits are not written here: ``wait_eq`` is the device
ABI's one wait (``tdist_<T>_wait_until_i64``, docs/CONTRACT.md section 3 "Waits"), bounded by the
runtime's budget and stopping the program with the fault record when it gives up.

Scopes: "cta", "gpu", "sys" ("system" is "sys"). A peer PE is another process or GPU: its memory
is ordered only at "sys". Semantics: loads "relaxed" / "acquire", stores "relaxed" / "release",
atomics "relaxed" / "acquire" / "release" / "acq_rel". Values other than these are compile errors
naming the call and the argument.

``pack`` / ``unpack`` take and return tuples of scalars (Triton-distributed's take its SIMT
``vector`` type, which tdist does not have): ``pack((lo, hi), tl.uint64)``, ``lo, hi =
unpack(x, tl.uint32)``.
"""
import triton
import triton.language as tl
from triton.language import core as tlc

from ... import core as dlcore
from ...core import DistributedError

_SCOPES = {"cta": "cta", "gpu": "gpu", "sys": "sys", "system": "sys"}
_LD_SEMANTICS = ("relaxed", "acquire")
_ST_SEMANTICS = ("relaxed", "release")
_ATOM_SEMANTICS = ("relaxed", "acquire", "release", "acq_rel")
_MEMBAR_SCOPES = ("cta", "gl", "sys")
_FENCE_SEMANTICS = ("sc", "acq_rel")
_REG = {16: "h", 32: "r", 64: "l"}  # inline-asm register constraint per bit width


def _u(x):
    return tlc._unwrap_if_constexpr(x)


def _front(what, _semantic):
    dlcore._require_cuda(f"language_extra.{what}", _semantic)


def _pick(value, legal, what, argname):
    value = _u(value)
    if isinstance(legal, dict):
        if value not in legal:
            raise DistributedError(f"language_extra.{what}: {argname}={value!r} is not one of "
                                   f"{', '.join(map(repr, legal))}")
        return legal[value]
    if value not in legal:
        raise DistributedError(f"language_extra.{what}: {argname}={value!r} is not one of "
                               f"{', '.join(map(repr, legal))}")
    return value


def _asm(asm, constraints, args, dtype, _semantic, pure=False):
    return tlc.inline_asm_elementwise(asm, constraints, list(args), dtype=dtype, is_pure=pure, pack=1,
                                      _semantic=_semantic)


def _pointer(ptr, what, _semantic):
    p = _semantic.to_tensor(_u(ptr))
    if not p.type.scalar.is_ptr():
        raise DistributedError(f"language_extra.{what}: expected a pointer, got {p.type}")
    return p


def _uint(bits):
    return {8: tl.uint8, 16: tl.uint16, 32: tl.uint32, 64: tl.uint64}[bits]


def _elem_bits(p, what, allow_float=True):
    elem = p.type.scalar.element_ty
    bits = elem.primitive_bitwidth
    if bits not in (8, 16, 32, 64) or (elem.is_floating() and not allow_float) or not (elem.is_int() or
                                                                                        elem.is_floating()):
        raise DistributedError(f"language_extra.{what}: a pointer to {elem} is not supported (8/16/32/64-bit "
                               f"{'integers' if not allow_float else 'integers or floats'})")
    return elem, bits


# ---------------------------------------------------------------------------------------------
# thread identity and launch shape


def _sreg(name, _semantic, pure=True):
    return _asm(f"mov.u32 $0, %{name};", "=r", [], tl.int32, _semantic, pure)


def _axis(axis, what):
    axis = _u(axis)
    if axis not in (0, 1, 2):
        raise DistributedError(f"language_extra.{what}: axis must be 0, 1 or 2, got {axis!r}")
    return "xyz"[axis]


@tlc.builtin
def tid(axis, _semantic=None):
    """This thread's index in the program along ``axis`` (``%tid.x/y/z``; Triton programs are 1-D)."""
    _front("tid", _semantic)
    return _sreg(f"tid.{_axis(axis, 'tid')}", _semantic)


@tlc.builtin
def ntid(axis, _semantic=None):
    """Threads per program along ``axis`` (``%ntid``: 32 * num_warps along x)."""
    _front("ntid", _semantic)
    return _sreg(f"ntid.{_axis(axis, 'ntid')}", _semantic)


@tlc.builtin
def laneid(_semantic=None):
    """This thread's lane in its warp (0..31)."""
    _front("laneid", _semantic)
    return _sreg("laneid", _semantic)


@tlc.builtin
def smid(_semantic=None):
    """The SM this program runs on (``%smid``)."""
    _front("smid", _semantic)
    return _asm("mov.u32 $0, %smid;", "=r", [], tl.uint32, _semantic, pure=False)


@tlc.builtin
def threads_per_warp(_semantic=None):
    return tl.constexpr(32)


@tlc.builtin
def num_warps(_semantic=None):
    """The program's ``num_warps`` (a compile-time constant)."""
    _front("num_warps", _semantic)
    return tl.constexpr(_semantic.builder.options.num_warps)


@tlc.builtin
def num_threads(_semantic=None):
    """Threads per program: ``num_warps * 32`` (a compile-time constant)."""
    _front("num_threads", _semantic)
    return tl.constexpr(_semantic.builder.options.num_warps * 32)


@tlc.builtin
def globaltimer(_semantic=None):
    """The GPU's nanosecond timer (``%globaltimer``, uint64)."""
    _front("globaltimer", _semantic)
    return _asm("mov.u64 $0, %globaltimer;", "=l", [], tl.uint64, _semantic)


@tlc.builtin
def globaltimer_lo(_semantic=None):
    _front("globaltimer_lo", _semantic)
    return _asm("mov.u32 $0, %globaltimer_lo;", "=r", [], tl.uint32, _semantic)


@tlc.builtin
def globaltimer_hi(_semantic=None):
    _front("globaltimer_hi", _semantic)
    return _asm("mov.u32 $0, %globaltimer_hi;", "=r", [], tl.uint32, _semantic)


# ---------------------------------------------------------------------------------------------
# barriers and fences


@tlc.builtin
def __syncthreads(_semantic=None):
    """Every thread of the program joins (``bar.sync 0``); call it from every thread."""
    _front("__syncthreads", _semantic)
    tl.debug_barrier(_semantic=_semantic)


@tlc.builtin
def __syncwarp(_semantic=None):
    """Every lane of the warp joins (``bar.warp.sync -1``)."""
    _front("__syncwarp", _semantic)
    _asm("bar.warp.sync -1; mov.u32 $0, 0;", "=r", [], tl.int32, _semantic)


@tlc.builtin
def membar(scope="cta", _semantic=None):
    """``membar.cta`` / ``membar.gl`` / ``membar.sys`` by the calling thread."""
    _front("membar", _semantic)
    scope = _pick(scope, _MEMBAR_SCOPES, "membar", "scope")
    _asm(f"membar.{scope}; mov.u32 $0, 0;", "=r", [], tl.int32, _semantic)


@tlc.builtin
def fence(semantic="sc", scope="gpu", _semantic=None):
    """``fence.<semantic>.<scope>`` by the calling thread (semantic "sc" or "acq_rel")."""
    _front("fence", _semantic)
    semantic = _pick(semantic, _FENCE_SEMANTICS, "fence", "semantic")
    scope = _pick(scope, _SCOPES, "fence", "scope")
    _asm(f"fence.{semantic}.{scope}; mov.u32 $0, 0;", "=r", [], tl.int32, _semantic)


__fence = fence


# ---------------------------------------------------------------------------------------------
# scoped memory operations


def _ld_raw(p, bits, opcode, _semantic):
    """``opcode`` loads one element of ``bits`` bits; the result as an unsigned int of that width."""
    if bits == 8:  # an 8-bit load goes to a 32-bit register
        v = _asm(f"{opcode}.u8 $0, [$1];", "=r,l", [p], tl.uint32, _semantic)
        return _semantic.cast(v, tl.uint8)
    return _asm(f"{opcode}.b{bits} $0, [$1];", f"={_REG[bits]},l", [p], _uint(bits), _semantic)


def _from_bits(v, elem, _semantic):
    return v if v.type.scalar == elem else _semantic.bitcast(v, elem)


def _to_bits(val, elem, bits, _semantic):
    v = _semantic.to_tensor(_u(val))
    v = _semantic.cast(v, elem)
    return _semantic.bitcast(v, _uint(bits)) if elem != _uint(bits) else v


@tlc.builtin
def ld(ptr, scope="gpu", semantic="relaxed", _semantic=None):
    """One load by the calling thread: ``ld.global.<semantic>.<scope>`` (8/16/32/64-bit ints and
    floats; a float is loaded as its bits)."""
    what = "ld"
    _front(what, _semantic)
    p = _pointer(ptr, what, _semantic)
    scope = _pick(scope, _SCOPES, what, "scope")
    semantic = _pick(semantic, _LD_SEMANTICS, what, "semantic")
    elem, bits = _elem_bits(p, what)
    return _from_bits(_ld_raw(p, bits, f"ld.global.{semantic}.{scope}", _semantic), elem, _semantic)


@tlc.builtin
def ld_acquire(ptr, scope="gpu", _semantic=None):
    """``ld(ptr, scope, "acquire")``."""
    return ld(ptr, scope, "acquire", _semantic=_semantic)


@tlc.builtin
def ld_b32(ptr, _semantic=None):
    """A relaxed gpu-scope load of a 32-bit value."""
    return ld(ptr, "gpu", "relaxed", _semantic=_semantic)


@tlc.builtin
def st(ptr, val, scope="gpu", semantic="relaxed", _semantic=None):
    """One store by the calling thread: ``st.global.<semantic>.<scope>`` (``val`` is converted to the
    pointer's element type first)."""
    what = "st"
    _front(what, _semantic)
    p = _pointer(ptr, what, _semantic)
    scope = _pick(scope, _SCOPES, what, "scope")
    semantic = _pick(semantic, _ST_SEMANTICS, what, "semantic")
    elem, bits = _elem_bits(p, what)
    v = _to_bits(val, elem, bits, _semantic)
    if p.type.is_block() and not v.type.is_block():
        v = _semantic.broadcast_impl_shape(v, p.type.get_block_shapes())
    op = f"st.global.{semantic}.{scope}"
    if bits == 8:
        _asm(f"{op}.u8 [$1], $2; mov.u32 $0, 0;", "=r,l,r", [p, _semantic.cast(v, tl.uint32)], tl.int32, _semantic)
    else:
        _asm(f"{op}.b{bits} [$1], $2; mov.u32 $0, 0;", f"=r,l,{_REG[bits]}", [p, v], tl.int32, _semantic)


@tlc.builtin
def st_b32(ptr, val, _semantic=None):
    """A relaxed gpu-scope store of a 32-bit value."""
    return st(ptr, val, "gpu", "relaxed", _semantic=_semantic)


def _atom_operands(ptr, what, _semantic, scope, semantic):
    p = _pointer(ptr, what, _semantic)
    elem = p.type.scalar.element_ty
    if not elem.is_int() or elem.primitive_bitwidth not in (32, 64):
        raise DistributedError(f"language_extra.{what}: the pointer must be to a 32- or 64-bit integer, got {elem}")
    return p, elem, _pick(scope, _SCOPES, what, "scope"), _pick(semantic, _ATOM_SEMANTICS, what, "semantic")


def _value(v, elem, _semantic):
    return _semantic.cast(_semantic.to_tensor(_u(v)), elem)


@tlc.builtin
def atomic_add(ptr, value, scope="gpu", semantic="relaxed", _semantic=None):
    """``atom.<semantic>.<scope>.global.add``: adds ``value`` and returns the old value."""
    what = "atomic_add"
    _front(what, _semantic)
    p, elem, scope, semantic = _atom_operands(ptr, what, _semantic, scope, semantic)
    bits = elem.primitive_bitwidth
    ty = "u64" if bits == 64 else ("s32" if elem.is_int_signed() else "u32")
    c = _REG[bits]
    return _asm(f"atom.{semantic}.{scope}.global.add.{ty} $0, [$1], $2;", f"={c},l,{c}",
                [p, _value(value, elem, _semantic)], elem, _semantic)


@tlc.builtin
def atomic_cas(ptr, value, target_value, scope="gpu", semantic="relaxed", _semantic=None):
    """``atom.<semantic>.<scope>.global.cas``: if ``*ptr == value`` store ``target_value``; returns
    the old value."""
    what = "atomic_cas"
    _front(what, _semantic)
    p, elem, scope, semantic = _atom_operands(ptr, what, _semantic, scope, semantic)
    bits = elem.primitive_bitwidth
    c = _REG[bits]
    return _asm(f"atom.{semantic}.{scope}.global.cas.b{bits} $0, [$1], $2, $3;", f"={c},l,{c},{c}",
                [p, _value(value, elem, _semantic), _value(target_value, elem, _semantic)], elem, _semantic)


@tlc.builtin
def red_release(barrier_ptr, value, scope="gpu", _semantic=None):
    """``red.release.<scope>.global.add``: a release add that returns nothing."""
    what = "red_release"
    _front(what, _semantic)
    p, elem, scope, _ = _atom_operands(barrier_ptr, what, _semantic, scope, "release")
    bits = elem.primitive_bitwidth
    ty = "u64" if bits == 64 else ("s32" if elem.is_int_signed() else "u32")
    _asm(f"red.release.{scope}.global.add.{ty} [$1], $2; mov.u32 $0, 0;", f"=r,l,{_REG[bits]}",
         [p, _value(value, elem, _semantic)], tl.int32, _semantic)


@triton.jit
def arrive_inc(barrier_ptr, thread_idx, value, scope: tl.constexpr):
    """The program joins, then thread 0 adds ``value`` with release."""
    __syncthreads()
    if thread_idx == 0:
        red_release(barrier_ptr, value, scope)


@triton.jit
def atomic_add_per_warp(barrier_ptr, value, scope: tl.constexpr, semantic: tl.constexpr):
    """Lane 0 of the warp adds ``value``; every lane gets the old value."""
    _laneid = laneid()
    x = tl.cast(0, barrier_ptr.dtype.element_ty)
    if _laneid == 0:
        x = atomic_add(barrier_ptr, value, scope, semantic)
    return __shfl_sync(0xFFFFFFFF, x, 0)


# ---------------------------------------------------------------------------------------------
# waits: the device ABI's one wait


@tlc.builtin
def _wait_until_eq(ptr, value, _semantic=None):
    what = "language_extra.wait_eq"
    p = _semantic.to_tensor(ptr)
    elem, _ = dlcore._signal_width(p, what)
    dlcore._require_scalar(p, what, "barrier_ptr")
    v = _semantic.cast(_semantic.to_tensor(_u(value)), elem)
    args = [_semantic.cast(p, tl.int64), _semantic.cast(_semantic.to_tensor(0), tl.int32), v,
            _semantic.cast(_semantic.to_tensor(-1), tl.int64)]  # CMP_EQ, the runtime's budget
    return dlcore._extern(f"tdist_{elem.name}_wait_until_i64", args, [tl.int64, tl.int32, elem, tl.int64], elem,
                          _semantic, is_pure=False)


@tlc.builtin
def _check_scope(scope, _semantic=None):
    _pick(scope, _SCOPES, "wait_eq", "scope")


@triton.jit
def wait_eq(barrier_ptr, thread_idx, value, scope: tl.constexpr = "gpu"):
    """Thread ``thread_idx == 0`` waits until ``*barrier_ptr == value`` (acquire at system scope,
    which covers "gpu"), then the program joins. The wait is the device ABI's one wait
    (``tdist_<T>_wait_until_i64``, T = int32 / int64 / uint64): bounded by the runtime's budget,
    ended by a recorded fault, and the program stops with the fault record when it gives up."""
    _check_scope(scope)
    if thread_idx == 0:
        _wait_until_eq(barrier_ptr, value)
    __syncthreads()


# ---------------------------------------------------------------------------------------------
# warp shuffles and votes


def _shfl(mode, mask, value, lane, clamp, what, _semantic):
    _front(what, _semantic)
    v = _semantic.to_tensor(_u(value))
    elem = v.type.scalar
    bits = elem.primitive_bitwidth
    if bits not in (32, 64):
        raise DistributedError(f"language_extra.{what}: value must be 32- or 64-bit, got {elem}")
    m = _semantic.cast(_semantic.to_tensor(_u(mask)), tl.int32)
    b = _semantic.cast(_semantic.to_tensor(_u(lane)), tl.int32)
    x = _semantic.bitcast(v, _uint(bits)) if elem != _uint(bits) else v
    if bits == 32:
        out = _asm(f"shfl.sync.{mode}.b32 $0, $1, $2, {clamp}, $3;", "=r,r,r,r", [x, b, m], tl.uint32, _semantic)
    else:
        out = _asm("{ .reg .b32 lo, hi; mov.b64 {lo, hi}, $1; "
                   f"shfl.sync.{mode}.b32 lo, lo, $2, {clamp}, $3; shfl.sync.{mode}.b32 hi, hi, $2, {clamp}, $3; "
                   "mov.b64 $0, {lo, hi}; }", "=l,l,r,r", [x, b, m], tl.uint64, _semantic)
    return _from_bits(out, elem, _semantic)


@tlc.builtin
def __shfl_sync(mask, value, laneid, _semantic=None):
    """The value of lane ``laneid`` (``shfl.sync.idx``); 32- or 64-bit values."""
    return _shfl("idx", mask, value, laneid, 31, "__shfl_sync", _semantic)


@tlc.builtin
def __shfl_up_sync(mask, value, delta, _semantic=None):
    """The value of lane ``laneid - delta`` (``shfl.sync.up``; lanes below ``delta`` keep theirs)."""
    return _shfl("up", mask, value, delta, 0, "__shfl_up_sync", _semantic)


@tlc.builtin
def __shfl_down_sync(mask, value, delta, _semantic=None):
    """The value of lane ``laneid + delta`` (``shfl.sync.down``)."""
    return _shfl("down", mask, value, delta, 31, "__shfl_down_sync", _semantic)


@tlc.builtin
def __shfl_xor_sync(mask, value, delta, _semantic=None):
    """The value of lane ``laneid ^ delta`` (``shfl.sync.bfly``)."""
    return _shfl("bfly", mask, value, delta, 31, "__shfl_xor_sync", _semantic)


# Triton-distributed's names (32-bit values)
__shfl_sync_i32 = __shfl_sync
__shfl_up_sync_i32 = __shfl_up_sync
__shfl_down_sync_i32 = __shfl_down_sync
__shfl_xor_sync_i32 = __shfl_xor_sync


@tlc.builtin
def __ballot_sync(mask, predicate, _semantic=None):
    """Bit i set when lane i of ``mask`` has a nonzero ``predicate`` (``vote.sync.ballot``)."""
    _front("__ballot_sync", _semantic)
    pred = _semantic.cast(_semantic.to_tensor(_u(predicate)), tl.int32)
    m = _semantic.cast(_semantic.to_tensor(_u(mask)), tl.int32)
    return _asm("{ .reg .pred p; setp.ne.b32 p, $1, 0; vote.sync.ballot.b32 $0, p, $2; }", "=r,r,r", [pred, m],
                tl.int32, _semantic)


# ---------------------------------------------------------------------------------------------
# pack / unpack (bit concatenation; no PTX needed: the compiler makes one mov of it)


def _values(src, what):
    src = _u(src)
    if isinstance(src, tlc.tuple):
        return list(src.values)
    if isinstance(src, (list, tuple)):
        return list(src)
    raise DistributedError(f"language_extra.{what}: src must be a tuple of scalars (tdist has no SIMT vector type), "
                           f"got {type(src).__name__}")


def _dtype(t, what):
    t = _u(t)
    if not isinstance(t, tl.dtype) or not (t.is_int() or t.is_floating()):
        raise DistributedError(f"language_extra.{what}: dst_type must be an integer or float dtype, got {t!r}")
    return t


@tlc.builtin
def pack(src, dst_type, _semantic=None):
    """The bits of the scalars ``src`` (element 0 lowest) as one value of ``dst_type``, whose width
    must be their total width."""
    what = "pack"
    _front(what, _semantic)
    dst_type = _dtype(dst_type, what)
    vals = [_semantic.to_tensor(_u(v)) for v in _values(src, what)]
    total = sum(v.type.scalar.primitive_bitwidth for v in vals)
    nbits = dst_type.primitive_bitwidth
    if total != nbits or nbits not in (16, 32, 64):
        raise DistributedError(f"language_extra.{what}: the values have {total} bits, {dst_type} has {nbits}")
    acc, shift = None, 0
    for v in vals:
        w = v.type.scalar.primitive_bitwidth
        bits_v = _semantic.bitcast(v, _uint(w)) if v.type.scalar != _uint(w) else v
        wide = _semantic.cast(bits_v, _uint(nbits))
        if shift:
            wide = _semantic.shl(wide, _semantic.cast(_semantic.to_tensor(shift), _uint(nbits)))
        acc = wide if acc is None else _semantic.or_(acc, wide)
        shift += w
    return _from_bits(acc, dst_type, _semantic)


@tlc.builtin
def pack_b32_v2(val0, val1, _semantic=None):
    """Two 32-bit values as one uint64 (``val0`` low)."""
    return pack(tlc.tuple([_semantic.to_tensor(_u(val0)), _semantic.to_tensor(_u(val1))]), tl.uint64,
                _semantic=_semantic)


@tlc.builtin
def unpack(src, dst_type, _semantic=None):
    """The bits of ``src`` as a tuple of ``dst_type`` values (element 0 from the lowest bits)."""
    what = "unpack"
    _front(what, _semantic)
    dst_type = _dtype(dst_type, what)
    v = _semantic.to_tensor(_u(src))
    sbits, dbits = v.type.scalar.primitive_bitwidth, dst_type.primitive_bitwidth
    if sbits % dbits or dbits not in (8, 16, 32, 64):
        raise DistributedError(f"language_extra.{what}: {v.type.scalar} does not split into {dst_type} values")
    x = _semantic.bitcast(v, _uint(sbits)) if v.type.scalar != _uint(sbits) else v
    out = []
    for i in range(sbits // dbits):
        part = x if i == 0 else _semantic.lshr(x, _semantic.cast(_semantic.to_tensor(i * dbits), _uint(sbits)))
        out.append(_from_bits(_semantic.cast(part, _uint(dbits)), dst_type, _semantic))
    return tlc.tuple(out)


__all__ = [
    "tid", "ntid", "laneid", "smid", "num_warps", "num_threads", "threads_per_warp", "globaltimer",
    "globaltimer_lo", "globaltimer_hi", "__syncthreads", "__syncwarp", "membar", "fence", "__fence", "ld",
    "ld_acquire", "ld_b32", "st", "st_b32", "atomic_add", "atomic_cas", "red_release", "arrive_inc",
    "atomic_add_per_warp", "wait_eq", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
    "__shfl_sync_i32", "__shfl_up_sync_i32", "__shfl_down_sync_i32", "__shfl_xor_sync_i32", "__ballot_sync",
    "pack", "pack_b32_v2", "unpack",
]
