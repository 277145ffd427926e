"""AllGather + GEMM and GEMM + ReduceScatter with per-tile signals and swizzling (seed 003), in
Triton with dl.* and the copy engine.

On NVIDIA the communication that seed 003 gives to "comm cores" runs where it costs no SMs, and the
GEMM is an ordinary (non-persistent) Triton GEMM whose tiles wait for their data:

AG + GEMM: ``a`` (M, K) on every rank, ``b`` (K, N): ``c = all_gather(a) @ b``, (W * M, N).
  * On a side stream, for each chunk of ``chunk_m`` rows of the local ``a``: the copy engine puts it
    into the gather buffer ``[W * M, K]`` of this rank (first) and of every peer (rank + 1, ...), and
    a stream signal (``shmem.signal_op_on_stream``, no SM) sets slot ``(rank, chunk)`` at the target
    once the chunk has landed.
  * A persistent GEMM grid walks the output tiles in swizzled order: tile 0 holds the rank's own
    first row, so each rank starts on local data (read straight from ``a``, no wait) while the
    peers' rows arrive; a tile of other rows first waits (``dl.wait``) for the chunks of its first
    and last rows, then reads the gather buffer through ``dl.consume_token``.
  The copies are asked to run on a copy engine (no SM) and the signals are stream memory
  operations (no SM), but the driver only takes the copy-engine request as a hint: a
  device-to-device copy may run as an SM kernel. The grid therefore leaves SMs free
  (``ops.ag_gemm_grid``): waiting GEMM programs can never occupy every SM the copies need.

GEMM + RS: ``a`` (M, K) and ``b`` (K, N) on every rank (K-sharded): ``c_me = (sum_r a_r @ b_r)``
rows ``[me * M / W, (me + 1) * M / W)``, (M / W, N). M must be a multiple of W.
  * GEMM programs compute tiles of the partial product, owner by owner starting with the rank after
    this one (so the ranks write to different owners at any time); each tile is stored in fp32 into
    the owner's symmetric receive buffer ``[W, M / W, N]`` at slot ``rank`` straight from the
    epilogue, then fence + signal ``(tile, rank)`` at the owner.
  * reduce programs (a second, small persistent grid on a side stream, started with the GEMM) wait
    for all W signals of a local tile (one ``dl.wait(slot, W)``: the W slots are 64 bytes apart),
    sum the W partials in rank order in fp32 and store the tile in the output dtype. The GEMM never
    waits, so the reduce programs' waits always end.

Signals are set once per launch; the host protocol (zero, barrier, launch, barrier) resets them.
"""
import triton
import triton.language as tl
from triton.language import core as tlc

import triton_dist.language as dl

from ._common import SIG, cdiv, fence_sys


