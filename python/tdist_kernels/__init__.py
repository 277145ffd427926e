"""tdist_kernels: communication and overlap kernels in Triton on the tdist front end (dl.*).

Modules: ``reverse_a2a`` (seed 002's three variants), ``collectives`` (dispatch all-to-all,
all-reduce one-shot / two-shot / ring), ``overlap`` (AG + GEMM, GEMM + RS), ``ops`` (torch-callable
layers that validate inputs and own their symmetric buffers). Importing the kernels needs Triton
only; ``ops`` needs torch and an initialised tdist (CUDA backend) when called.
"""
from ._common import KernelArgError  # noqa: F401


def all_compile_cases(dtype="fp16"):
    """(name, jit function, signature, constexprs) of every kernel, for ahead-of-time compile checks."""
    from . import collectives, overlap, reverse_a2a
    return reverse_a2a.compile_cases(dtype) + collectives.compile_cases(dtype) + overlap.compile_cases(dtype)
