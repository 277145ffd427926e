"""libshmem_device constants shared by every backend module (one definition).

Comparison codes and signal ops use tdist's values (include/tdist/abi.h); the ``NVSHMEM_*`` names
are aliases *by meaning*, so Triton-distributed code that names them works.
"""
import triton.language as tl
from triton.language import core as tlc

from .. import core as dlcore

CMP_EQ = tl.constexpr(0)
CMP_NE = tl.constexpr(1)
CMP_GT = tl.constexpr(2)
CMP_GE = tl.constexpr(3)
CMP_LT = tl.constexpr(4)
CMP_LE = tl.constexpr(5)
NVSHMEM_CMP_EQ, NVSHMEM_CMP_NE, NVSHMEM_CMP_GT = CMP_EQ, CMP_NE, CMP_GT
NVSHMEM_CMP_GE, NVSHMEM_CMP_LT, NVSHMEM_CMP_LE = CMP_GE, CMP_LT, CMP_LE
SIGNAL_SET = tl.constexpr(dlcore.SIGNAL_SET)
SIGNAL_ADD = tl.constexpr(dlcore.SIGNAL_ADD)
NVSHMEM_SIGNAL_SET, NVSHMEM_SIGNAL_ADD = SIGNAL_SET, SIGNAL_ADD


def sig_op_name(sig_op, what):
    """"set" / "add" for SIGNAL_SET / SIGNAL_ADD (or the names themselves); an error naming the value
    otherwise."""
    v = tlc._unwrap_if_constexpr(sig_op)
    names = {dlcore.SIGNAL_SET: "set", dlcore.SIGNAL_ADD: "add", "set": "set", "add": "add"}
    if v not in names:
        raise dlcore.DistributedError(f"{what}: sig_op={v!r} is not SIGNAL_SET (1) / SIGNAL_ADD (2)")
    return names[v]
