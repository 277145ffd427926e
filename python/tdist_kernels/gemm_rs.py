"""GEMM + ReduceScatter: ``a`` (M, K) and ``b`` (K, N) on every rank (K-sharded): ``c_me = (sum_r
a_r @ b_r)`` rows ``[me * M / W, (me + 1) * M / W)``, (M / W, N), M a multiple of W; the Triton
kernels (seed 003's per-tile form, the reduce passes of the cuBLAS forms) and the plans of every
form.

Forms (``ops.GEMM_RS_IMPLS``; ``ops`` picks one for "auto" by placement):

``cublas``
    Each owner's block of the partial product is multiplied (cuBLAS) straight into the owner's
    receive buffer through the peer mapping (``shmem.peer_tensor``), other owners first, then
    signalled by a stream write; the own block last; one pass (``sum_partials_kernel``) sums the W
    partials in fp32 once their signals are in.
``cublas_ce``
    Each owner's block is multiplied into a local staging buffer at full speed and pushed to the
    owner by the copy engine on a side stream (``shmem.putmem_on_stream``), overlapping the next
    block's GEMM, instead of the GEMM's epilogue storing over NVLink. ``gemm_streams=2``: the
    cuBLAS forms' GEMMs alternate between two streams.
``cublas_whole``
    One cuBLAS GEMM of the whole product into a symmetric buffer, a barrier, then one pass
    (``sum_peer_rows_kernel``) pulls this rank's block from every PE and sums it.
``triton``
    One Triton GEMM (tiles loaded by TMA where the GPU and operands allow, ``_gemm.use_tma``), one
    program per tile of the partial product, owner by owner starting with the rank after this one
    (so the ranks write to different owners at any time) and this rank's own block last:
      * a tile of another owner is stored in fp32 from the epilogue into the owner's symmetric
        receive buffer ``[W, M / W, N]`` at slot ``rank``, then fence + signal at the owner;
      * an own tile is the reduction (seed 003's consumer, in the producer's own epilogue): its
        partial goes into slot ``rank`` of the local buffer, the program waits for the tile's W - 1
        signals (one ``dl.wait``), sums the W partials in rank order in fp32 and stores the tile
        in c's dtype. The peers reach this rank's tiles before their own, so the wait mostly finds
        them done, and the sum runs on every SM of the GEMM rather than on a small side grid.
    Tiles are claimed through a ticket (``rs_claim``): a program holding an own tile, the only kind
    that waits, knows every tile before it is held by a running program that does not wait.

Signals are set once per call; seed 002's host protocol (``_resources.signal_round``) resets them.
"""
import triton
import triton.language as tl

import triton_dist.language as dl

from ._common import SIG, SIG_ELEMS, cdiv, cta_sync, fence_sys, team_pe
from ._gemm import GemmStreams, compile_cfg, descriptor, gemm_cfg, k_loop, k_loop_tma, tile_of, use_tma
from ._resources import RESOURCES, contiguous_out, signal_round, stream_barrier


# ---------------------------------------------------------------------------------------------
# the Triton form

RED_M = 32  # rows per step of an own tile's sum (RED_M x BLOCK_N fp32 per partial: 32 registers a thread at 8 warps)


