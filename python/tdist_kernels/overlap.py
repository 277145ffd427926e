"""AllGather + GEMM and GEMM + ReduceScatter with per-tile signals (seed 003), in Triton with dl.*.

Both are one persistent launch whose first ``n_comm`` programs communicate and whose other programs
run the GEMM, so the two overlap tile by tile. The grid never exceeds what is co-resident (the
host sizes it from the SMs this rank may use), since programs of one launch wait for each other.

AG + GEMM: ``a`` (M, K) on every rank, ``b`` (K, N): ``c = all_gather(a) @ b``, (W * M, N).
  * comm programs push chunks of ``CHUNK_M`` rows of the local ``a`` into every rank's symmetric
    gather buffer ``[W * M, K]`` (the own copy too), peers in the order rank - 1, rank - 2, ... (the
    rank that needs this rank's rows soonest first), and set signal ``(rank, chunk)`` at the target
    after a fence.
  * GEMM programs walk the output tiles in swizzled order: the m-tiles start at the rank's own
    rows (``(m_tile + rank * tiles_per_rank) % total``), so each rank starts on local data (read
    straight from ``a``, no wait) while the peers' rows arrive; a tile of other rows first waits
    for the signals of the chunks its first and last rows belong to.

GEMM + RS: ``a`` (M, K) and ``b`` (K, N) on every rank (K-sharded): ``c_me = (sum_r a_r @ b_r)``
rows ``[me * M / W, (me + 1) * M / W)``, (M / W, N). M must be a multiple of W.
  * GEMM programs compute tiles of the partial product, owner by owner starting with the own rows
    (local data first) then rank + 1, ...; each tile is stored in fp32 into the owner's symmetric
    receive buffer ``[W, M / W, N]`` at slot ``rank``, then fence + signal ``(tile, rank)`` at the
    owner. Tiles never straddle two owners (the m-tiles are laid out per owner).
  * reduce programs (the first ``n_comm``) wait for all W signals of a local tile (one
    ``dl.wait(slot, W)``: the W slots are 64 bytes apart), sum the W partials in rank order in
    fp32 and store the tile in the output dtype.

Signals are set once per launch; the host protocol (zero, barrier, launch, barrier) resets them.
"""
import triton
import triton.language as tl

import triton_dist.language as dl

from ._common import SIG, WAIT_NS, bulk_putmem, cdiv, fence_sys


