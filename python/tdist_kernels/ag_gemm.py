"""AllGather + GEMM: ``a`` (M, K) on every rank, ``b`` (K, N): ``c = all_gather(a) @ b``, (W * M, N);
the Triton kernel (seed 003's per-tile form) and the plans of every form.

Forms (``ops.AG_GEMM_IMPLS``; ``ops`` picks one for "auto" by placement):

``cublas``
    The gather on the copy engine (``shmem.putmem_on_stream`` + ``signal_op_on_stream`` on a side
    stream, no SM), the own rows multiplied at once (cuBLAS), each peer's rows as soon as a stream
    wait sees their signal, peers in the order their data arrives; ``gemm_streams=2`` issues those
    GEMMs alternately on two streams (``_gemm.GemmStreams``).
``cublas_whole``
    One cuBLAS GEMM over all ``W * M`` rows: with ranks sharing a GPU a batched GEMM that reads
    every rank's rows in place (``shmem.peer_stack``, no gather copy at all), otherwise after the
    gather completes.
``triton``
    One Triton GEMM whose tiles of other ranks' rows wait for the signals of their chunks (tiles
    loaded by TMA where the GPU and operands allow, ``_gemm.use_tma``; pointer loads elsewhere):
      * on a side stream, for each chunk of ``chunk_m`` rows of the local ``a``: the copy engine
        puts it into the gather buffer ``[W * M, K]`` of this rank (first) and of every peer
        (rank + 1, ...), and a stream signal sets slot ``(rank, chunk)`` at the target once the
        chunk has landed;
      * a persistent GEMM grid walks the output tiles in swizzled order: tile 0 holds the rank's
        own first row, so each rank starts on local data (read straight from ``a``, no wait) while
        the peers' rows arrive; a tile of other rows first waits (``dl.wait``) for every chunk it
        reads (a consecutive range of slots), then reads the gather buffer through
        ``dl.consume_token``.
    The copies are asked to run on a copy engine and the signals are stream memory operations, but
    the driver only takes the copy-engine request as a hint: a device-to-device copy may run as an
    SM kernel. The grid therefore leaves SMs free (``ag_gemm_grid``): waiting GEMM programs can
    never occupy every SM the copies need. Its tile loop alone runs at 0.94-0.98 of cuBLAS on an
    H200; the form as a whole pays for the gather copy and the waits (1.5-1.7x the GEMM alone at
    one rank, benchmarks/NOTES.md).

Signals are set once per call; seed 002's host protocol (``_resources.signal_round``) resets them.
"""
import triton
import triton.language as tl
from triton.language import core as tlc

import triton_dist.language as dl

from ._common import SIG, SIG_ELEMS, cdiv, fence_proxy_async
from ._gemm import GemmStreams, compile_cfg, descriptor, gemm_cfg, k_loop, k_loop_tma, tile_of, use_tma
from ._resources import RESOURCES, contiguous_out, side_stream, signal_round, stream_barrier