@triton.jit
def _tile_of(pid, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """Grouped order (GROUP_M m-tiles per column sweep) so consecutive programs share b in L2."""
    width = GROUP_M * tiles_n
    group = pid // width
    first_m = group * GROUP_M
    gsize = tl.minimum(tiles_m - first_m, GROUP_M)
    tm = first_m + (pid % width) % gsize
    tn = (pid % width) // gsize
    return tm, tn


@tlc.builtin
def _elem_bytes(p, _semantic=None, _builder=None):
    """Bytes per element of the pointer ``p`` (a constant), in either front end."""
    return tl.constexpr(tlc._unwrap_if_constexpr(p).dtype.element_ty.primitive_bitwidth // 8)


@triton.jit
def _k_loop(a_ptrs, b_ptrs, nmask, K, stride_ak, stride_bk,
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


@triton.jit(do_not_specialize=['rank', 'world'])
def ag_gemm_kernel(
    a_ptr, b_ptr, c_ptr, gather_ptr, sig_ptr,
    rank, world, M, N, K,
    stride_bk, stride_bn, stride_cm, stride_cn,
    CHUNK_M: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    # a and the gather buffer are contiguous (M, K) / (W * M, K); b and c may be strided
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    total_m = world * M
    tiles_m = tl.cdiv(total_m, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    n_chunks = tl.cdiv(M, CHUNK_M)
    for tile in range(pid, tiles_m * tiles_n, nprog):
        tm, tn = _tile_of(tile, tiles_m, tiles_n, GROUP_M)
        tm = (tm + (rank * M) // BLOCK_M) % tiles_m  # swizzle: tile 0 holds the own first row
        row0 = tm * BLOCK_M
        last = tl.minimum(row0 + BLOCK_M, total_m) - 1
        rm = row0 + tl.arange(0, BLOCK_M)
        rm = tl.where(rm < total_m, rm, total_m - 1)  # clamp instead of masking the rows of the loads
        rn = tn * BLOCK_N + tl.arange(0, BLOCK_N)
        nmask = rn < N
        rk = tl.arange(0, BLOCK_K)
        own = (row0 // M == rank) & (last // M == rank)
        # A tile of other ranks' rows waits for their chunk signals; the own rows are read in place.
        # Only a token leaves the if, and the own rows are addressed as an offset from the gather
        # buffer: a pointer that leaves an if/else crashes triton-ascend 3.2's triton-to-unstructure.
        tok = rank * 0
        if own == 0:
            src0 = row0 // M
            src1 = last // M
            tok1 = dl.wait(sig_ptr + (src0 * n_chunks + (row0 - src0 * M) // CHUNK_M) * SIG, 1, "gpu", "acquire",
                           waitValue=1)
            tok2 = dl.wait(sig_ptr + (src1 * n_chunks + (last - src1 * M) // CHUNK_M) * SIG, 1, "gpu",
                           "acquire", waitValue=1)
            tok = tok1 | tok2
        g = dl.consume_token(gather_ptr, tok)
        own64 = own.to(tl.int64)
        # elements from the gather buffer to a (both 16-byte aligned, so a multiple of 16 bytes)
        gap = a_ptr.to(tl.int64, bitcast=True) - gather_ptr.to(tl.int64, bitcast=True)
        to_a = tl.multiple_of(own64 * (gap // _elem_bytes(a_ptr)), 16 // _elem_bytes(a_ptr))
        a_rows = (rm - own.to(tl.int32) * (rank * M)).to(tl.int64)
        a_ptrs = g + to_a + a_rows[:, None] * K + rk[None, :]
        b_ptrs = b_ptr + rk.to(tl.int64)[:, None] * stride_bk + rn[None, :] * stride_bn
        acc = _k_loop(a_ptrs, b_ptrs, nmask, K, 1, stride_bk, BLOCK_M, BLOCK_N, BLOCK_K)
        c = acc.to(c_ptr.dtype.element_ty)
        rm_s = row0 + tl.arange(0, BLOCK_M)
        tl.store(c_ptr + rm_s.to(tl.int64)[:, None] * stride_cm + rn[None, :] * stride_cn, c,
                 mask=(rm_s < total_m)[:, None] & nmask[None, :])


def ag_gemm_signal_slots(world, M, chunk_m):
    return world * cdiv(M, chunk_m)


@triton.jit(do_not_specialize=['rank', 'world'])
def gemm_rs_kernel(
    a_ptr, b_ptr, recv_ptr, sig_ptr,
    rank, world, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    """One program per (owner, tile): the fp32 partial goes straight into the owner's receive slot."""
    pid = tl.program_id(0)
    mloc = M // world
    tiles_m = tl.cdiv(mloc, BLOCK_M)  # per owner
    tiles_n = tl.cdiv(N, BLOCK_N)
    local_tiles = tiles_m * tiles_n
    slab = (mloc * N).to(tl.int64)  # one partial [M / W, N] in the receive buffer
    owner = (rank + 1 + pid // local_tiles) % world  # the next rank first; the own rows last
    tm, tn = _tile_of(pid % local_tiles, tiles_m, tiles_n, GROUP_M)
    rm = tm * BLOCK_M + tl.arange(0, BLOCK_M)
    rm_l = tl.where(rm < mloc, rm, mloc - 1)
    rn = tn * BLOCK_N + tl.arange(0, BLOCK_N)
    nmask = rn < N
    rk = tl.arange(0, BLOCK_K)
    grow = (owner * mloc + rm_l).to(tl.int64)
    a_ptrs = a_ptr + grow[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk.to(tl.int64)[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = _k_loop(a_ptrs, b_ptrs, nmask, K, stride_ak, stride_bk, BLOCK_M, BLOCK_N, BLOCK_K)
    dst = dl.symm_at(recv_ptr, owner)
    tl.store(dst + rank * slab + rm.to(tl.int64)[:, None] * N + rn[None, :], acc,
             mask=(rm < mloc)[:, None] & (rn < N)[None, :])
    fence_sys()
    dl.notify(sig_ptr + ((tm * tiles_n + tn) * world + rank) * SIG, owner, 1)


@triton.jit(do_not_specialize=['rank', 'world'])
def rs_reduce_kernel(
    recv_ptr, c_ptr, sig_ptr,
    rank, world, M, N,
    stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, RED_M: tl.constexpr,
):
    """Persistent: tile after tile of the GEMM's tiling, wait for its W partials, sum, store."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    mloc = M // world
    tiles_m = tl.cdiv(mloc, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    slab = (mloc * N).to(tl.int64)
    for lt in range(pid, tiles_m * tiles_n, nprog):
        tm = lt // tiles_n
        tn = lt % tiles_n
        tok = dl.wait(sig_ptr + lt * world * SIG, world, "gpu", "acquire", waitValue=1)
        src = dl.consume_token(recv_ptr, tok)
        rn = tn * BLOCK_N + tl.arange(0, BLOCK_N)
        for m0 in range(0, BLOCK_M, RED_M):
            rm = tm * BLOCK_M + m0 + tl.arange(0, RED_M)
            mask = (rm < mloc)[:, None] & (rn < N)[None, :]
            offs = rm.to(tl.int64)[:, None] * N + rn[None, :]
            acc = tl.zeros((RED_M, BLOCK_N), dtype=tl.float32)
            for r in range(0, world):
                acc += tl.load(src + r * slab + offs, mask=mask, other=0.0)
            tl.store(c_ptr + rm.to(tl.int64)[:, None] * stride_cm + rn[None, :] * stride_cn,
                     acc.to(c_ptr.dtype.element_ty), mask=mask)


def gemm_rs_signal_slots(world, M, N, block_m, block_n):
    return cdiv(M // world, block_m) * cdiv(N, block_n) * world


def compile_cases(dtype="fp16"):
    p = f"*{dtype}"
    i = "i32"
    big = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}
    opts = {"num_warps": 8, "num_stages": 3}
    if dtype == "fp32":
        big = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}
    return [
        ("ag_gemm", ag_gemm_kernel,
         {"a_ptr": p, "b_ptr": p, "c_ptr": p, "gather_ptr": p, "sig_ptr": "*i64", "rank": i, "world": i, "M": i,
          "N": i, "K": i, "stride_bk": i, "stride_cm": i},
         dict(CHUNK_M=512, stride_bn=1, stride_cn=1, **big), opts),  # unit strides: as Triton specialises them
        ("gemm_rs", gemm_rs_kernel,
         {"a_ptr": p, "b_ptr": p, "recv_ptr": "*fp32", "sig_ptr": "*i64", "rank": i, "world": i,
          "M": i, "N": i, "K": i, "stride_am": i, "stride_bk": i},
         dict(stride_ak=1, stride_bn=1, **big), opts),
        ("rs_reduce", rs_reduce_kernel,
         {"recv_ptr": "*fp32", "c_ptr": p, "sig_ptr": "*i64", "rank": i, "world": i, "M": i, "N": i,
          "stride_cm": i},
         {"stride_cn": 1, "BLOCK_M": big["BLOCK_M"], "BLOCK_N": big["BLOCK_N"], "RED_M": 16}, {"num_warps": 4}),
    ]
