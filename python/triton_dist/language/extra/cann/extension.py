"""Portable subset of the Triton-Ascend language extensions (seed 004, 3.1.1 and 3.2.3): one kernel
source for CUDA kernels on stock Triton and for triton-ascend. Ascend code imports them from
``triton.language.extra.cann.extension``; here they live at ``triton_dist.language.extra.cann.extension``.
Under triton-ascend (Ascend, and CPU ranks, which run the Ascend lowering) each call is triton-ascend's
own ``tl.<name>``; ``sub_vec_id()``/``sub_vec_num()`` are 0/1 there too (tdist launches one program per
vector core, as seed 002's MTE kernel does).

Mapping on a GPU:

* ``extract_slice`` / ``insert_slice`` / ``get_element``: offsets, sizes and strides are compile-time
  constants; implemented as one-hot selections: a broadcast compare against the wanted indices and
  a select-reduction (``_select``), then ``tl.where`` for the insert. Exact (values are picked, never
  combined arithmetically). ``tl.gather`` is not used: Triton 3.6's
  TritonGPUOptimizeThreadLocality pass fails on the gathers these ops need.
* ``sub_vec_id()`` / ``sub_vec_num()``: an Ascend AI core has 2 vector sub-blocks; on a GPU every
  program is one vector core, so ``sub_vec_num() == 1`` and ``sub_vec_id() == 0``. Launch twice as
  many programs to get the Ascend kernel's number of vector cores.
* ``sync_block_set(sender, receiver, event_id, flags=...)`` / ``sync_block_wait(...)``: an event
  between programs of one launch, through an int32 ``flags`` array in global memory (one 64-byte slot
  per event id, zeroed before the launch), release / acquire at GPU scope. ``sender``/``receiver``
  (Ascend's "cube"/"vector") are accepted for compatibility.
* ``sync_block_all(mode, event_id, flags=...)``: a barrier over every program of the launch (one
  arrival per program on word 0 of the event's slot, the last arrival bumps the generation in word
  1), reusable within the launch. Every program must be co-resident (size the grid to the SMs).
* The events are the device ABI's (``tdistx_event_set_i64`` / ``tdistx_event_wait_i64`` /
  ``tdistx_event_all_i64`` in include/tdist/NVIDIA/device.cuh), and their waits are its one wait:
  bounded by the runtime's budget (``TDIST_WAIT_TIMEOUT_MS``), ended by a recorded fault; on either
  the fault record is printed and the program traps, so the host sees a launch failure instead of a
  hang.
* ``compile_hint``: accepted and ignored (no GPU meaning).
"""
import triton
import triton.language as tl
from triton.language import core as tlc

from ... import core as dlcore
from ...core import DistributedError


def _native(name, *args, _builder):
    """triton-ascend (Triton 3.2 front end): its own op of the same name (``tl.<name>``), which its
    compiler lowers to HIVM (block events become ``hivm.hir.sync_block_*``; ``flags`` is a GPU-only
    argument: on Ascend an event is a hardware flag)."""
    return getattr(tl, name)(*args, _builder=_builder)


def _consts(x, what, argname):
    x = tlc._unwrap_if_constexpr(x)
    vals = [tlc._unwrap_if_constexpr(v) for v in (x if isinstance(x, (tuple, list, tlc.tuple)) else [x])]
    if not all(isinstance(v, int) for v in vals):
        raise DistributedError(f"{what}: {argname} must be compile-time integers, got {x!r}")
    return vals


def _axis_index(shape, axis, _semantic):
    """int32 tensor of ``shape`` whose value is the coordinate along ``axis``."""
    r = _semantic.arange(0, shape[axis])
    for d in range(len(shape)):
        if d != axis:
            r = _semantic.expand_dims(r, d)
    return _semantic.broadcast_impl_shape(r, list(shape))


@triton.jit
def _pick(a, a_hit, b, b_hit):
    return tl.where(a_hit != 0, a, b), a_hit | b_hit


def _select(x, d, idx, _semantic, _generator):
    """``y[..., i, ...] = x[..., idx[i], ...]`` along axis ``d``; ``idx`` is a 1-D int32 tensor whose
    values lie in ``[0, x.shape[d])``. Broadcast ``x`` to ``[..., m, n, ...]``, mark the wanted
    element of every row, and reduce over ``n`` keeping the marked value."""
    shape = list(x.type.shape)
    n, m, rank = shape[d], idx.type.shape[0], len(shape)
    tgt = shape[:d] + [m, n] + shape[d + 1:]
    xe = _semantic.broadcast_impl_shape(_semantic.expand_dims(x, d), tgt)
    want = _semantic.broadcast_impl_shape(_semantic.reshape(idx, [1] * d + [m] + [1] * (rank - d), False), tgt)
    have = _semantic.broadcast_impl_shape(
        _semantic.reshape(_semantic.arange(0, n), [1] * (d + 1) + [n] + [1] * (rank - d - 1), False), tgt)
    hit = _semantic.cast(_semantic.equal(want, have), tl.int32)
    picked, _ = tlc.reduce((xe, hit), d + 1, _pick, _semantic=_semantic, _generator=_generator)
    return picked


