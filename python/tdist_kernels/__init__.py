"""tdist_kernels: communication and overlap kernels in Triton on the tdist front end (dl.*).

Modules: ``reverse_a2a`` (seed 002's three variants), ``collectives`` (dispatch all-to-all,
all-reduce one-shot / two-shot / ring), ``overlap`` (AG + GEMM, GEMM + RS), ``ops`` (torch-callable
layers that validate inputs and own their symmetric buffers). Importing the kernels needs Triton
only; ``ops`` needs torch and an initialised tdist (CUDA backend) when called.
"""
from ._common import KernelArgError  # noqa: F401


# Kernels outside the half-resident grid rule of ops.*_grid: no program waiting for another of its
# launch (the direct all-to-alls: reverse_a2a.direct_grid, a few programs per SM looping over
# tiles; GEMM+RS's GEMM: one program per tile), or a grid with its own rule (AG+GEMM:
# ops.ag_gemm_grid, one program per SM of the share but a few).
OWN_GRID_RULE = ("reverse_a2a_direct", "dispatch_a2a_direct", "ag_gemm", "gemm_rs")


def all_compile_cases(dtype="fp16"):
    """(name, jit function, signature, constexprs, options) of every kernel, for ahead-of-time compile
    checks. Unit strides are constexprs (Triton specialises an integer argument equal to 1)."""
    from . import collectives, overlap, reverse_a2a
    cases = reverse_a2a.compile_cases(dtype) + collectives.compile_cases(dtype) + overlap.compile_cases(dtype)
    return [tuple(c) + ({},) * (5 - len(c)) for c in cases]


def runtime_attrs(fn, sig, constexprs):
    """The divisibility Triton's launcher gives at run time when every pointer is 16-byte aligned and
    every specialised integer a multiple of 16 (the aligned case), for ahead-of-time compiles."""
    dns = {fn.arg_names[d] if isinstance(d, int) else d for d in (getattr(fn, "do_not_specialize", ()) or ())}
    return {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names)
            if a in sig and a not in constexprs and a not in dns and (sig[a].startswith("*") or sig[a] == "i32")}
