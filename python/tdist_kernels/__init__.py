"""tdist_kernels: communication and overlap kernels in Triton on the tdist front end (dl.*).

One module per operation, each holding its kernels and its plan (buffers, grid, launch):

    all_to_all.py   reverse all-to-all (pipeline, bulk, wait_notify, direct) and dispatch (staged, direct)
    all_reduce.py   one_shot, two_shot, ring, one_shot_ll
    ag_gemm.py      AllGather + GEMM (cublas, cublas_whole, triton)
    gemm_rs.py      GEMM + ReduceScatter (cublas, cublas_ce, cublas_whole, triton)
    moe.py          MoE dispatch / combine (high_throughput, low_latency) and its MoeBuffer

and what they share: ``_common`` (device helpers: the waits, fences, grid barrier, epoch protocol,
bulk put; co-residency arithmetic), ``_gemm`` (the overlap GEMMs' tile loop, configuration and GEMM
streams), ``_resources`` (``RESOURCES``: the buffer caches, side streams, placement and SM budget;
the host protocols), ``_validate`` (argument checks). ``ops`` is the torch-facing API: it validates
and dispatches to the op modules' plans. A new operation is a new module of the same shape: its
kernels, its plan, its ``compile_cases`` (added to ``all_compile_cases`` below) and an entry in
``ops``. (MoE's kernels compile through ``moe.compile_cases``; ``layers`` holds the EPMoE layer over
``ops.moe_dispatch`` / ``ops.moe_combine``.)

Importing the kernels needs Triton only; ``ops`` needs torch and an initialised tdist (CUDA
backend) when called. The same kernel sources run on NVIDIA GPUs (stock Triton) and compile for
Ascend and CPU ranks (triton-ascend); docs/CONTRACT.md section 1 maps each op to its files per
platform.
"""
from ._common import KernelArgError  # noqa: F401


# Kernels outside the half-resident grid rule of the *_grid functions: no program waiting for another
# of its launch (the direct all-to-alls: all_to_all.direct_grid, a few programs per SM looping over
# tiles; GEMM+RS's GEMM: one program per tile, claimed by ticket, so that a program only ever waits
# for tiles held by running programs that do not wait), or a grid with its own rule (AG+GEMM:
# ag_gemm.ag_gemm_grid, one program per SM of the share but a few).
OWN_GRID_RULE = ("reverse_a2a_direct", "dispatch_a2a_direct", "ag_gemm", "gemm_rs", "ag_gemm_tma", "gemm_rs_tma")


def all_compile_cases(dtype="fp16"):
    """(name, jit function, signature, constexprs, options) of every kernel, for ahead-of-time compile
    checks. Unit strides are constexprs (Triton specialises an integer argument equal to 1)."""
    from . import ag_gemm, all_reduce, all_to_all, gemm_rs
    cases = []
    for op in (all_to_all, all_reduce, ag_gemm, gemm_rs):
        cases += op.compile_cases(dtype)
    return [tuple(c) + ({},) * (5 - len(c)) for c in cases]


def runtime_attrs(fn, sig, constexprs):
    """The divisibility Triton's launcher gives at run time when every pointer is 16-byte aligned and
    every specialised integer a multiple of 16 (the aligned case), for ahead-of-time compiles."""
    dns = {fn.arg_names[d] if isinstance(d, int) else d for d in (getattr(fn, "do_not_specialize", ()) or ())}
    return {(i,): [["tt.divisibility", 16]] for i, a in enumerate(fn.arg_names)
            if a in sig and a not in constexprs and a not in dns and (sig[a].startswith("*") or sig[a] == "i32")}