@tlc.builtin
def _elem_bytes(p, _semantic=None, _builder=None):
    """Bytes per element of the pointer ``p`` (a constant), in either front end."""
    return tl.constexpr(tlc._unwrap_if_constexpr(p).dtype.element_ty.primitive_bitwidth // 8)


@triton.jit
def wait_rows(sig_ptr, row0, last, M, n_chunks, CHUNK_M: tl.constexpr):
    """Acquire wait for every chunk signal of gather rows row0..last. Slot (s, c) = s * n_chunks + c is
    monotone in the row and steps by at most one from a row to the next, so the chunks those rows lie
    in are exactly the slots first..last, consecutive: one wait on all of them. (With M or the last
    chunk shorter than BLOCK_M a tile reads more than the chunks of its first and last rows: a whole
    rank in between, or a source's short tail.)"""
    src0 = row0 // M
    src1 = last // M
    first = src0 * n_chunks + (row0 - src0 * M) // CHUNK_M
    final = src1 * n_chunks + (last - src1 * M) // CHUNK_M
    return dl.wait(sig_ptr + first * SIG, final - first + 1, "gpu", "acquire", waitValue=1, slot_stride=SIG)


@triton.jit
def ag_tile(tile, rank, M, total_m, tiles_m, tiles_n, BLOCK_M: tl.constexpr, GROUP_M: tl.constexpr):
    """(tn, row0, last) of persistent tile ``tile`` of both AG kernels: grouped order, swizzled so
    that tile 0 holds this rank's own first row; rows row0..last of the gather buffer."""
    tm, tn = tile_of(tile, tiles_m, tiles_n, GROUP_M)
    tm = (tm + (rank * M) // BLOCK_M) % tiles_m
    row0 = tm * BLOCK_M
    return tn, row0, tl.minimum(row0 + BLOCK_M, total_m) - 1


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
        tn, row0, last = ag_tile(tile, rank, M, total_m, tiles_m, tiles_n, BLOCK_M, GROUP_M)
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
            tok = wait_rows(sig_ptr, row0, last, M, n_chunks, CHUNK_M)
        g = dl.consume_token(gather_ptr, tok)
        own64 = own.to(tl.int64)
        # elements from the gather buffer to a (both 16-byte aligned, so a multiple of 16 bytes)
        gap = a_ptr.to(tl.int64, bitcast=True) - gather_ptr.to(tl.int64, bitcast=True)
        to_a = tl.multiple_of(own64 * (gap // _elem_bytes(a_ptr)), 16 // _elem_bytes(a_ptr))
        a_rows = (rm - own.to(tl.int32) * (rank * M)).to(tl.int64)
        a_ptrs = g + to_a + a_rows[:, None] * K + rk[None, :]
        b_ptrs = b_ptr + rk.to(tl.int64)[:, None] * stride_bk + rn[None, :] * stride_bn
        acc = k_loop(a_ptrs, b_ptrs, nmask, K, 1, stride_bk, BLOCK_M, BLOCK_N, BLOCK_K)
        c = acc.to(c_ptr.dtype.element_ty)
        rm_s = row0 + tl.arange(0, BLOCK_M)
        tl.store(c_ptr + rm_s.to(tl.int64)[:, None] * stride_cm + rn[None, :] * stride_cn, c,
                 mask=(rm_s < total_m)[:, None] & nmask[None, :])


@triton.jit(do_not_specialize=['rank', 'world'])
def ag_gemm_tma_kernel(
    g_desc, b_desc, c_ptr, sig_ptr,
    rank, world, M, N, K,
    stride_cm, stride_cn,
    CHUNK_M: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    """``ag_gemm_kernel`` with its tiles loaded by TMA (CUDA, compute capability >= 9): ``g_desc``
    over the gather buffer (W * M, K), ``b_desc`` over b. The same tile order; every tile waits for
    the chunks it reads, its own rank's too (the gather puts those first, a local copy): one k loop,
    so one set of shared-memory stages (a second loop over ``a`` for the own tiles doubled them past
    the SM's 228 KB). After the wait a proxy fence orders the signals' acquire before the bulk
    copies that read the rows they announced."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    total_m = world * M
    tiles_m = tl.cdiv(total_m, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    n_chunks = tl.cdiv(M, CHUNK_M)
    for tile in range(pid, tiles_m * tiles_n, nprog):
        tn, row0, last = ag_tile(tile, rank, M, total_m, tiles_m, tiles_n, BLOCK_M, GROUP_M)
        wait_rows(sig_ptr, row0, last, M, n_chunks, CHUNK_M)
        fence_proxy_async()
        acc = k_loop_tma(g_desc, b_desc, row0, tn * BLOCK_N, K, BLOCK_M, BLOCK_N, BLOCK_K)
        rm = row0 + tl.arange(0, BLOCK_M)
        rn = tn * BLOCK_N + tl.arange(0, BLOCK_N)
        tl.store(c_ptr + rm.to(tl.int64)[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
                 mask=(rm < total_m)[:, None] & (rn < N)[None, :])


def ag_gemm_signal_slots(world, M, chunk_m):
    return world * cdiv(M, chunk_m)


AG_FREE_SMS = 4


def ag_gemm_grid(nsm, tiles):
    """Persistent AG + GEMM programs: one per SM of the share but ``AG_FREE_SMS``, so the gather's
    copies find SMs even if the driver runs them as a kernel while GEMM programs wait for them."""
    return max(1, min(tiles, nsm - AG_FREE_SMS))


# ---------------------------------------------------------------------------------------------
# Plans (``ops.ag_gemm`` after validation: ``a`` contiguous and 16-byte aligned, ``out`` checked)


def run_triton(a, b, out, W, me, dt, chunk_m=None):
    import torch
    import shmem as ash
    M, K = a.shape
    N = b.shape[1]
    chunk = chunk_m or max(128, cdiv(M, 4))
    n_chunks = cdiv(M, chunk)
    pe = RESOURCES.scope().pe
    gather, sig = RESOURCES.symmetric(("ag_gemm", M, K, dt, W, chunk), ([W * M, K], a.dtype),
                                      ([ag_gemm_signal_slots(W, M, chunk) * SIG_ELEMS], torch.int64))
    cfg = gemm_cfg(dt)
    grid = ag_gemm_grid(RESOURCES.sm_budget(), cdiv(W * M, cfg["BLOCK_M"]) * cdiv(N, cfg["BLOCK_N"]))
    with signal_round(sig), side_stream("comm", uses=(a,)) as comm:
        for c in range(n_chunks):  # the own rows first (tiles straddling two ranks read them), then rank + 1, ...
            r0 = c * chunk
            rows = min(chunk, M - r0)
            for j in range(W):
                target = pe((me + j) % W)
                ash.putmem_on_stream(gather[me * M + r0:me * M + r0 + rows], a[r0:r0 + rows], target, stream=comm)
                ash.signal_op_on_stream(sig[(me * n_chunks + c) * SIG_ELEMS:], 1, target, stream=comm)
        if use_tma(dt, b, gather):
            bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
            ag_gemm_tma_kernel[(grid,)](descriptor(gather, (bm, bk)), descriptor(b, (bk, bn)), out, sig, me, W, M, N,
                                        K, *out.stride(), CHUNK_M=chunk, **cfg)
        else:
            ag_gemm_kernel[(grid,)](a, b, out, gather, sig, me, W, M, N, K, *b.stride(), *out.stride(),
                                    CHUNK_M=chunk, **cfg)
    return out


def run_cublas(a, b, out, W, me, dt, nstreams=1, whole=False):
    """The "cublas" form, or "cublas_whole" with one rank per GPU (``whole``): one GEMM after the
    gather."""
    import torch
    import shmem as ash
    M, K = a.shape
    pe = RESOURCES.scope().pe
    gather, sig = RESOURCES.symmetric(("ag_gemm_cublas", M, K, dt, W), ([W * M, K], a.dtype),
                                      ([W * SIG_ELEMS], torch.int64))
    # the trailing barrier of signal_round: the next call's puts must not overwrite rows still being read
    with contiguous_out(out) as o, signal_round(sig) as main, side_stream("comm", uses=(a,)) as comm:
        for j in range(1, W):  # rank me - j multiplies this rank's rows at its step j: feed it first
            target = pe((me - j) % W)
            ash.putmem_on_stream(gather[me * M:(me + 1) * M], a, target, stream=comm)
            ash.signal_op_on_stream(sig[me * SIG_ELEMS:], 1, target, stream=comm)
        if whole:
            gather[me * M:(me + 1) * M].copy_(a)
            for j in range(1, W):
                ash.signal_wait_until_on_stream(sig[((me + j) % W) * SIG_ELEMS:], "eq", 1, stream=main)
            torch.matmul(gather, b, out=o)
        else:
            gs = GemmStreams(nstreams)
            torch.matmul(a, b, out=o[me * M:(me + 1) * M])
            for j in range(1, W):
                src = (me + j) % W
                st = gs.stream(j)
                ash.signal_wait_until_on_stream(sig[src * SIG_ELEMS:], "eq", 1, stream=st)
                with torch.cuda.stream(st):
                    torch.matmul(gather[src * M:(src + 1) * M], b, out=o[src * M:(src + 1) * M])
            gs.join()
    return out


def run_in_place(a, b, out, W, dt):
    """The "cublas_whole" form when the ranks share a GPU: each rank's rows go into its symmetric
    buffer (one local copy), and one batched cuBLAS GEMM reads every rank's rows in place through
    ``shmem.peer_stack`` (no gather copy at all)."""
    import torch
    import shmem as ash
    M, K = a.shape
    N = b.shape[1]
    key = ("ag_gemm_in_place", M, K, dt, W)
    rows, = RESOURCES.symmetric(key, ([M, K], a.dtype))
    team = RESOURCES.scope()
    stack = RESOURCES.local(key, lambda: ash.peer_stack(rows, team))  # a view: release() drops it, frees rows
    main = torch.cuda.current_stream()
    rows.copy_(a)  # the previous call's trailing barrier: no peer still reads the old rows
    stream_barrier(main)  # every rank's rows are in place
    with contiguous_out(out) as o:
        torch.bmm(stack, b.expand(W, K, N), out=o.view(W, M, N))
        stream_barrier(main)  # every rank has read this rank's rows
    return out


# ---------------------------------------------------------------------------------------------
# compile-only description (tests/gpu_kernels AOT-compiles it for sm_90)


def compile_cases(dtype="fp16"):
    p = f"*{dtype}"
    i = "i32"
    big, opts = compile_cfg(dtype)
    return [
        ("ag_gemm", ag_gemm_kernel,
         {"a_ptr": p, "b_ptr": p, "c_ptr": p, "gather_ptr": p, "sig_ptr": "*i64", "rank": i, "world": i, "M": i,
          "N": i, "K": i, "stride_bk": i, "stride_cm": i},
         dict(CHUNK_M=512, stride_bn=1, stride_cn=1, **big), opts),  # unit strides: as Triton specialises them
    ] + ([] if dtype == "fp32" else [  # TMA only for 16-bit dtypes
        ("ag_gemm_tma", ag_gemm_tma_kernel,
         {"g_desc": _desc(dtype, big["BLOCK_M"], big["BLOCK_K"]),
          "b_desc": _desc(dtype, big["BLOCK_K"], big["BLOCK_N"]), "c_ptr": p, "sig_ptr": "*i64", "rank": i,
          "world": i, "M": i, "N": i, "K": i, "stride_cm": i},
         dict(CHUNK_M=512, stride_cn=1, **big), opts)])


def _desc(dtype, rows, cols):
    return f"tensordesc<{dtype}[{rows}, {cols}]>"