@triton.jit(do_not_specialize=['rank', 'world', 'n_comm'])
def ag_gemm_kernel(
    a_ptr, b_ptr, c_ptr, gather_ptr, sig_ptr,
    rank, world, M, N, K, n_comm,
    stride_bk, stride_bn, stride_cm, stride_cn,
    CHUNK_M: tl.constexpr, VEC_BLOCK: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_N: tl.constexpr,
    ELEM_BYTES: tl.constexpr,
):
    # a and the gather buffer are contiguous (M, K) / (W * M, K); b and c may be strided
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    n_chunks = tl.cdiv(M, CHUNK_M)
    if pid < n_comm:
        items = world * n_chunks
        for u in range(pid, items, n_comm):
            j = u // n_chunks  # 0: own copy, then rank - 1, rank - 2, ...
            ch = u % n_chunks
            target = (rank - j + world) % world
            r0 = ch * CHUNK_M
            rows = tl.minimum(CHUNK_M, M - r0)
            off = (rank * M + r0).to(tl.int64) * K
            bulk_putmem(gather_ptr + off, a_ptr + r0.to(tl.int64) * K, rows.to(tl.int64) * K * ELEM_BYTES, target,
                        VEC_BLOCK)
            fence_sys()
            dl.notify(sig_ptr + (rank * n_chunks + ch) * SIG, target, 1)
    else:
        gpid = pid - n_comm
        ngemm = nprog - n_comm
        total_m = world * M
        tiles_m = tl.cdiv(total_m, BLOCK_M)
        tiles_n = tl.cdiv(N, BLOCK_N)
        for tile in range(gpid, tiles_m * tiles_n, ngemm):
            # n-groups of GROUP_N columns; inside a group m runs fastest (b stays in L2)
            group = tile // (GROUP_N * tiles_m)
            first_n = group * GROUP_N
            gsize = tl.minimum(tiles_n - first_n, GROUP_N)
            in_group = tile % (GROUP_N * tiles_m)
            tm = in_group // gsize
            tn = first_n + in_group % gsize
            tm = (tm + (rank * M) // BLOCK_M) % tiles_m  # swizzle: start at the tile holding the own first row
            row0 = tm * BLOCK_M
            rm = row0 + tl.arange(0, BLOCK_M)
            rn = tn * BLOCK_N + tl.arange(0, BLOCK_N)
            rk = tl.arange(0, BLOCK_K)
            last = tl.minimum(row0 + BLOCK_M, total_m) - 1
            own = (row0 // M == rank) & (last // M == rank)
            if own:
                a_base = a_ptr + (rm - rank * M).to(tl.int64)[:, None] * K
            else:
                src0 = row0 // M
                src1 = last // M
                tok = dl.wait(sig_ptr + (src0 * n_chunks + (row0 - src0 * M) // CHUNK_M) * SIG, 1, "gpu", "acquire",
                              waitValue=1, timeout_ns=WAIT_NS)
                tok2 = dl.wait(sig_ptr + (src1 * n_chunks + (last - src1 * M) // CHUNK_M) * SIG, 1, "gpu",
                               "acquire", waitValue=1, timeout_ns=WAIT_NS)
                g = dl.consume_token(dl.consume_token(gather_ptr, tok), tok2)
                a_base = g + rm.to(tl.int64)[:, None] * K
            mmask = rm < total_m
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k0 in range(0, K, BLOCK_K):
                kk = k0 + rk
                a = tl.load(a_base + kk[None, :], mask=mmask[:, None] & (kk[None, :] < K), other=0.0)
                b = tl.load(b_ptr + kk.to(tl.int64)[:, None] * stride_bk + rn[None, :] * stride_bn,
                            mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
                acc = tl.dot(a, b, acc)
            c = acc.to(c_ptr.dtype.element_ty)
            tl.store(c_ptr + rm.to(tl.int64)[:, None] * stride_cm + rn[None, :] * stride_cn, c,
                     mask=mmask[:, None] & (rn[None, :] < N))


def ag_gemm_signal_slots(world, M, chunk_m):
    return world * cdiv(M, chunk_m)


@triton.jit(do_not_specialize=['rank', 'world', 'n_comm'])
def gemm_rs_kernel(
    a_ptr, b_ptr, c_ptr, recv_ptr, sig_ptr,
    rank, world, M, N, K, n_comm,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_N: tl.constexpr,
    RED_BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    mloc = M // world
    tiles_m = tl.cdiv(mloc, BLOCK_M)  # per owner
    tiles_n = tl.cdiv(N, BLOCK_N)
    local_tiles = tiles_m * tiles_n
    slab = (mloc * N).to(tl.int64)  # one partial [M / W, N] in the receive buffer
    if pid < n_comm:
        # ---- reduce programs: all W partials of a local tile -> c
        for lt in range(pid, local_tiles, n_comm):
            tm = lt // tiles_n
            tn = lt % tiles_n
            tok = dl.wait(sig_ptr + lt * world * SIG, world, "gpu", "acquire", waitValue=1, timeout_ns=WAIT_NS)
            src = dl.consume_token(recv_ptr, tok)
            rm = tm * BLOCK_M + tl.arange(0, BLOCK_M)
            for n0 in range(0, BLOCK_N, RED_BLOCK_N):
                rn = tn * BLOCK_N + n0 + tl.arange(0, RED_BLOCK_N)
                mask = (rm < mloc)[:, None] & (rn < N)[None, :]
                offs = rm.to(tl.int64)[:, None] * N + rn[None, :]
                acc = tl.zeros((BLOCK_M, RED_BLOCK_N), dtype=tl.float32)
                for r in range(0, world):
                    acc += tl.load(src + r * slab + offs, mask=mask, other=0.0)
                tl.store(c_ptr + rm.to(tl.int64)[:, None] * stride_cm + rn[None, :] * stride_cn,
                         acc.to(c_ptr.dtype.element_ty), mask=mask)
    else:
        gpid = pid - n_comm
        ngemm = nprog - n_comm
        for tile in range(gpid, world * local_tiles, ngemm):
            owner = (rank + tile // local_tiles) % world  # own rows first, then rank + 1, ...
            lt = tile % local_tiles
            # inside one owner: n-groups of GROUP_N columns, m fastest
            group = lt // (GROUP_N * tiles_m)
            first_n = group * GROUP_N
            gsize = tl.minimum(tiles_n - first_n, GROUP_N)
            in_group = lt % (GROUP_N * tiles_m)
            tm = in_group // gsize
            tn = first_n + in_group % gsize
            rm = tm * BLOCK_M + tl.arange(0, BLOCK_M)
            rn = tn * BLOCK_N + tl.arange(0, BLOCK_N)
            rk = tl.arange(0, BLOCK_K)
            mmask = rm < mloc
            grow = (owner * mloc + rm).to(tl.int64)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k0 in range(0, K, BLOCK_K):
                kk = k0 + rk
                a = tl.load(a_ptr + grow[:, None] * stride_am + kk[None, :] * stride_ak,
                            mask=mmask[:, None] & (kk[None, :] < K), other=0.0)
                b = tl.load(b_ptr + kk.to(tl.int64)[:, None] * stride_bk + rn[None, :] * stride_bn,
                            mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
                acc = tl.dot(a, b, acc)
            dst = dl.symm_at(recv_ptr, owner)
            tl.store(dst + rank * slab + rm.to(tl.int64)[:, None] * N + rn[None, :], acc,
                     mask=mmask[:, None] & (rn[None, :] < N))
            fence_sys()
            dl.notify(sig_ptr + ((tm * tiles_n + tn) * world + rank) * SIG, owner, 1)


def gemm_rs_signal_slots(world, M, N, block_m, block_n):
    return cdiv(M // world, block_m) * cdiv(N, block_n) * world


def compile_cases(dtype="fp16"):
    p = f"*{dtype}"
    i = "i32"
    elem = {"fp16": 2, "bf16": 2, "fp32": 4}[dtype]
    return [
        ("ag_gemm", ag_gemm_kernel,
         {"a_ptr": p, "b_ptr": p, "c_ptr": p, "gather_ptr": p, "sig_ptr": "*i64", "rank": i, "world": i, "M": i,
          "N": i, "K": i, "n_comm": i, "stride_bk": i, "stride_bn": i, "stride_cm": i, "stride_cn": i},
         {"CHUNK_M": 128, "VEC_BLOCK": 1024, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_N": 8,
          "ELEM_BYTES": elem}),
        ("gemm_rs", gemm_rs_kernel,
         {"a_ptr": p, "b_ptr": p, "c_ptr": p, "recv_ptr": "*fp32", "sig_ptr": "*i64", "rank": i, "world": i,
          "M": i, "N": i, "K": i, "n_comm": i, "stride_am": i, "stride_ak": i, "stride_bk": i, "stride_bn": i,
          "stride_cm": i, "stride_cn": i},
         {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_N": 8, "RED_BLOCK_N": 32}),
    ]
