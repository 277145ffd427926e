"""What the two overlap GEMMs (``ag_gemm``, ``gemm_rs``) share: the Triton GEMM's tile order and
k loop (device), its block configuration, and the cuBLAS forms' GEMM streams (host)."""
import functools

import triton
import triton.language as tl


@triton.jit
def tile_of(pid, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """Grouped order (GROUP_M m-tiles per column sweep) so consecutive programs share b in L2."""
    width = GROUP_M * tiles_n
    group = pid // width
    first_m = group * GROUP_M
    gsize = tl.minimum(tiles_m - first_m, GROUP_M)
    tm = first_m + (pid % width) % gsize
    tn = (pid % width) // gsize
    return tm, tn


@triton.jit
def k_loop(a_ptrs, b_ptrs, nmask, K, stride_ak, stride_bk,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """fp32 accumulator of one output tile: a_ptrs (BLOCK_M, BLOCK_K) and b_ptrs (BLOCK_K, BLOCK_N)
    at k = 0, K masked, the b columns masked by ``nmask``."""
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kmask = rk < K - k0
        a = tl.load(a_ptrs, mask=kmask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=kmask[:, None] & nmask[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    return acc


@triton.jit
def k_loop_tma(a_desc, b_desc, row0, col0, K,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """fp32 accumulator of the output tile at (row0, col0) from tensor descriptors (TMA loads; rows,
    columns and k past the tensors read as zero)."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        acc = tl.dot(a_desc.load([row0, k]), b_desc.load([k, col0]), acc)
    return acc


TILE_LOADS = ("auto", "tma", "pointer")


@functools.lru_cache(maxsize=None)
def _tma_capable(device_index):
    """Compute capability >= 9 and a Triton with host tensor descriptors (asked once per device)."""
    import torch
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: F401
    except ImportError:
        return False
    return torch.cuda.get_device_capability(device_index)[0] >= 9


def use_tma(dt, *tensors):
    """Whether the Triton GEMMs load their tiles with TMA: 16-bit dtypes on a GPU of compute capability
    9 or newer, with Triton's tensor descriptors, every operand 16-byte aligned with a unit last stride
    and 16-byte row strides. ``TDIST_TRITON_GEMM_LOADS`` = pointer / tma / auto (the default) forces or
    frees the choice ("tma" where the operands do not allow it is an error)."""
    import os
    import torch
    mode = os.environ.get("TDIST_TRITON_GEMM_LOADS", "auto")
    if mode not in TILE_LOADS:
        raise ValueError(f"TDIST_TRITON_GEMM_LOADS must be one of {TILE_LOADS}, got {mode!r}")
    if mode == "pointer":
        return False
    ok = dt in ("float16", "bfloat16") and _tma_capable(torch.device(tensors[0].device).index or 0)
    for t in tensors:
        es = t.element_size()
        ok = ok and t.stride(-1) == 1 and t.data_ptr() % 16 == 0 and all((s * es) % 16 == 0 for s in t.stride()[:-1])
    if mode == "tma" and not ok:
        raise ValueError("TDIST_TRITON_GEMM_LOADS=tma: these operands cannot be loaded with TMA (16-bit dtype, "
                         "compute capability >= 9, 16-byte aligned, unit last stride, 16-byte row strides)")
    return ok


def descriptor(t, block):
    """Triton's host tensor descriptor of ``t`` (2-D) with box ``block``."""
    from triton.tools.tensor_descriptor import TensorDescriptor
    return TensorDescriptor.from_tensor(t, list(block))


def gemm_cfg(dt):
    """Block configuration and launch options of the Triton GEMMs for dtype name ``dt``."""
    if dt == "float32":
        return dict(BLOCK_M=128, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=3)
    return dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3)


def compile_cfg(dtype):
    """(blocks, options) of ``gemm_cfg`` for the compile cases' dtype names (fp16, bf16, fp32)."""
    cfg = gemm_cfg({"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}[dtype])
    opts = {k: cfg.pop(k) for k in ("num_warps", "num_stages")}
    return cfg, opts


class GemmStreams:
    """The cuBLAS forms' piecewise GEMMs, issued round-robin on ``n`` streams (the current one and a
    side stream): a piece's last, partly filled wave of tiles then shares the GPU with the next
    piece's first wave instead of leaving SMs idle. ``stream(i)`` is piece i's stream; ``join()``
    makes the current stream wait for all of them."""

    def __init__(self, n):
        import torch
        from ._resources import RESOURCES
        self.main = torch.cuda.current_stream()
        self.list = [self.main] + ([RESOURCES.stream("gemm")] if n == 2 else [])
        for st in self.list[1:]:
            st.wait_stream(self.main)

    def stream(self, i):
        return self.list[i % len(self.list)]

    def join(self):
        for st in self.list[1:]:
            self.main.wait_stream(st)