@triton.jit
def rs_claim(sig_ptr, rank, world, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(owner, tm, tn) of the tile this program computes, claimed through the call's ticket (the slot
    after the tiles' signals, ``gemm_rs_signal_slots``) rather than taken from the program id.
    Tickets go out in the order the programs start. The own tiles are the last tickets, and only
    they wait. So when a program holds an own tile, every earlier ticket is held by a program that
    has started and never waits: a waiting program cannot keep a tile it waits for from running, on
    any grid, however many programs fit at once. Owners in the order rank + 1, rank + 2, ..., so the
    ranks write to different owners at any time and each reaches its own tiles last."""
    mloc = M // world
    tiles_m = tl.cdiv(mloc, BLOCK_M)  # per owner
    tiles_n = tl.cdiv(N, BLOCK_N)
    local_tiles = tiles_m * tiles_n
    t = tl.atomic_add(sig_ptr + local_tiles * (world - 1) * SIG, 1)  # int64
    # the owner step t // local_tiles as int32 by comparisons: triton-ascend 3.2 refuses to narrow
    j = rank * 0
    for k in range(1, world):
        j += (t >= k * local_tiles).to(tl.int32)
    owner = (rank + 1 + j) % world
    tm, tn = tile_of(t % local_tiles, tiles_m, tiles_n, GROUP_M)
    return owner, tm, tn


@triton.jit
def rs_finish(acc, recv_ptr, sig_ptr, c_ptr, owner, tm, tn, rank, world, pe0, pes, M, N, stride_cm, stride_cn,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, RED_M: tl.constexpr):
    """The epilogue of both GEMM kernels. The fp32 partial ``acc`` goes into slot ``rank`` of the
    owner's receive buffer. A tile of another owner then signals its slot there,
    ``(tile, (rank - owner - 1) mod W)``. An own tile waits for the W - 1 signals of the tile (one
    ``dl.wait``: the slots are 64 bytes apart), sums the W partials in rank order in fp32, RED_M
    rows at a time, and stores the result in c's dtype."""
    mloc = M // world
    lt = tm * tl.cdiv(N, BLOCK_N) + tn
    slab = (mloc * N).to(tl.int64)  # one partial [M / W, N] in the receive buffer
    rm = tm * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tn * BLOCK_N + tl.arange(0, BLOCK_N)
    nmask = rn < N
    dst = dl.symm_at(recv_ptr, team_pe(owner, pe0, pes))
    tl.store(dst + rank * slab + rm.to(tl.int64)[:, None] * N + rn[None, :], acc,
             mask=(rm < mloc)[:, None] & nmask[None, :])
    if owner != rank:
        fence_sys()
        dl.notify(sig_ptr + (lt * (world - 1) + (rank - owner - 1 + world) % world) * SIG,
                  team_pe(owner, pe0, pes), 1)
    else:
        cta_sync()  # every thread's share of the own partial is stored before any thread reads it back
        tok = rank * 0
        if world > 1:
            tok = dl.wait(sig_ptr + lt * (world - 1) * SIG, world - 1, "gpu", "acquire", waitValue=1,
                          slot_stride=SIG)
        src = dl.consume_token(recv_ptr, tok)
        for m0 in range(0, BLOCK_M, RED_M):
            rr = tm * BLOCK_M + m0 + tl.arange(0, RED_M)
            mask = (rr < mloc)[:, None] & nmask[None, :]
            offs = rr.to(tl.int64)[:, None] * N + rn[None, :]
            tot = tl.zeros((RED_M, BLOCK_N), dtype=tl.float32)
            for r in range(0, world):
                tot += tl.load(src + r * slab + offs, mask=mask, other=0.0)
            tl.store(c_ptr + rr.to(tl.int64)[:, None] * stride_cm + rn[None, :] * stride_cn,
                     tot.to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=['rank', 'world'])
def gemm_rs_kernel(
    a_ptr, b_ptr, recv_ptr, sig_ptr, c_ptr,
    rank, world, pe0, pes, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    RED_M: tl.constexpr,
):
    """One program per tile of the partial product (W * local tiles, claimed by ``rs_claim``); the
    epilogue is ``rs_finish``."""
    owner, tm, tn = rs_claim(sig_ptr, rank, world, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    mloc = M // world
    rm = tm * BLOCK_M + tl.arange(0, BLOCK_M)
    rm_l = tl.where(rm < mloc, rm, mloc - 1)
    rn = tn * BLOCK_N + tl.arange(0, BLOCK_N)
    nmask = rn < N
    rk = tl.arange(0, BLOCK_K)
    grow = (owner * mloc + rm_l).to(tl.int64)
    a_ptrs = a_ptr + grow[:, None] * stride_am + rk[None, :] * stride_ak
    b_ptrs = b_ptr + rk.to(tl.int64)[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = k_loop(a_ptrs, b_ptrs, nmask, K, stride_ak, stride_bk, BLOCK_M, BLOCK_N, BLOCK_K)
    rs_finish(acc, recv_ptr, sig_ptr, c_ptr, owner, tm, tn, rank, world, pe0, pes, M, N, stride_cm, stride_cn,
              BLOCK_M, BLOCK_N, RED_M)


@triton.jit(do_not_specialize=['rank', 'world'])
def gemm_rs_tma_kernel(
    a_desc, b_desc, recv_ptr, sig_ptr, c_ptr,
    rank, world, pe0, pes, M, N, K, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    RED_M: tl.constexpr,
):
    """``gemm_rs_kernel`` with its tiles loaded by TMA (CUDA, compute capability >= 9). A tile's rows
    past the owner's block read the next block's rows (or zeros past M): their results are not stored."""
    owner, tm, tn = rs_claim(sig_ptr, rank, world, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    row0 = (owner * (M // world) + tm * BLOCK_M).to(tl.int32)  # the ticket's tile is int64; TMA takes int32
    acc = k_loop_tma(a_desc, b_desc, row0, (tn * BLOCK_N).to(tl.int32), K, BLOCK_M, BLOCK_N, BLOCK_K)
    rs_finish(acc, recv_ptr, sig_ptr, c_ptr, owner, tm, tn, rank, world, pe0, pes, M, N, stride_cm, stride_cn,
              BLOCK_M, BLOCK_N, RED_M)


def gemm_rs_signal_slots(world, M, N, block_m, block_n):
    """Signal slots of the Triton form: W - 1 per local tile (one per peer), then the tile ticket."""
    return cdiv(M // world, block_m) * cdiv(N, block_n) * (world - 1) + 1


# ---------------------------------------------------------------------------------------------
# the reduce passes of the cuBLAS forms


@triton.jit
def sum_partials_kernel(part_ptr, out_ptr, world, n, BLOCK: tl.constexpr):
    """out[i] = sum over r (in rank order, fp32) of part[r * n + i]; contiguous, any float dtype."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for r in range(0, world):
        acc += tl.load(part_ptr + r * n + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=m)


@triton.jit(do_not_specialize=['rank', 'world'])
def sum_peer_rows_kernel(part_ptr, out_ptr, rank, world, pe0, pes, off, n, BLOCK: tl.constexpr):
    """out[i] = sum over PEs r (in rank order, fp32) of symmetric ``part`` on PE r at ``off + i``:
    the reduce half of GEMM+RS's whole form, pulling every PE's partial block straight from it."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for r in range(0, world):
        acc += tl.load(dl.symm_at(part_ptr, team_pe(r, pe0, pes)) + off + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=m)


# ---------------------------------------------------------------------------------------------
# Grid and plans (``ops.gemm_rs`` after validation)


SUM_BLOCK = 2048  # elements per program of the reduce passes


def run_triton(a, b, out, W, me, dt):
    import torch
    M, K = a.shape
    N = b.shape[1]
    cfg = gemm_cfg(dt)
    BM, BN = cfg["BLOCK_M"], cfg["BLOCK_N"]
    recv, sig = RESOURCES.symmetric(("gemm_rs", M, N, dt, W), ([W * (M // W) * N], torch.float32),
                                    ([gemm_rs_signal_slots(W, M, N, BM, BN) * SIG_ELEMS], torch.int64))
    grid = (W * cdiv(M // W, BM) * cdiv(N, BN),)
    with signal_round(sig):
        if use_tma(dt, a, b):
            bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
            gemm_rs_tma_kernel[grid](descriptor(a, (bm, bk)), descriptor(b, (bk, bn)), recv, sig, out, me, W,
                                     *RESOURCES.pe_map(), M, N, K, *out.stride(), RED_M=RED_M, **cfg)
        else:
            gemm_rs_kernel[grid](a, b, recv, sig, out, me, W, *RESOURCES.pe_map(), M, N, K, *a.stride(), *b.stride(),
                                 *out.stride(), RED_M=RED_M, **cfg)
    return out


def run_cublas(a, b, out, W, me, dt, nstreams=1, copy_engine=False):
    """The "cublas" form, or "cublas_ce" (``copy_engine``)."""
    import torch
    import shmem as ash
    M, K = a.shape
    N = b.shape[1]
    ml = M // W
    recv, sig = RESOURCES.symmetric(("gemm_rs_cublas", M, N, dt, W), ([W, ml, N], a.dtype),
                                    ([W * SIG_ELEMS], torch.int64))
    stage = RESOURCES.local(("gemm_rs_stage", M, N, dt, W), lambda: torch.empty(
        (max(W - 1, 1), ml, N), dtype=a.dtype, device=a.device)) if copy_engine else None
    # the trailing barrier of signal_round: the next call's partials must not land before every sum is done
    with contiguous_out(out) as o, signal_round(sig) as main:
        comm = RESOURCES.stream("comm")
        pe = RESOURCES.scope().pe
        gs = GemmStreams(nstreams)
        for j in range(1, W):  # owner me + j next receives from this rank at its wait j
            owner = (me + j) % W
            st = gs.stream(j - 1)
            with torch.cuda.stream(st):
                if copy_engine:
                    torch.matmul(a[owner * ml:(owner + 1) * ml], b, out=stage[j - 1])
                    comm.wait_stream(st)
                    ash.putmem_on_stream(recv[me], stage[j - 1], pe(owner), stream=comm)
                    ash.signal_op_on_stream(sig[me * SIG_ELEMS:], 1, pe(owner), stream=comm)
                else:
                    torch.matmul(a[owner * ml:(owner + 1) * ml], b, out=RESOURCES.peer_views(recv, W)[owner][me])
                    ash.signal_op_on_stream(sig[me * SIG_ELEMS:], 1, pe(owner), stream=st)
        with torch.cuda.stream(gs.stream(W - 1)):
            torch.matmul(a[me * ml:(me + 1) * ml], b, out=recv[me])
        gs.join()
        if copy_engine:
            main.wait_stream(comm)  # the staging buffers are free again for the next call
        for j in range(1, W):
            ash.signal_wait_until_on_stream(sig[((me - j) % W) * SIG_ELEMS:], "eq", 1, stream=main)
        n = ml * N
        sum_partials_kernel[(cdiv(n, SUM_BLOCK),)](recv, o, W, n, BLOCK=SUM_BLOCK, num_warps=4)
    return out


def run_whole(a, b, out, W, me, dt):
    import torch
    M, K = a.shape
    N = b.shape[1]
    ml = M // W
    part, = RESOURCES.symmetric(("gemm_rs_whole", M, N, dt, W), ([M, N], a.dtype))
    main = torch.cuda.current_stream()
    # the previous call's trailing barrier keeps this GEMM from overwriting rows a peer still reads
    torch.matmul(a, b, out=part)
    stream_barrier(main)  # every PE's product is complete
    n = ml * N
    with contiguous_out(out) as o:
        sum_peer_rows_kernel[(cdiv(n, SUM_BLOCK),)](part, o, me, W, *RESOURCES.pe_map(), me * n, n, BLOCK=SUM_BLOCK,
                                                    num_warps=4)
        stream_barrier(main)  # every PE has read its block of this PE's product
    return out


# ---------------------------------------------------------------------------------------------
# compile-only descriptions (tests/gpu_kernels AOT-compiles each for sm_90)


def compile_cases(dtype="fp16"):
    p = f"*{dtype}"
    i = "i32"
    big, opts = compile_cfg(dtype)
    return [
        ("sum_partials", sum_partials_kernel, {"part_ptr": p, "out_ptr": p, "world": i, "n": i}, {"BLOCK": 2048}),
        ("sum_peer_rows", sum_peer_rows_kernel, {"part_ptr": p, "out_ptr": p, "rank": i, "world": i, "pe0": i,
                                                 "pes": i, "off": "i64",
                                                 "n": i}, {"BLOCK": 2048}),
        ("gemm_rs", gemm_rs_kernel,
         {"a_ptr": p, "b_ptr": p, "recv_ptr": "*fp32", "sig_ptr": "*i64", "c_ptr": p, "rank": i, "world": i,
          "pe0": i, "pes": i, "M": i, "N": i, "K": i, "stride_am": i, "stride_bk": i, "stride_cm": i},
         dict(stride_ak=1, stride_bn=1, stride_cn=1, RED_M=RED_M, **big), opts),
    ] + ([] if dtype == "fp32" else [  # TMA only for 16-bit dtypes
        ("gemm_rs_tma", gemm_rs_tma_kernel,
         {"a_desc": f"tensordesc<{dtype}[{big['BLOCK_M']}, {big['BLOCK_K']}]>",
          "b_desc": f"tensordesc<{dtype}[{big['BLOCK_K']}, {big['BLOCK_N']}]>", "recv_ptr": "*fp32", "sig_ptr": "*i64",
          "c_ptr": p, "rank": i, "world": i, "pe0": i, "pes": i, "M": i, "N": i, "K": i, "stride_cm": i},
         dict(stride_cn=1, RED_M=RED_M, **big), opts)])
