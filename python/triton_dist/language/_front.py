"""One kernel source, two Triton front ends, every platform (docs/COMPILE.md).

tdist's builtins run under stock Triton 3.6 (builtins get ``_semantic=``) and under triton-ascend
3.2, which is built on Triton 3.2 (builtins get ``_builder=``). ``Front`` hides that difference
and says which lowering a call takes:

* ``ptx``: stock Triton compiling for CUDA; the primitives emit inline PTX and device-bitcode
  calls (``core.py``);
* ``marker``: triton-ascend (Ascend, and CPU ranks, which run the Ascend lowering); each primitive
  emits the marker call that ``device/dist_ops.def`` names, and tdist-opt raises it into the
  ``distributed`` dialect at the start of the "ttadapter" stage.

Any other target is refused with the primitive's name and the platform, never compiled wrongly.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import triton.language as tl
from triton.language import core as tlc

from tdist.errors import InvalidParam

MARKER_LIB = "libtdist_device"  # libname of dl.* markers
SHMEM_LIB = "libshmem_device"  # libname of libshmem_device calls on marker targets

# Enum values of the dialect (DistributedOps.td), carried as i32 constants by the markers.
SCOPE_CODES = {"gpu": 1, "cta": 2, "sys": 3, "system": 3}
SEMANTIC_CODES = {"relaxed": 1, "acquire": 2}
SIG_OP_CODES = {"set": 1, "add": 2}
COMM_SCOPE_CODES = {"gpu": 0, "intra_node": 1, "inter_node": 2}


class DistributedError(InvalidParam):
    """A dl.* / libshmem_device call was used with arguments or on a platform it does not accept."""


def _def_candidates():
    here = Path(__file__).resolve()
    yield here.parent / "dist_ops.def"  # installed package: copied next to this file
    yield here.parents[3] / "device" / "dist_ops.def"  # source checkout: python/triton_dist/language/


@lru_cache(maxsize=1)
def dist_ops():
    """``{op: (symbol, [operand names], pure)}`` read from ``device/dist_ops.def``, the table the
    compiler's raise pass includes (one list of names for both)."""
    for path in _def_candidates():
        if path.is_file():
            text = path.read_text()
            break
    else:
        raise FileNotFoundError("tdist: device/dist_ops.def not found (looked in "
                                + ", ".join(str(p) for p in _def_candidates()) + ")")
    table = {}
    for m in re.finditer(r'^TDIST_DIST_OP\((\w+),\s*(\w+),\s*"([^"]*)",\s*([01])\)', text, re.M):
        op, symbol, operands, pure = m.groups()
        table[op] = (symbol, [o for o in operands.split(",") if o], pure == "1")
    if not table:
        raise RuntimeError(f"tdist: no TDIST_DIST_OP entries in {path}")
    return table


def marker_symbol(op, suffix=""):
    """The marker symbol of dialect op ``op``; ``suffix`` selects the typed member of a family."""
    symbol = dist_ops()[op][0]
    if symbol.endswith("_"):
        if not suffix:
            raise AssertionError(f"{op}: the marker symbol {symbol}* needs a type suffix")
        return symbol + suffix
    return symbol


class Front:
    """The calling front end of one builtin call."""

    def __init__(self, what, _semantic=None, _builder=None):
        self.what = what
        self.semantic = _semantic
        self.builder = _builder
        if _semantic is not None:
            self.version = "3.6"
            self.platform = getattr(_semantic.builder.options, "backend_name", "unknown")
            self.lowering = "ptx" if self.platform == "cuda" else None
        elif _builder is not None:
            # triton-ascend: its options class is NPUOptions (Ascend); CPU ranks compile for it too.
            self.version = "3.2"
            self.platform = "ascend"
            self.lowering = "marker"
        else:
            raise DistributedError(f"{what}: call it from inside a @triton.jit kernel")
        if self.lowering is None:
            raise DistributedError(
                f"{what}: platform {self.platform!r} has no lowering in tdist (CUDA through stock Triton; Ascend "
                "and CPU ranks through triton-ascend)")

    # -- the few semantic operations the primitives need, in both front ends

    @property
    def kw(self):
        return {"_semantic": self.semantic} if self.semantic is not None else {"_builder": self.builder}

    def tensor(self, x):
        x = tlc._unwrap_if_constexpr(x)
        if self.semantic is not None:
            return self.semantic.to_tensor(x)
        return tl.semantic.to_tensor(x, self.builder)

    def cast(self, x, dtype):
        if self.semantic is not None:
            return self.semantic.cast(x, dtype)
        return tl.semantic.cast(x, dtype, self.builder)

    def i32(self, value):
        return self.cast(self.tensor(int(value)), tl.int32)

    def i64(self, value):
        return self.cast(self.tensor(int(value)), tl.int64)

    def extern(self, lib, symbol, args, arg_dtypes, ret_dtype, pure):
        return tlc.extern_elementwise(lib, "", list(args), {tuple(arg_dtypes): (symbol, ret_dtype)}, is_pure=pure,
                                      **self.kw)

    # -- marker calls (docs/COMPILE.md section 1)

    def scalar(self, x, argname):
        if x.type.is_block():
            raise DistributedError(
                f"{self.what}: {argname} is a block of shape {x.type.shape}; on {self.platform} tdist lowers only "
                "scalar operands here (translate a scalar base pointer, then add the tile's offsets)")
        return x

    def marker(self, op, args, arg_dtypes, ret_dtype, suffix=""):
        pure = dist_ops()[op][2]
        return self.extern(MARKER_LIB, marker_symbol(op, suffix), args, arg_dtypes, ret_dtype, pure)

    def ptr_as_i64(self, p, argname):
        if not p.type.scalar.is_ptr():
            raise DistributedError(f"{self.what}: {argname} must be a pointer, got {p.type}")
        return self.cast(self.scalar(p, argname), tl.int64)