def _check(full, offsets, sizes, strides, what):
    shape = list(full.type.shape)
    if not (len(offsets) == len(sizes) == len(strides) == len(shape)):
        raise DistributedError(f"{what}: offsets/sizes/strides need one entry per dimension of a rank-{len(shape)} "
                               f"tensor, got {len(offsets)}/{len(sizes)}/{len(strides)}")
    for d, (o, s, st) in enumerate(zip(offsets, sizes, strides)):
        if st < 1 or o < 0 or s < 1 or o + (s - 1) * st >= shape[d]:
            raise DistributedError(f"{what}: dimension {d}: offset {o}, size {s}, stride {st} leave [0, {shape[d]})")
    return shape


@tlc.builtin
def extract_slice(full, offsets, sizes, strides, _semantic=None, _generator=None, _builder=None):
    """``full[o0 : o0 + s0*st0 : st0, ...]`` as a tensor of shape ``sizes`` (powers of two)."""
    if _builder is not None:
        return _native("extract_slice", full, offsets, sizes, strides, _builder=_builder)
    what = "extract_slice"
    offsets, sizes, strides = (_consts(v, what, n) for v, n in ((offsets, "offsets"), (sizes, "sizes"),
                                                                (strides, "strides")))
    full = _semantic.to_tensor(full)
    shape = _check(full, offsets, sizes, strides, what)
    out = full
    for d in range(len(shape)):
        idx = _semantic.add(_semantic.mul(_semantic.arange(0, sizes[d]), strides[d], True), offsets[d], True)
        out = _select(out, d, idx, _semantic, _generator)
    return out


@tlc.builtin
def insert_slice(full, sub, offsets, sizes, strides, _semantic=None, _generator=None, _builder=None):
    """``full`` with the window (offsets, sizes, strides) replaced by ``sub`` (of shape ``sizes``)."""
    if _builder is not None:
        return _native("insert_slice", full, sub, offsets, sizes, strides, _builder=_builder)
    what = "insert_slice"
    offsets, sizes, strides = (_consts(v, what, n) for v, n in ((offsets, "offsets"), (sizes, "sizes"),
                                                                (strides, "strides")))
    full = _semantic.to_tensor(full)
    sub = _semantic.to_tensor(sub)
    shape = _check(full, offsets, sizes, strides, what)
    if list(sub.type.shape) != list(sizes):
        raise DistributedError(f"{what}: sub has shape {list(sub.type.shape)}, sizes say {list(sizes)}")
    sub = _semantic.cast(sub, full.type.scalar)
    # Spread sub over full's shape: position p along d takes sub's element clamp((p - o) / st).
    out = sub
    for d in range(len(shape)):
        rel = _semantic.sub(_semantic.arange(0, shape[d]), offsets[d], True)
        k = _semantic.floordiv(rel, strides[d]) if strides[d] > 1 else rel
        k = _semantic.maximum(_semantic.minimum(k, _semantic.to_tensor(sizes[d] - 1), tl.PropagateNan.NONE),
                              _semantic.to_tensor(0), tl.PropagateNan.NONE)
        out = _select(out, d, k, _semantic, _generator)
    mask = None
    for d in range(len(shape)):
        pos = _axis_index(shape, d, _semantic)
        rel = _semantic.sub(pos, offsets[d], True)
        inside = _semantic.logical_and(
            _semantic.greater_equal(rel, 0),
            _semantic.less_than(rel, (sizes[d] - 1) * strides[d] + 1))
        if strides[d] > 1:
            inside = _semantic.logical_and(inside, _semantic.equal(_semantic.mod(rel, strides[d]), 0))
        mask = inside if mask is None else _semantic.logical_and(mask, inside)
    return _semantic.where(mask, out, full)


@tlc.builtin
def get_element(src, offset, _semantic=None, _generator=None, _builder=None):
    """The scalar ``src[offset]`` (``offset``: one compile-time integer per dimension)."""
    if _builder is not None:
        return _native("get_element", src, offset, _builder=_builder)
    what = "get_element"
    offset = _consts(offset, what, "offset")
    src = _semantic.to_tensor(src)
    shape = list(src.type.shape)
    if len(offset) != len(shape) or any(o < 0 or o >= n for o, n in zip(offset, shape)):
        raise DistributedError(f"{what}: offset {offset} is outside a tensor of shape {shape}")
    hit = None
    for d in range(len(shape)):
        eq = _semantic.equal(_axis_index(shape, d, _semantic), offset[d])
        hit = eq if hit is None else _semantic.logical_and(hit, eq)
    total = 1
    for n in shape:
        total *= n
    # The element's bits, zero elsewhere, OR-reduced: one single-operand reduction, exact for every
    # value (NaN payloads and -0.0 included). A (value, hit) pair reduction would depend on Triton
    # reordering both operands of the reshape the same way, which it does not promise.
    elem = src.type.scalar
    is_bool = elem.primitive_bitwidth == 1
    x = _semantic.cast(src, tl.int8) if is_bool else src
    ity = {8: tl.int8, 16: tl.int16, 32: tl.int32, 64: tl.int64}[x.type.scalar.primitive_bitwidth]
    xi = _semantic.bitcast(x, ity) if x.type.scalar != ity else x
    masked = _semantic.where(hit, xi, _semantic.full(shape, 0, ity))
    flat = _semantic.reshape(masked, [total], True)
    bits = tlc.reduce(flat, 0, _bit_or, _semantic=_semantic, _generator=_generator)
    value = _semantic.bitcast(bits, x.type.scalar) if x.type.scalar != ity else bits
    return _semantic.cast(value, elem) if is_bool else value


@triton.jit
def _bit_or(a, b):
    return a | b


@tlc.builtin
def sub_vec_id(_semantic=None, _builder=None):
    """0: a program is one vector core, on a GPU and in tdist's Ascend launches (see the module docstring)."""
    return tl.constexpr(0)


@tlc.builtin
def sub_vec_num(_semantic=None, _builder=None):
    """1: a program is one vector core, on a GPU and in tdist's Ascend launches (see the module docstring)."""
    return tl.constexpr(1)


@tlc.builtin
def compile_hint(ptr, hint_name, hint_val=None, _semantic=None, _builder=None):
    """Accepted and ignored on GPUs (Ascend compiler hints have no GPU meaning); triton-ascend's own on Ascend."""
    if _builder is not None:
        return _native("compile_hint", ptr, hint_name, hint_val, _builder=_builder)
    return None


def _event_set(slot, _semantic):
    dlcore._extern("tdistx_event_set_i64", [slot], [tl.int64], tl.int32, _semantic, is_pure=False)


def _event_wait(slot, _semantic):
    dlcore._extern("tdistx_event_wait_i64", [slot, _semantic.cast(_semantic.to_tensor(-1), tl.int64)],
                   [tl.int64, tl.int64], tl.int32, _semantic, is_pure=False)


@tlc.builtin
def sync_block_set(sender, receiver, event_id, flags=None, _semantic=None, _generator=None, _builder=None):
    """Signal event ``event_id`` (a counting event: each set is consumed by one wait)."""
    if _builder is not None:
        return _native("sync_block_set", sender, receiver, event_id, _builder=_builder)
    _event_set(_slot("sync_block_set", event_id, flags, _semantic), _semantic)
    return None


@tlc.builtin
def sync_block_wait(sender, receiver, event_id, flags=None, _semantic=None, _generator=None, _builder=None):
    """Wait for (and consume) one set of event ``event_id``."""
    if _builder is not None:
        return _native("sync_block_wait", sender, receiver, event_id, _builder=_builder)
    _event_wait(_slot("sync_block_wait", event_id, flags, _semantic), _semantic)
    return None


def _slot(what, event_id, flags, _semantic):
    if flags is None:
        raise DistributedError(f"{what}: on GPUs events live in memory: pass flags=<int32 pointer, 16 int32 per event "
                               "id, zeroed before the launch>")
    f = _semantic.to_tensor(flags)
    if not (f.type.scalar.is_ptr() and f.type.scalar.element_ty == tl.int32) or f.type.is_block():
        raise DistributedError(f"{what}: flags must be a scalar pointer to int32, got {f.type}")
    ev = _semantic.to_tensor(tlc._unwrap_if_constexpr(event_id))
    slot = _semantic.add(f, _semantic.mul(_semantic.cast(ev, tl.int32), 16, True), True)
    return _semantic.cast(slot, tl.int64)


@tlc.builtin
def sync_block_all(mode, event_id, flags=None, _semantic=None, _generator=None, _builder=None):
    """Barrier over every program of the launch (``mode`` accepted for compatibility). Uses the
    event's slot in ``flags`` (arrival count and generation; zeroed before the launch, reusable
    within it). Every program must be co-resident, or the barrier waits for programs that never
    start and traps at the wait budget."""
    if _builder is not None:
        return _native("sync_block_all", mode, event_id, _builder=_builder)
    what = "sync_block_all"
    slot = _slot(what, event_id, flags, _semantic)
    n = _semantic.mul(_semantic.mul(_semantic.num_programs(0), _semantic.num_programs(1), True),
                      _semantic.num_programs(2), True)
    last = _semantic.cast(_semantic.sub(n, 1, True), tl.int32)
    dlcore._extern("tdistx_event_all_i64", [slot, last, _semantic.cast(_semantic.to_tensor(-1), tl.int64)],
                   [tl.int64, tl.int32, tl.int64], tl.int32, _semantic, is_pure=False)
    return None
