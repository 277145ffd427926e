"""Expert-parallel MoE dispatch and combine: the Triton kernels and their torch-facing buffer.

The contract (API, layouts, the counts row, the rings, the errors) is docs/MOE.md; the CPU ranks'
C++ version (``tdist::kernels::cpu::MoeBuffer``) follows the same protocol. Experts are partitioned
contiguously (``L = E / W`` per rank, expert ``e`` on rank ``e // L``); a token is sent once per
destination rank and expanded there into one row per (token, expert) pair, grouped by local expert
(group ``j``: sources in rank order, tokens ascending, ``k`` ascending).

High-throughput mode, per dispatch (three launches on the current stream, no host sync):
  ``moe_layout_kernel``   local scans: each pair's position among this rank's pairs of its expert,
                          the tokens sent to each rank (in order), the counts row
                          (``E`` pair counts, ``W`` token counts, 4 status words);
  ``moe_counts_kernel``   one program: the counts row into every rank's matrix (call parity), flags,
                          the verdict (every rank's status, every rank's received rows against the
                          bound) and the plan (row bases, per-source counts);
  ``moe_ht_dispatch_kernel``  ``2 * slices`` persistent programs: senders and receivers of column
                          slices, chunk rounds through fixed rings with ready / credit counters that
                          only grow (sequence numbers on the device).
Combine is one launch (``moe_ht_combine_kernel``) over the same kind of rings, the home rank
accumulating in fp32 (each slice its own columns) in a fixed order.

fp8 dispatch (``fp8=True``, docs/MOE.md section 1): ``moe_fp8_pack_kernel`` quantizes each token
once into a packed row (``H`` e4m3 codes, then ``H / 128`` float32 scales) of int32 words, and the
dispatch kernels move those words as they move any payload; combine is unchanged.

Low-latency mode: one launch each way (``moe_ll_dispatch_kernel``, ``moe_ll_combine_kernel``), the
call epoch kept on the device (CUDA-graph safe), areas double-buffered by call parity.

The kernels compile for sm_90 in CI (``compile_cases``); ``MoeBuffer`` needs torch and the CUDA
backend.
"""
import triton
import triton.language as tl

import triton_dist.language as dl
from triton_dist.language.extra import libshmem_device

from ._common import SIG, SIG_ELEMS, KernelArgError, cdiv, pow2, resident_grid, team_pe, wait_ge

MODES = ("high_throughput", "low_latency")

# counts row: E pair counts | W token counts | status (code, a, b, c)
STATUS_OK, STATUS_BAD_EXPERT, STATUS_TOO_MANY_TOKENS, STATUS_RECV_OVERFLOW = 0, 1, 2, 3
# plan (int32, local): header, then E row bases, W n_recv, W recv_base, W n_send, L expert counts
PLAN_HDR = tl.constexpr(8)  # status code, PE, a, b, c, max chunks, rows received here, tokens received here


def plan_len(E, W, L):
    return 8 + E + 3 * W + L


@triton.jit
def _fence():
    libshmem_device.fence()


# Prefix sums. SCAN_QUAD: as a masked reduction (quadratic in the block, for the CPU-rank path:
# triton-ascend 3.2 lowers tl.cumsum to a form whose bufferization op the CPU lowering cannot
# translate); else tl.cumsum (CUDA).

@triton.jit
def _cumsum0(v, offs, SCAN_QUAD: tl.constexpr):
    """Inclusive prefix sum of the block ``v`` (``offs`` = tl.arange over its length)."""
    if SCAN_QUAD:
        return tl.sum(tl.where(offs[None, :] <= offs[:, None], v[None, :], 0), axis=1)
    else:
        return tl.cumsum(v, axis=0)


@triton.jit
def _cumsum1(m, offs_k, BLOCK_K: tl.constexpr, SCAN_QUAD: tl.constexpr):
    """Inclusive prefix sum along axis 1 of the 2-D block ``m`` (``offs_k`` = tl.arange(0, BLOCK_K))."""
    if SCAN_QUAD:
        acc = tl.where(offs_k[None, :] >= 0, 0, m)
        for kk in tl.static_range(BLOCK_K):
            col = tl.sum(tl.where(offs_k[None, :] == kk, m, 0), axis=1)
            acc += tl.where(offs_k[None, :] >= kk, col[:, None], 0)
        return acc
    else:
        return tl.cumsum(m, axis=1)


# ---------------------------------------------------------------------------------------------
# layout (high throughput): grid E + W + 1

@triton.jit
def moe_layout_kernel(idx_ptr, pos_ptr, row_ptr, send_list_ptr, spos_ptr,
                      T, T_real, E, L, K, W, max_tokens,
                      BLOCK_T: tl.constexpr, BLOCK_K: tl.constexpr, SCAN_QUAD: tl.constexpr = False):
    """Program e < E: pos[t, k] (rank of pair (t, k) among this rank's pairs of expert e, token
    order then k) and row[e]; program E + p: the tokens sent to rank p (send_list[p, :]), their
    positions spos[t, p] (-1: not sent) and row[E + p]; the last program: the status words (first
    bad expert index, or T_real above max_tokens). T = min(T_real, max_tokens)."""
    pid = tl.program_id(0)
    offs_k = tl.arange(0, BLOCK_K)
    offs_b = tl.arange(0, BLOCK_T)
    if pid < E:
        carry = 0
        for t0 in range(0, T, BLOCK_T):
            offs_t = t0 + tl.arange(0, BLOCK_T)
            m2 = (offs_t < T)[:, None] & (offs_k < K)[None, :]
            flat = offs_t[:, None].to(tl.int64) * K + offs_k[None, :]
            idx = tl.load(idx_ptr + flat, mask=m2, other=-1)
            hit = (idx == pid).to(tl.int32)
            per_tok = tl.sum(hit, axis=1)
            before = _cumsum0(per_tok, offs_b, SCAN_QUAD) - per_tok
            pos = carry + before[:, None] + _cumsum1(hit, offs_k, BLOCK_K, SCAN_QUAD) - 1
            tl.store(pos_ptr + flat, pos, mask=m2 & (hit > 0))
            carry += tl.sum(per_tok, axis=0)
        tl.store(row_ptr + pid, carry)
    elif pid < E + W:
        p = pid - E
        carry = 0
        for t0 in range(0, T, BLOCK_T):
            offs_t = t0 + tl.arange(0, BLOCK_T)
            tm = offs_t < T
            m2 = tm[:, None] & (offs_k < K)[None, :]
            idx = tl.load(idx_ptr + offs_t[:, None].to(tl.int64) * K + offs_k[None, :], mask=m2, other=-1)
            to_p = ((idx >= 0) & (idx < E) & (idx // L == p)).to(tl.int32)
            sent = tl.max(to_p, axis=1)
            sp = carry + _cumsum0(sent, offs_b, SCAN_QUAD) - 1
            tl.store(spos_ptr + offs_t.to(tl.int64) * W + p, tl.where(sent > 0, sp, -1), mask=tm)
            tl.store(send_list_ptr + p * max_tokens + sp, offs_t, mask=tm & (sent > 0))
            carry += tl.sum(sent, axis=0)
        tl.store(row_ptr + E + p, carry)
    else:
        big = 2147483647
        first = big
        for t0 in range(0, T, BLOCK_T):
            offs_t = t0 + tl.arange(0, BLOCK_T)
            m2 = (offs_t < T)[:, None] & (offs_k < K)[None, :]
            flat = offs_t[:, None] * K + offs_k[None, :]
            idx = tl.load(idx_ptr + flat.to(tl.int64), mask=m2, other=-1)
            bad = m2 & ((idx < -1) | (idx >= E))
            first = tl.minimum(first, tl.min(tl.min(tl.where(bad, flat, big), axis=1), axis=0))
        code = tl.where(first < big, 1, 0)
        code = tl.where(T_real > max_tokens, 2, code)
        a = tl.where(code == 2, T_real, first // K)
        b = tl.where(code == 2, max_tokens, first % K)
        val = tl.load(idx_ptr + tl.where(code == 1, first, 0), mask=code == 1, other=0)
        tl.store(row_ptr + E + W, code)
        tl.store(row_ptr + E + W + 1, tl.where(code == 0, 0, a))
        tl.store(row_ptr + E + W + 2, tl.where(code == 0, 0, b))
        tl.store(row_ptr + E + W + 3, tl.where(code == 1, val, 0))


# ---------------------------------------------------------------------------------------------
# counts round + verdict + plan (high throughput): grid 1

@triton.jit
def moe_counts_kernel(row_ptr, cnt_ptr, flag_ptr, ctl_ptr, plan_ptr, counts_out_ptr,
                      rank, world, pe0, pes, E, L, R, max_recv, chunk,
                      BLOCK_R: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_W: tl.constexpr,
                      SCAN_QUAD: tl.constexpr = False):
    """``cnt_ptr``: symmetric [2][W][R] int32 (R = E + W + 4); ``flag_ptr``: symmetric [2][W]
    slots; ``ctl_ptr``: this buffer's call epoch (local). Parity reuse: a rank writes parity e % 2
    again in call e + 2, after it saw every peer's call-(e + 1) flag, set after that peer read call
    e's matrix."""
    e = tl.load(ctl_ptr) + 1
    par = e % 2
    offs_r = tl.arange(0, BLOCK_R)
    row = tl.load(row_ptr + offs_r, mask=offs_r < R, other=0)
    mine = cnt_ptr + (par * world + rank) * R
    for j in range(0, world):
        p = (rank + 1 + j) % world
        tl.store(dl.symm_at(mine, team_pe(p, pe0, pes)) + offs_r, row, mask=offs_r < R)
    _fence()
    for j in range(0, world):
        dl.notify(flag_ptr + (par * world + rank) * SIG, team_pe((rank + 1 + j) % world, pe0, pes), e)
    tok = rank * 0
    for r in range(0, world):
        tok += dl.wait(flag_ptr + (par * world + r) * SIG, 1, "sys", "acquire", waitValue=e)
    base_m = dl.consume_token(cnt_ptr + par * world * R, tok)
    offs_w = tl.arange(0, BLOCK_W)
    wm = offs_w < world
    # every rank's status: the first failing rank wins, the same verdict on every rank
    st = tl.load(base_m + offs_w * R + E + world, mask=wm, other=0)
    bad_pe = tl.min(tl.where(st != 0, offs_w, 1 << 30), axis=0)
    # (every address stays in bounds, masked or not: CPU ranks may load a masked scalar anyway)
    bp = tl.minimum(bad_pe, world - 1)
    code = tl.load(base_m + bp * R + E + world, mask=bad_pe < world, other=0)
    a = tl.load(base_m + bp * R + E + world + 1, mask=bad_pe < world, other=0)
    b = tl.load(base_m + bp * R + E + world + 2, mask=bad_pe < world, other=0)
    c = tl.load(base_m + bp * R + E + world + 3, mask=bad_pe < world, other=0)
    code = tl.where(bad_pe < world, code, 0)
    a = tl.where(bad_pe < world, a, 0)
    b = tl.where(bad_pe < world, b, 0)
    c = tl.where(bad_pe < world, c, 0)
    offs_e = tl.arange(0, BLOCK_E)
    em = offs_e < E
    colsum = tl.zeros([BLOCK_E], dtype=tl.int32)
    before = tl.zeros([BLOCK_E], dtype=tl.int32)
    for r in range(0, world):
        v = tl.load(base_m + r * R + offs_e, mask=em, other=0)
        colsum += v
        before += tl.where(r < rank, v, 0)
    excl = _cumsum0(colsum, offs_e, SCAN_QUAD) - colsum
    seg = tl.zeros([BLOCK_E], dtype=tl.int32)
    over_pe = rank * 0 + (1 << 30)
    over_rows = tl.sum(tl.zeros([1], dtype=tl.int32), axis=0)
    for p in range(0, world):
        in_p = (offs_e // L) == p
        start = tl.sum(tl.where(offs_e < p * L, colsum, 0), axis=0)
        total = tl.sum(tl.where(in_p & em, colsum, 0), axis=0)
        seg = tl.where(in_p, start, seg)
        hit = (total > max_recv) & (over_pe == (1 << 30))
        over_rows = tl.where(hit, total, over_rows)
        over_pe = tl.where(hit, p, over_pe)
    # a routing that overflows some rank's output is the verdict when every input was good
    ovf = (code == 0) & (over_pe < world)
    code = tl.where(ovf, 3, code)
    bad_pe = tl.where(ovf, over_pe, bad_pe)
    a = tl.where(ovf, over_rows, a)
    b = tl.where(ovf, max_recv, b)
    tl.store(plan_ptr + PLAN_HDR + offs_e, excl - seg + before, mask=em)
    n_recv = tl.load(base_m + offs_w * R + E + rank, mask=wm, other=0)
    n_send = tl.load(row_ptr + E + offs_w, mask=wm, other=0)
    tl.store(plan_ptr + PLAN_HDR + E + offs_w, n_recv, mask=wm)
    tl.store(plan_ptr + PLAN_HDR + E + world + offs_w, _cumsum0(n_recv, offs_w, SCAN_QUAD) - n_recv, mask=wm)
    tl.store(plan_ptr + PLAN_HDR + E + 2 * world + offs_w, n_send, mask=wm)
    mine_e = (offs_e // L) == rank
    tl.store(plan_ptr + PLAN_HDR + E + 3 * world + offs_e - rank * L, colsum, mask=mine_e & em)
    tl.store(counts_out_ptr + offs_e - rank * L, colsum, mask=mine_e & em)
    maxc = tl.max(tl.maximum((n_recv + chunk - 1) // chunk, (n_send + chunk - 1) // chunk), axis=0)
    tl.store(plan_ptr + 0, code)
    tl.store(plan_ptr + 1, tl.where(code == 0, 0, bad_pe))
    tl.store(plan_ptr + 2, a)
    tl.store(plan_ptr + 3, b)
    tl.store(plan_ptr + 4, c)
    tl.store(plan_ptr + 5, tl.where(code == 0, maxc, 0))
    tl.store(plan_ptr + 6, tl.sum(tl.where(mine_e & em, colsum, 0), axis=0))
    tl.store(plan_ptr + 7, tl.sum(n_recv, axis=0))
    tl.store(ctl_ptr, e)


# ---------------------------------------------------------------------------------------------
# fp8 dispatch: quantize and pack (docs/MOE.md section 1, "fp8 dispatch")

FP8_BLOCK = 128
FP8_MAX = tl.constexpr(448.0)


@triton.jit
def moe_fp8_pack_kernel(x_ptr, codes_ptr, scales_ptr, H, row_bytes,
                        BLOCKS: tl.constexpr, BLOCK: tl.constexpr):
    """Grid (T, cdiv(H / BLOCK, BLOCKS)): token t's blocks [BLOCKS * pid1, ...) of BLOCK columns.
    ``codes_ptr`` (uint8) and ``scales_ptr`` (float32) view the same packed rows of ``row_bytes``
    bytes: the codes at byte ``c``, block b's scale at byte ``H + 4 b``. Both divisions are
    correctly rounded (``div_rn``), the e4m3 cast rounds to nearest even and saturates."""
    t = tl.program_id(0).to(tl.int64)
    b = tl.program_id(1) * BLOCKS + tl.arange(0, BLOCKS)
    bm = b < H // BLOCK
    cols = b[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    m = bm[:, None]
    v = tl.load(x_ptr + t * H + cols, mask=m, other=0.0).to(tl.float32)
    amax = tl.max(tl.abs(v), axis=1)
    scale = tl.div_rn(tl.maximum(amax, 1e-10), FP8_MAX)
    q = tl.div_rn(v, scale[:, None]).to(tl.float8e4nv)
    tl.store(codes_ptr + t * row_bytes + cols, q.to(tl.uint8, bitcast=True), mask=m)
    tl.store(scales_ptr + t * (row_bytes // 4) + H // 4 + b, scale, mask=bm)


def fp8_row_words(hidden):
    """int32 words of one packed fp8 row: ``hidden`` codes and ``hidden / 128`` float32 scales."""
    return (hidden + hidden // FP8_BLOCK * 4) // 4


def fp8_views(packed, hidden):
    """(codes, scales) views of packed fp8 rows (int32 words, last dim ``fp8_row_words``):
    codes ``(..., hidden)`` float8_e4m3fn and scales ``(..., hidden / 128)`` float32."""
    import torch
    codes = packed.view(torch.uint8)[..., :hidden].view(torch.float8_e4m3fn)
    return codes, packed[..., hidden // 4:].view(torch.float32)


def fp8_dequantize(codes, scales, dtype):
    """``codes * scale`` per 128-column block, in ``dtype`` (what an expert without fp8 GEMMs reads)."""
    v = codes.float().unflatten(-1, (scales.shape[-1], FP8_BLOCK)) * scales.unsqueeze(-1)
    return v.flatten(-2).to(dtype)


# ---------------------------------------------------------------------------------------------
# high-throughput data: grid 2 * S (programs [0, S) senders, [S, 2S) receivers)

@triton.jit
def _store_pairs(out_ptr, v, rows, m2, h0, offs_h, offs_k, H, K):
    """Store the tile ``v`` (rows of tokens, columns h0 + offs_h where ``m2``) into the output rows
    of each token's pairs: ``rows`` (tokens, BLOCK_K), -1 where the pair has no row here. Every
    expansion of a received token (both modes' dispatch) goes through here."""
    for k in range(0, K):
        rk = tl.sum(tl.where(offs_k[None, :] == k, rows, 0), axis=1)
        tl.store(out_ptr + tl.maximum(rk, 0)[:, None].to(tl.int64) * H + h0 + offs_h[None, :], v,
                 mask=m2 & (rk >= 0)[:, None])


@triton.jit
def moe_ht_dispatch_kernel(x_ptr, idx_ptr, w_ptr, pos_ptr, send_list_ptr, plan_ptr,
                           ring_ptr, ring_rows_ptr, ring_w_ptr, ready_ptr, credit_ptr, seq_ptr,
                           out_ptr, h_rows_ptr, h_w_ptr,
                           rank, world, pe0, pes, H, K, L, E, max_tokens, chunk, nbuf, S,
                           BLOCK_C: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """Rings on every rank (symmetric): ``ring`` [W src][nbuf][chunk][H], ``ring_rows`` /
    ``ring_w`` [W src][nbuf][chunk][K] (the pair's output row on this rank or -1, its weight);
    ``ready`` [W src][S] and ``credit`` [W dst][S] slots; ``seq`` (local) [2][S][W] chunks ever sent
    / received per peer and slice. Slice 0 carries the rows and weights, so its sender waits for
    every slice's credit and the other slices' receivers also wait for slice 0's ready."""
    pid = tl.program_id(0)
    sender = pid < S
    s = tl.where(sender, pid, pid - S)
    cols = tl.cdiv(tl.cdiv(H, S), BLOCK_H) * BLOCK_H  # slices in whole column blocks (aligned tiles)
    c0 = s * cols
    c1 = tl.minimum(H, c0 + cols)
    code = tl.load(plan_ptr)
    maxc = tl.load(plan_ptr + 5)
    offs_c = tl.arange(0, BLOCK_C)
    offs_h = tl.arange(0, BLOCK_H)
    offs_k = tl.arange(0, BLOCK_K)
    km = offs_k < K
    if code == 0:
        for c in range(0, maxc):
            for i in range(0, world):
                if sender:
                    p = (rank + 1 + i) % world
                    n = tl.load(plan_ptr + PLAN_HDR + E + 2 * world + p)
                    if c * chunk < n:
                        g = tl.load(seq_ptr + s * world + p) + c
                        if g >= nbuf:
                            if s == 0:
                                for q in range(0, S):
                                    wait_ge(credit_ptr + (p * S + q) * SIG, g + 1 - nbuf)
                            else:
                                wait_ge(credit_ptr + (p * S + s) * SIG, g + 1 - nbuf)
                        slot = (rank * nbuf + g % nbuf) * chunk
                        cnt = tl.minimum(chunk, n - c * chunk)
                        dst = dl.symm_at(ring_ptr, team_pe(p, pe0, pes))
                        lst = send_list_ptr + p * max_tokens + c * chunk
                        # the chunk in tiles of BLOCK_C rows; each tile's token ids are loaded one tile
                        # ahead, so that their load is not a second wait before the rows' gather
                        toks_next = tl.load(lst + offs_c, mask=offs_c < cnt, other=0)
                        for r0 in range(0, cnt, BLOCK_C):
                            oc = r0 + offs_c
                            cm = oc < cnt
                            toks = toks_next
                            toks_next = tl.load(lst + BLOCK_C + oc, mask=(oc + BLOCK_C) < cnt, other=0)
                            for h0 in range(c0, c1, BLOCK_H):
                                hm = (h0 + offs_h) < c1
                                m2 = cm[:, None] & hm[None, :]
                                v = tl.load(x_ptr + toks[:, None].to(tl.int64) * H + h0 + offs_h[None, :], mask=m2)
                                tl.store(dst + (slot + oc[:, None]).to(tl.int64) * H + h0 + offs_h[None, :], v, mask=m2)
                            if s == 0:
                                mk = cm[:, None] & km[None, :]
                                flat = toks[:, None].to(tl.int64) * K + offs_k[None, :]
                                ex = tl.load(idx_ptr + flat, mask=mk, other=-1)
                                ps = tl.load(pos_ptr + flat, mask=mk, other=0)  # beside ex, not after it
                                here = (ex >= 0) & (ex // L == p)
                                base = tl.load(plan_ptr + PLAN_HDR + tl.where(here, ex, 0), mask=mk & here, other=0)
                                rows = tl.where(here, base + ps, -1)
                                wt = tl.load(w_ptr + flat, mask=mk, other=0.0)
                                moff = (slot + oc[:, None]).to(tl.int64) * K + offs_k[None, :]
                                tl.store(dl.symm_at(ring_rows_ptr, team_pe(p, pe0, pes)) + moff, rows, mask=mk)
                                tl.store(dl.symm_at(ring_w_ptr, team_pe(p, pe0, pes)) + moff, wt, mask=mk)
                        _fence()
                        dl.notify(ready_ptr + (rank * S + s) * SIG, team_pe(p, pe0, pes), g + 1)
                else:
                    src = (rank + world - 1 - i) % world
                    n = tl.load(plan_ptr + PLAN_HDR + E + src)
                    if c * chunk < n:
                        g = tl.load(seq_ptr + (S + s) * world + src) + c
                        wait_ge(ready_ptr + (src * S + s) * SIG, g + 1)
                        if s != 0:
                            wait_ge(ready_ptr + (src * S) * SIG, g + 1)
                        slot = (src * nbuf + g % nbuf) * chunk
                        cnt = tl.minimum(chunk, n - c * chunk)
                        for r0 in range(0, cnt, BLOCK_C):
                            oc = r0 + offs_c
                            cm = oc < cnt
                            mk = cm[:, None] & km[None, :]
                            moff = (slot + oc[:, None]).to(tl.int64) * K + offs_k[None, :]
                            rows = tl.load(ring_rows_ptr + moff, mask=mk, other=-1)
                            for h0 in range(c0, c1, BLOCK_H):
                                hm = (h0 + offs_h) < c1
                                m2 = cm[:, None] & hm[None, :]
                                v = tl.load(ring_ptr + (slot + oc[:, None]).to(tl.int64) * H + h0 + offs_h[None, :],
                                            mask=m2)
                                _store_pairs(out_ptr, v, rows, m2, h0, offs_h, offs_k, H, K)
                            if s == 0:
                                tokn = tl.load(plan_ptr + PLAN_HDR + E + world + src) + c * chunk + oc
                                hoff = tokn[:, None].to(tl.int64) * K + offs_k[None, :]
                                tl.store(h_rows_ptr + hoff, rows, mask=mk)
                                tl.store(h_w_ptr + hoff, tl.load(ring_w_ptr + moff, mask=mk, other=0.0), mask=mk)
                        dl.notify(credit_ptr + (rank * S + s) * SIG, team_pe(src, pe0, pes), g + 1)
        # this slice's sequence numbers (each slice keeps its own: no race between slices)
        for p in range(0, world):
            if sender:
                n = tl.load(plan_ptr + PLAN_HDR + E + 2 * world + p)
                tl.store(seq_ptr + s * world + p, tl.load(seq_ptr + s * world + p) + (n + chunk - 1) // chunk)
            else:
                n = tl.load(plan_ptr + PLAN_HDR + E + p)
                q = seq_ptr + (S + s) * world + p
                tl.store(q, tl.load(q) + (n + chunk - 1) // chunk)


@triton.jit
def _pair_sum(y_ptr, h_rows_ptr, h_w_ptr, hrow, live, h0, hm, offs_h, H, K,
              BLOCK_R: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """fp32 (BLOCK_R, BLOCK_H): per received token (``live`` rows), the weighted sum over k ascending
    of its pairs' rows of y, columns h0 + offs_h where ``hm``; ``hrow`` (BLOCK_R,) int64 is each
    token's first entry in the handle's ``h_rows`` / ``h_w`` (row of y or -1: no pair here; weight).
    Both combines' expert side. The k loop is unrolled and each k's row index is loaded on its own,
    so the K row loads of a tile are independent of each other and in flight together (a loop over
    a runtime K waited for each load in turn); the sum keeps k's order."""
    acc = tl.zeros([BLOCK_R, BLOCK_H], dtype=tl.float32)
    for k in tl.static_range(BLOCK_K):
        km = live & (k < K)
        rk = tl.load(h_rows_ptr + hrow + k, mask=km, other=-1)
        wk = tl.load(h_w_ptr + hrow + k, mask=km, other=0.0)
        m2 = (rk >= 0)[:, None] & hm[None, :]
        yv = tl.load(y_ptr + tl.maximum(rk, 0)[:, None].to(tl.int64) * H + h0 + offs_h[None, :], mask=m2, other=0.0)
        acc += wk[:, None] * yv.to(tl.float32)
    return acc


@triton.jit
def _visit_ends(spos_ptr, toks, live, rank, world, chunk, offs_w, BLOCK_W: tl.constexpr):
    """(first, last) (BLOCK_C,) int32: the visit keys of the first and the last row the home's
    combine receivers take for each token of ``toks`` (where ``live``): source p's row of t comes in
    chunk round spos[t, p] // chunk, as the i(p)-th source of the round (i(p) = (rank - 1 - p) mod W,
    the receivers' order), key = round * W + i(p); -1 / -1 for a token sent nowhere."""
    wm = offs_w < world
    sp = tl.load(spos_ptr + toks[:, None].to(tl.int64) * world + offs_w[None, :], mask=live[:, None] & wm[None, :],
                 other=-1)
    key = (sp // chunk) * world + (rank + world - 1 - offs_w[None, :]) % world
    big = 1 << 30
    first = tl.min(tl.where(sp >= 0, key, big), axis=1)
    last = tl.max(tl.where(sp >= 0, key, -1), axis=1)
    return tl.where(first == big, -1, first), last


@triton.jit
def moe_ht_combine_kernel(y_ptr, h_rows_ptr, h_w_ptr, plan_ptr, send_list_ptr, spos_ptr,
                          ring_ptr, ready_ptr, credit_ptr, seq_ptr, acc_ptr, out_ptr,
                          rank, world, pe0, pes, H, K, E, T, max_tokens, chunk, nbuf, S,
                          BLOCK_C: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr,
                          BLOCK_W: tl.constexpr):
    """Expert side (programs [0, S)): per home rank r, chunk by chunk, the weighted sum of each
    received token's pairs here (k ascending, fp32) rounded to y's dtype into r's ring. Home
    (programs [S, 2S)): the rows of token t summed in fp32 in the fixed visit order (chunk round c,
    then source i, so source p's row of t comes at key (spos[t, p] // chunk) * W + i(p)) and rounded
    once: t's first row is stored into ``acc`` (uninitialised: nothing reads it first), a middle one
    added to it, and the last one added and rounded straight into ``out``; a token with no row
    anywhere gets 0 at the end. ``plan_ptr`` is the dispatch's plan, ``spos_ptr`` its (T, W) send
    positions."""
    pid = tl.program_id(0)
    sender = pid < S
    s = tl.where(sender, pid, pid - S)
    cols = tl.cdiv(tl.cdiv(H, S), BLOCK_H) * BLOCK_H  # slices in whole column blocks (aligned tiles)
    c0 = s * cols
    c1 = tl.minimum(H, c0 + cols)
    offs_c = tl.arange(0, BLOCK_C)
    offs_h = tl.arange(0, BLOCK_H)
    offs_w = tl.arange(0, BLOCK_W)
    maxc = tl.load(plan_ptr + 5)
    for c in range(0, maxc):
        for i in range(0, world):
            if sender:
                home = (rank + 1 + i) % world
                n = tl.load(plan_ptr + PLAN_HDR + E + home)
                if c * chunk < n:
                    g = tl.load(seq_ptr + s * world + home) + c
                    if g >= nbuf:
                        wait_ge(credit_ptr + (home * S + s) * SIG, g + 1 - nbuf)
                    slot = (rank * nbuf + g % nbuf) * chunk
                    cnt = tl.minimum(chunk, n - c * chunk)
                    dst = dl.symm_at(ring_ptr, team_pe(home, pe0, pes))
                    for r0 in range(0, cnt, BLOCK_C):  # the chunk in tiles of BLOCK_C rows
                        oc = r0 + offs_c
                        cm = oc < cnt
                        tokn = tl.load(plan_ptr + PLAN_HDR + E + world + home) + c * chunk + oc
                        for h0 in range(c0, c1, BLOCK_H):
                            hm = (h0 + offs_h) < c1
                            acc = _pair_sum(y_ptr, h_rows_ptr, h_w_ptr, tokn.to(tl.int64) * K, cm, h0, hm, offs_h,
                                            H, K, BLOCK_C, BLOCK_H, BLOCK_K)
                            tl.store(dst + (slot + oc[:, None]).to(tl.int64) * H + h0 + offs_h[None, :],
                                     acc.to(ring_ptr.dtype.element_ty), mask=cm[:, None] & hm[None, :])
                    _fence()
                    dl.notify(ready_ptr + (rank * S + s) * SIG, team_pe(home, pe0, pes), g + 1)
            else:
                src = (rank + world - 1 - i) % world
                n = tl.load(plan_ptr + PLAN_HDR + E + 2 * world + src)
                if c * chunk < n:
                    g = tl.load(seq_ptr + (S + s) * world + src) + c
                    wait_ge(ready_ptr + (src * S + s) * SIG, g + 1)
                    slot = (src * nbuf + g % nbuf) * chunk
                    cnt = tl.minimum(chunk, n - c * chunk)
                    lst = send_list_ptr + src * max_tokens + c * chunk
                    toks_next = tl.load(lst + offs_c, mask=offs_c < cnt, other=0)  # one tile ahead
                    for r0 in range(0, cnt, BLOCK_C):
                        oc = r0 + offs_c
                        cm = oc < cnt
                        toks = toks_next
                        toks_next = tl.load(lst + BLOCK_C + oc, mask=(oc + BLOCK_C) < cnt, other=0)
                        first, last = _visit_ends(spos_ptr, toks, cm, rank, world, chunk, offs_w, BLOCK_W)
                        key = c * world + i
                        for h0 in range(c0, c1, BLOCK_H):
                            hm = (h0 + offs_h) < c1
                            m2 = cm[:, None] & hm[None, :]
                            rrow = (slot + oc[:, None]).to(tl.int64) * H
                            v = tl.load(ring_ptr + rrow + h0 + offs_h[None, :], mask=m2)
                            toff = toks[:, None].to(tl.int64) * H + h0 + offs_h[None, :]
                            part = tl.load(acc_ptr + toff, mask=m2 & (first != key)[:, None], other=0.0)
                            part += v.to(tl.float32)
                            tl.store(acc_ptr + toff, part, mask=m2 & (last != key)[:, None])
                            tl.store(out_ptr + toff, part.to(out_ptr.dtype.element_ty),
                                     mask=m2 & (last == key)[:, None])
                    dl.notify(credit_ptr + (rank * S + s) * SIG, team_pe(src, pe0, pes), g + 1)
    for p in range(0, world):
        if sender:
            n = tl.load(plan_ptr + PLAN_HDR + E + p)
            tl.store(seq_ptr + s * world + p, tl.load(seq_ptr + s * world + p) + (n + chunk - 1) // chunk)
        else:
            n = tl.load(plan_ptr + PLAN_HDR + E + 2 * world + p)
            tl.store(seq_ptr + (S + s) * world + p, tl.load(seq_ptr + (S + s) * world + p) + (n + chunk - 1) // chunk)
    if not sender:  # tokens with no row anywhere (no pair, or every pair an empty slot): 0
        for t0 in range(0, T, BLOCK_C):
            toks = t0 + offs_c
            tm = toks < T
            _, last = _visit_ends(spos_ptr, toks, tm, rank, world, chunk, offs_w, BLOCK_W)
            zero = tl.zeros([BLOCK_C, BLOCK_H], dtype=out_ptr.dtype.element_ty)
            for h0 in range(c0, c1, BLOCK_H):
                m2 = (tm & (last < 0))[:, None] & ((h0 + offs_h) < c1)[None, :]
                tl.store(out_ptr + toks[:, None].to(tl.int64) * H + h0 + offs_h[None, :], zero, mask=m2)


# ---------------------------------------------------------------------------------------------
# low latency: one launch each way, epoch on the device

@triton.jit
def _epoch_leave(ctl_ptr, e):
    """The last program of the launch records epoch e (slot 1 counts programs out, only grows)."""
    old = tl.atomic_add(ctl_ptr + SIG, 1, sem="acq_rel", scope="gpu")
    if old == e * tl.num_programs(0) - 1:
        tl.store(ctl_ptr, e)


@triton.jit
def moe_ll_dispatch_kernel(x_ptr, idx_ptr, w_ptr, T, T_real,
                           area_ptr, meta_j_ptr, meta_pos_ptr, meta_w_ptr, hdr_ptr, flag_ptr, ctl_ptr,
                           out_ptr, counts_ptr, spos_ptr, h_rows_ptr, h_w_ptr, n_recv_ptr, status_ptr,
                           rank, world, pe0, pes, H, K, L, E, max_tokens, HDR, S,
                           BLOCK_T: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_H: tl.constexpr,
                           BLOCK_K: tl.constexpr, BLOCK_L: tl.constexpr, SCAN_QUAD: tl.constexpr = False):
    """Programs [0, W * S): the sender (destination p, slice s) = ((rank + 1 + pid // S) % W, pid % S)
    writes, into p's area [parity][rank], the columns of slice s of every token it sends there
    (tiles of BLOCK_R tokens), the positions of the pairs of p's local experts j = s, s + S, ... (the
    pair's rank among this rank's pairs of j) and those experts' pair counts (header words 8 + j);
    slice 0 also the local expert ids, the weights and the header (token count, status). Then fence,
    flag (parity, rank, s) = epoch. Every program then waits for the W * S flags, checks every
    status, and expands token-major: work items (source r, BLOCK_R tokens, BLOCK_H columns), each
    row read once and stored into the rows of its pairs here (group j: sources in order, each
    source's pairs in its order; the row base of (r, j) from the headers' counts of sources < r)."""
    pid = tl.program_id(0)
    e = tl.load(ctl_ptr) + 1
    par = e % 2
    offs_t = tl.arange(0, BLOCK_T)
    offs_r = tl.arange(0, BLOCK_R)
    offs_k = tl.arange(0, BLOCK_K)
    offs_h = tl.arange(0, BLOCK_H)
    offs_l = tl.arange(0, BLOCK_L)
    km = offs_k < K
    G = world * max_tokens
    if pid < world * S:
        p = (rank + 1 + pid // S) % world
        s = pid % S
        tm = offs_t < T
        m2 = tm[:, None] & km[None, :]
        flat = offs_t[:, None].to(tl.int64) * K + offs_k[None, :]
        idx = tl.load(idx_ptr + flat, mask=m2, other=-1)
        bad = m2 & ((idx < -1) | (idx >= E))
        fbad = tl.min(tl.min(tl.where(bad, offs_t[:, None] * K + offs_k[None, :], 1 << 30), axis=1), axis=0)
        code = tl.where(fbad < (1 << 30), 1, 0)
        code = tl.where(T_real > max_tokens, 2, code)
        here = (idx >= 0) & (idx < E) & (idx // L == p) & m2 & (code == 0)
        sent = tl.max(here.to(tl.int32), axis=1)
        sp = _cumsum0(sent, offs_t, SCAN_QUAD) - 1
        sm = sent > 0
        slotbase = (par * world + rank) * max_tokens
        mo = (slotbase + tl.maximum(sp, 0)[:, None]).to(tl.int64) * K + offs_k[None, :]
        mk = sm[:, None] & km[None, :]
        hdr = dl.symm_at(hdr_ptr, team_pe(p, pe0, pes))
        # pair positions among this rank's pairs of each local expert of p that this slice owns
        jj = tl.where(here, idx - p * L, 0)
        mine = here & (jj % S == s)
        pos = tl.zeros([BLOCK_T, BLOCK_K], dtype=tl.int32)
        cnt = tl.zeros([BLOCK_L], dtype=tl.int32)
        for j in range(s, L, S):
            hit = (here & (jj == j)).to(tl.int32)
            per_tok = tl.sum(hit, axis=1)
            before = _cumsum0(per_tok, offs_t, SCAN_QUAD) - per_tok
            pos = tl.where(hit > 0, before[:, None] + _cumsum1(hit, offs_k, BLOCK_K, SCAN_QUAD) - 1, pos)
            cnt = tl.where(offs_l == j, tl.sum(per_tok, axis=0), cnt)
        tl.store(dl.symm_at(meta_pos_ptr, team_pe(p, pe0, pes)) + mo, pos, mask=mk & mine)
        tl.store(hdr + ((8 + offs_l) * 2 + par) * world + rank, cnt, mask=(offs_l < L) & (offs_l % S == s))
        if s == 0:
            tl.store(spos_ptr + offs_t * world + p, tl.where(sm, sp, -1), mask=tm)
            tl.store(dl.symm_at(meta_j_ptr, team_pe(p, pe0, pes)) + mo, tl.where(here, jj, -1), mask=mk)
            tl.store(dl.symm_at(meta_w_ptr, team_pe(p, pe0, pes)) + mo, tl.load(w_ptr + flat, mask=m2, other=0.0),
                     mask=mk)
            # one vector store of the header words (n, code, a, b, c): triton-ascend 3.2 cannot store
            # a scalar at a constant offset from a translated pointer
            n = tl.sum(sent, axis=0)
            offs_hd = tl.arange(0, 8)
            bval = tl.load(idx_ptr + tl.where(code == 1, fbad, 0), mask=code == 1, other=0)
            words = tl.where(offs_hd == 0, n, tl.where(offs_hd == 1, code, tl.where(
                offs_hd == 2, tl.where(code == 2, T_real, fbad // K), tl.where(
                    offs_hd == 3, tl.where(code == 2, max_tokens, fbad % K), bval))))
            tl.store(hdr + (offs_hd * 2 + par) * world + rank, words, mask=offs_hd < 5)
        # the payload: this slice's columns of every token sent to p, BLOCK_R tokens a tile
        cols = tl.cdiv(tl.cdiv(H, S), BLOCK_H) * BLOCK_H  # slices in whole column blocks (aligned tiles)
        c0 = s * cols
        c1 = tl.minimum(H, c0 + cols)
        dst = dl.symm_at(area_ptr, team_pe(p, pe0, pes))
        for t0 in range(0, T, BLOCK_R):
            ot = t0 + offs_r
            xrow = x_ptr + ot[:, None].to(tl.int64) * H + offs_h[None, :]
            # the tokens' first column tile is in flight while the tile's send positions are worked
            # out (it reads the tokens not sent to p too: a load that waits on nothing)
            v = tl.load(xrow + c0, mask=(ot < T)[:, None] & ((c0 + offs_h) < c1)[None, :])
            mr = (ot < T)[:, None] & km[None, :]
            idr = tl.load(idx_ptr + ot[:, None].to(tl.int64) * K + offs_k[None, :], mask=mr, other=-1)
            hr = (idr >= 0) & (idr < E) & (idr // L == p) & mr & (code == 0)
            sr = tl.max(hr.to(tl.int32), axis=1)
            spr = tl.sum(tl.where(offs_t < t0, sent, 0), axis=0) + _cumsum0(sr, offs_r, SCAN_QUAD) - 1
            drow = (slotbase + tl.maximum(spr, 0)[:, None]).to(tl.int64) * H
            for h0 in range(c0, c1, BLOCK_H):
                mm = (sr > 0)[:, None] & ((h0 + offs_h) < c1)[None, :]
                vn = tl.load(xrow + h0 + BLOCK_H, mask=(ot < T)[:, None] & ((h0 + BLOCK_H + offs_h) < c1)[None, :])
                tl.store(dst + drow + h0 + offs_h[None, :], v, mask=mm)
                v = vn
        _fence()
        dl.notify(flag_ptr + ((par * world + rank) * S + s) * SIG, team_pe(p, pe0, pes), e)
    tok = dl.wait(flag_ptr + par * world * S * SIG, world * S, "sys", "acquire", waitValue=e, slot_stride=8)
    hdrs = dl.consume_token(hdr_ptr, tok)  # word w of source r: hdrs[(w * 2 + par) * world + r]
    offs_w = tl.arange(0, BLOCK_T)
    st = tl.load(hdrs + (2 + par) * world + offs_w, mask=offs_w < world, other=0)
    bad_pe = tl.min(tl.where(st != 0, offs_w, 1 << 30), axis=0)
    if bad_pe < world:
        if pid == 0:
            tl.store(status_ptr, tl.load(hdrs + (2 + par) * world + bad_pe))
            tl.store(status_ptr + 1, bad_pe)
            tl.store(status_ptr + 2, tl.load(hdrs + (4 + par) * world + bad_pe))
            tl.store(status_ptr + 3, tl.load(hdrs + (6 + par) * world + bad_pe))
            tl.store(status_ptr + 4, tl.load(hdrs + (8 + par) * world + bad_pe))
    else:
        area = dl.consume_token(area_ptr, tok)
        meta_j = dl.consume_token(meta_j_ptr, tok)
        meta_pos = dl.consume_token(meta_pos_ptr, tok)
        meta_w = dl.consume_token(meta_w_ptr, tok)
        if pid == 0:
            tl.store(status_ptr, bad_pe * 0)
            tot = tl.zeros([BLOCK_L], dtype=tl.int32)
            for r in range(0, world):
                tot += tl.load(hdrs + ((8 + offs_l) * 2 + par) * world + r, mask=offs_l < L, other=0)
                tl.store(n_recv_ptr + r, tl.load(hdrs + par * world + r))
            tl.store(counts_ptr + offs_l, tot, mask=offs_l < L)
        nblk = tl.cdiv(H, BLOCK_H)
        tb = tl.cdiv(max_tokens, BLOCK_R)
        for q in range(pid, world * tb * nblk, tl.num_programs(0)):
            r = q // (tb * nblk)
            t0 = (q // nblk) % tb * BLOCK_R
            h0 = q % nblk * BLOCK_H
            n = tl.load(hdrs + par * world + r)
            if t0 < n:
                ot = t0 + offs_r
                rm = ot < n
                hm = (h0 + offs_h) < H
                # the rows' tile first: in flight while their pairs' output rows are worked out
                v = tl.load(area + ((par * world + r) * max_tokens + ot[:, None]).to(tl.int64) * H + h0 +
                            offs_h[None, :], mask=rm[:, None] & hm[None, :])
                mk = rm[:, None] & km[None, :]
                mb = ((par * world + r) * max_tokens + ot[:, None]).to(tl.int64) * K + offs_k[None, :]
                mj = tl.load(meta_j + mb, mask=mk, other=-1)
                hit = mj >= 0
                off = tl.load(meta_pos + mb, mask=mk & hit, other=0)
                for r2 in range(0, r):  # the pairs of the same expert from the sources before r
                    off += tl.load(hdrs + ((8 + tl.maximum(mj, 0)) * 2 + par) * world + r2, mask=mk & hit, other=0)
                rows = tl.where(hit, mj * G + off, -1)
                if h0 == 0:  # the handle: each (token, k) entry once, -1 where k lives elsewhere
                    hoff = (r * max_tokens + ot[:, None]).to(tl.int64) * K + offs_k[None, :]
                    tl.store(h_rows_ptr + hoff, rows, mask=mk)
                    tl.store(h_w_ptr + hoff, tl.load(meta_w + mb, mask=mk, other=0.0), mask=mk)
                _store_pairs(out_ptr, v, rows, rm[:, None] & hm[None, :], h0, offs_h, offs_k, H, K)
    _epoch_leave(ctl_ptr, e)


@triton.jit
def moe_ll_combine_kernel(y_ptr, h_rows_ptr, h_w_ptr, n_recv_ptr, spos_ptr, T,
                          area_ptr, flag_ptr, ctl_ptr, out_ptr,
                          rank, world, pe0, pes, H, K, max_tokens, S,
                          BLOCK_T: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr):
    """Programs (home r, column slice s) = (pid // S, pid % S) for pid < W * S: the weighted sums of
    the tokens received from r (k ascending, fp32, rounded to y's dtype) into r's area
    [parity][rank]; flag (parity, rank, s) = epoch at r. Then every program: wait for the W * S
    flags, and sum, for its token blocks and columns, the rows of the ranks in rank order (fp32,
    one rounding). Token t's row from rank p is at spos[t, p] (-1: t was not sent there)."""
    pid = tl.program_id(0)
    e = tl.load(ctl_ptr) + 1
    par = e % 2
    offs_t = tl.arange(0, BLOCK_T)
    offs_h = tl.arange(0, BLOCK_H)
    cols = tl.cdiv(tl.cdiv(H, S), BLOCK_H) * BLOCK_H  # slices in whole column blocks (aligned tiles)
    if pid < world * S:
        home = (rank + 1 + pid // S) % world
        s = pid % S
        n = tl.load(n_recv_ptr + home)
        rm = offs_t < n
        hrow = (home * max_tokens + offs_t).to(tl.int64) * K
        dst = dl.symm_at(area_ptr, team_pe(home, pe0, pes))
        for h0 in range(s * cols, tl.minimum(H, s * cols + cols), BLOCK_H):
            hm = (h0 + offs_h) < tl.minimum(H, s * cols + cols)
            acc = _pair_sum(y_ptr, h_rows_ptr, h_w_ptr, hrow, rm, h0, hm, offs_h, H, K, BLOCK_T, BLOCK_H, BLOCK_K)
            drow = ((par * world + rank) * max_tokens + offs_t[:, None]).to(tl.int64) * H
            tl.store(dst + drow + h0 + offs_h[None, :],
                     acc.to(area_ptr.dtype.element_ty), mask=rm[:, None] & hm[None, :])
        _fence()
        dl.notify(flag_ptr + ((par * world + rank) * S + s) * SIG, team_pe(home, pe0, pes), e)
    tok = dl.wait(flag_ptr + par * world * S * SIG, world * S, "sys", "acquire", waitValue=e, slot_stride=8)
    area = dl.consume_token(area_ptr + par * world * max_tokens * H, tok)
    nblk = tl.cdiv(H, BLOCK_H)
    for q in range(pid, tl.cdiv(T, BLOCK_T) * nblk, tl.num_programs(0)):
        t0 = (q // nblk) * BLOCK_T
        h0 = (q % nblk) * BLOCK_H
        tm = (t0 + offs_t) < T
        hm = (h0 + offs_h) < H
        acc = tl.zeros([BLOCK_T, BLOCK_H], dtype=tl.float32)
        for p in range(0, world):
            sp = tl.load(spos_ptr + (t0 + offs_t) * world + p, mask=tm, other=-1)
            m2 = (tm & (sp >= 0))[:, None] & hm[None, :]
            arow = (p * max_tokens + tl.maximum(sp, 0)[:, None]).to(tl.int64) * H
            v = tl.load(area + arow + h0 + offs_h[None, :], mask=m2, other=0.0)
            acc += v.to(tl.float32)
        tl.store(out_ptr + (t0 + offs_t[:, None]).to(tl.int64) * H + h0 + offs_h[None, :],
                 acc.to(out_ptr.dtype.element_ty), mask=tm[:, None] & hm[None, :])
    _epoch_leave(ctl_ptr, e)


def compile_cases(dtype="fp16"):
    """(name, jit function, signature, constexprs, options) of every MoE kernel, for ahead-of-time
    compiles, with the warps MoeBuffer launches them with. Every constexpr is given, defaults too:
    Triton 3.9's ahead-of-time compile does not fill them."""
    p = f"*{dtype}"
    i = "i32"
    es = 4 if dtype == "fp32" else 2
    ht_rows = ht_tile_rows(256, 256, es, 256, es)  # the tiles of a 256-token chunk
    layout = ({"idx_ptr": "*i32", "pos_ptr": "*i32", "row_ptr": "*i32", "send_list_ptr": "*i32", "spos_ptr": "*i32",
               "T": i, "T_real": i, "E": i, "L": i, "K": i, "W": i, "max_tokens": i},
              {"BLOCK_T": 128, "BLOCK_K": 8, "SCAN_QUAD": False})
    counts = ({"row_ptr": "*i32", "cnt_ptr": "*i32", "flag_ptr": "*i64", "ctl_ptr": "*i64", "plan_ptr": "*i32",
               "counts_out_ptr": "*i32", "rank": i, "world": i, "pe0": i, "pes": i, "E": i, "L": i, "R": i,
                   "max_recv": i, "chunk": i},
              {"BLOCK_R": 512, "BLOCK_E": 256, "BLOCK_W": 8, "SCAN_QUAD": False})
    ht = ({"x_ptr": p, "idx_ptr": "*i32", "w_ptr": "*fp32", "pos_ptr": "*i32", "send_list_ptr": "*i32",
           "plan_ptr": "*i32", "ring_ptr": p, "ring_rows_ptr": "*i32", "ring_w_ptr": "*fp32", "ready_ptr": "*i64",
           "credit_ptr": "*i64", "seq_ptr": "*i64", "out_ptr": p, "h_rows_ptr": "*i32", "h_w_ptr": "*fp32",
           "rank": i, "world": i, "pe0": i, "pes": i, "H": i, "K": i, "L": i, "E": i, "max_tokens": i, "chunk": i,
               "nbuf": i, "S": i},
          {"BLOCK_C": ht_rows[0], "BLOCK_H": 256, "BLOCK_K": 8})
    htc = ({"y_ptr": p, "h_rows_ptr": "*i32", "h_w_ptr": "*fp32", "plan_ptr": "*i32", "send_list_ptr": "*i32",
            "spos_ptr": "*i32", "ring_ptr": p, "ready_ptr": "*i64", "credit_ptr": "*i64", "seq_ptr": "*i64",
            "acc_ptr": "*fp32",
            "out_ptr": p, "rank": i, "world": i, "pe0": i, "pes": i, "H": i, "K": i, "E": i, "T": i, "max_tokens": i,
                "chunk": i,
            "nbuf": i, "S": i},
           {"BLOCK_C": ht_rows[1], "BLOCK_H": 256, "BLOCK_K": 8, "BLOCK_W": 8})
    lld = ({"x_ptr": p, "idx_ptr": "*i32", "w_ptr": "*fp32", "T": i, "T_real": i, "area_ptr": p, "meta_j_ptr": "*i32",
            "meta_pos_ptr": "*i32", "meta_w_ptr": "*fp32", "hdr_ptr": "*i32", "flag_ptr": "*i64", "ctl_ptr": "*i64",
            "out_ptr": p, "counts_ptr": "*i32", "spos_ptr": "*i32", "h_rows_ptr": "*i32", "h_w_ptr": "*fp32",
            "n_recv_ptr": "*i32", "status_ptr": "*i32", "rank": i, "world": i, "pe0": i, "pes": i, "H": i, "K": i,
                "L": i, "E": i,
            "max_tokens": i, "HDR": i, "S": i},
           {"BLOCK_T": 128, "BLOCK_R": 32, "BLOCK_H": 256, "BLOCK_K": 8, "BLOCK_L": 128, "SCAN_QUAD": False})
    llc = ({"y_ptr": p, "h_rows_ptr": "*i32", "h_w_ptr": "*fp32", "n_recv_ptr": "*i32", "spos_ptr": "*i32", "T": i,
            "area_ptr": p, "flag_ptr": "*i64", "ctl_ptr": "*i64", "out_ptr": p, "rank": i, "world": i, "pe0": i,
                "pes": i, "H": i,
            "K": i, "max_tokens": i, "S": i},
           {"BLOCK_T": 128, "BLOCK_H": 256 // es, "BLOCK_K": 8})
    pack = ({"x_ptr": p, "codes_ptr": "*u8", "scales_ptr": "*fp32", "H": i, "row_bytes": i},
            {"BLOCKS": 8, "BLOCK": FP8_BLOCK})
    w4, w8 = {"num_warps": 4}, {"num_warps": 8}  # as MoeBuffer launches them
    return [("moe_fp8_pack", moe_fp8_pack_kernel, *pack, w4),
            ("moe_layout", moe_layout_kernel, *layout, w4),
            ("moe_counts", moe_counts_kernel, *counts, w4),
            ("moe_ht_dispatch", moe_ht_dispatch_kernel, *ht, w4),
            ("moe_ht_combine", moe_ht_combine_kernel, *htc, w8),
            ("moe_ll_dispatch", moe_ll_dispatch_kernel, *lld, w4),
            ("moe_ll_combine", moe_ll_combine_kernel, *llc, w8)]


# ---------------------------------------------------------------------------------------------
# torch-facing buffer (CUDA backend)

def _err_text(code, pe, a, b, c, E):
    if code == STATUS_BAD_EXPERT:
        return f"PE {pe}: topk_idx[{a}, {b}] = {c} is outside [-1, {E})"
    if code == STATUS_TOO_MANY_TOKENS:
        return f"PE {pe}: {a} tokens exceed the buffer bound max_tokens = {b}"
    if code == STATUS_RECV_OVERFLOW:
        return f"PE {pe} would receive {a} rows, above the buffer bound max_recv_rows = {b}"
    return f"PE {pe}: status {code}"


class MoeHandle:
    """What combine (and the backward passes) need from one dispatch; device tensors only, so a
    dispatch / combine pair can be captured in a CUDA graph. ``status`` (int32, 5 words: code, PE,
    a, b, c; code 0 = good) says whether the dispatch moved data; ``check()`` raises on it (a host
    synchronisation)."""

    def __init__(self, buf, T, topk_idx, topk_weights, status, **tensors):
        self.buf, self.num_tokens, self.status = buf, T, status
        self.topk_idx, self.topk_weights = topk_idx, topk_weights
        for k, v in tensors.items():
            setattr(self, k, v)

    def check(self):
        from tdist.errors import InvalidValue
        code, pe, a, b, c = (int(v) for v in self.status[:5].tolist())
        if code != STATUS_OK:
            raise InvalidValue(f"moe_dispatch: {_err_text(code, pe, a, b, c, self.buf.num_experts)}; no data moved")

    def pair_rows(self):
        """(rows, ok), one entry per pair slot of ``h_rows`` (received token, k), flattened: the
        slot's row of the dispatch output (0 where it has none) and whether it has one. No host
        synchronisation: use ``ok`` to zero what the placeholder rows contribute."""
        torch = self.buf.torch
        rows = self.h_rows.reshape(-1).long()
        ok = rows >= 0
        return torch.where(ok, rows, 0), ok

    def row_weights(self):
        """(recv_rows,) float32: the routing weight of each row of the dispatch output (0 past the
        groups), on the device (combine's backward scales the rows of its gradient by it)."""
        torch = self.buf.torch
        rw = torch.zeros(self.buf.recv_rows, dtype=torch.float32, device=self.h_w.device)
        rows, ok = self.pair_rows()
        rw.index_put_((rows,), torch.where(ok, self.h_w.reshape(-1), 0.0), accumulate=True)
        return rw


_made = [0]


def ht_slices(hidden, dispatch_words, dispatch_block, resident):
    """Column slices of the high-throughput kernels. A slice moves whole column tiles, and a chunk
    waits for its slowest slice, so the slices are as many as the tiles where they fit: the
    dispatch's (``dispatch_words`` per row in tiles of ``dispatch_block``; fp8 at H = 7168: 29 of 64
    words) or the combine's (``hidden`` in tiles of 256 columns: 28), whichever are more, at most 32
    and at most ``resident`` (senders and receivers must all be co-resident). With 28 slices the
    fp8 dispatch gave two tiles to each of 15 slices and took 2.66 ms; with 29, one each, 1.41 ms
    (bf16: 1.36 ms; 2 ranks on one H200, benchmarks/NOTES.md)."""
    tiles = max(cdiv(hidden, 256), cdiv(dispatch_words, dispatch_block))
    return max(1, min(32, tiles, resident))


def ht_tile_rows(chunk, d_block_h, d_elem, c_block_h, c_elem):
    """(dispatch, combine) rows per tile of the high-throughput kernels (dispatch 4 warps, combine 8),
    at most a chunk: a chunk moves in tiles, so a larger chunk (fewer credit round trips) does not
    grow the programs' register tiles. The dispatch's tile (``d_block_h`` words of ``d_elem`` bytes)
    up to 32 KiB; the combine's, which holds an fp32 sum beside each loaded tile of ``c_elem``-byte
    elements, up to 64 KiB; both at most 64 rows. Past that the sm_90 builds spill their tile loops to
    local memory (ptxas, aligned operands, benchmarks/NOTES.md "The high-throughput MoE tiles and the
    register spills"): at 64 rows the 4-warp bf16 combine spilled 0.9 KB a thread and the fp32
    dispatch 0.7 KB; the 8-warp combine with its K pair loads in flight (``_pair_sum``) spills 160
    bytes at 64 bf16 rows and none at 32 (bf16 and fp32). Above 64 rows the combine ran 15-23x
    slower."""
    def rows(row_bytes, cap):
        r = 64
        while r > 1 and r * row_bytes > cap:
            r //= 2
        return min(r, pow2(chunk))
    return rows(d_block_h * d_elem, 32 << 10), rows(c_block_h * (4 + c_elem), 64 << 10)


def buffer_for(num_experts, hidden, topk, max_tokens, dtype, mode="high_throughput", **options):
    """The ``MoeBuffer`` of this configuration, made at its first use and kept in the resources
    (``ops.release()`` frees it)."""
    from ._resources import RESOURCES
    key = ("moe_buffer", num_experts, hidden, topk, max_tokens, str(dtype), mode, tuple(sorted(options.items())))
    return RESOURCES.local(key, lambda: MoeBuffer(num_experts, hidden, topk, max_tokens, dtype, mode=mode, **options))


class MoeBuffer:
    """Symmetric areas and device state of one MoE configuration (collective to make: every rank
    with the same arguments). See docs/MOE.md for the layouts and the protocols.

    ``dispatch(x, topk_idx, topk_weights)`` -> ``(recv_x, counts, handle)``; ``combine(y, handle)``
    -> ``out``. high_throughput: ``recv_x`` is ``(max_recv_rows, H)`` with the groups packed from
    row 0; low_latency: ``(L, W * max_tokens, H)``, group j's rows ``[0, counts[j])`` of slice j.
    """

    def __init__(self, num_experts, hidden, topk, max_tokens, dtype, mode="high_throughput", max_recv_rows=None,
                 chunk_tokens=None, buffer_num=4, slices=None, fp8=False, _tune=None):
        from ._resources import RESOURCES
        self.kernels = {}  # the compiled kernel of each launch name, as its last call returned it
        self._launches = {}  # the low-latency kernels' cached launches, by specialization (_ll_launch)
        torch, ash, tdist = RESOURCES.runtime()
        self.torch, self.ash = torch, ash
        # the team this buffer's ops run over (RESOURCES.scope: dispatch's group=), kept for combine
        self.team, self.pemap = RESOURCES.scope(), RESOURCES.pe_map()
        W, me = self.team.size, self.team.rank
        what = "moe"
        if mode not in MODES:
            raise KernelArgError(f"{what}: mode must be one of {MODES}, got {mode!r}")
        if num_experts < 1 or num_experts % W:
            raise KernelArgError(f"{what}: num_experts ({num_experts}) must be a positive multiple of the rank count "
                                 f"({W})")
        if not 1 <= topk <= num_experts:
            raise KernelArgError(f"{what}: topk ({topk}) must be in [1, num_experts = {num_experts}]")
        if hidden < 1 or max_tokens < 1:
            raise KernelArgError(f"{what}: hidden ({hidden}) and max_tokens ({max_tokens}) must be >= 1")
        if dtype not in (torch.bfloat16, torch.float16, torch.float32):
            raise KernelArgError(f"{what}: dtype must be bfloat16, float16 or float32, got {dtype}")
        if fp8 and hidden % FP8_BLOCK:
            raise KernelArgError(f"{what}: fp8=True needs hidden ({hidden}) to be a multiple of {FP8_BLOCK} (one scale "
                                 "per block)")
        L = num_experts // W
        # what dispatch moves per token: H elements of dtype, or a packed fp8 row of int32 words
        self.fp8 = bool(fp8)
        self.d_hidden, self.d_dtype = (fp8_row_words(hidden), torch.int32) if fp8 else (hidden, dtype)
        es = torch.empty((), dtype=self.d_dtype).element_size()
        self.mode, self.num_experts, self.hidden = mode, num_experts, hidden
        self.topk, self.max_tokens = topk, max_tokens
        self.dtype, self.W, self.me, self.L = dtype, W, me, L
        self.block_k = pow2(topk)
        if mode == "high_throughput":
            self.max_recv_rows = max_recv_rows or max_tokens * W * min(topk, L)
            # A chunk is one credit round trip per slice, and the rounds bound the pipeline: 4 MiB
            # chunks (256 tokens at H = 7168 bf16), moved in tiles of at most 64 rows, took dispatch
            # from 1990 to 1355 us and combine from 2387 to 2223 us against 1 MiB ones (2 ranks on one
            # H200, DeepSeek-V3's shape, benchmarks/NOTES.md). The rings grow with it: 2 x W x 4 x 256
            # tokens (235 MB at W = 8, H = 7168 bf16).
            self.chunk = chunk_tokens or max(1, min(256, (4 << 20) // (self.d_hidden * es)))
            self.nbuf = buffer_num
            # senders and receivers (2 S programs) wait on each other: all must be co-resident
            self.S = slices or ht_slices(hidden, self.d_hidden, self._dispatch_block_h(),
                                         resident_grid(RESOURCES.sm_budget(), 4) // 2)
            # launch shape: tile rows of the dispatch and the combine; _tune overrides them
            # (benchmarks/gpu_kernels/sweep_moe.py)
            shape = dict(zip(("d_rows", "c_rows"), ht_tile_rows(self.chunk, self._dispatch_block_h(), es,
                                                                 self._combine_block_h(),
                                                                 torch.empty((), dtype=dtype).element_size())))
            # 8 warps for the combine: its unrolled pair loads (_pair_sum) hold K tiles at once, which
            # spill at 4 warps (ptxas, aligned sm_90 builds)
            shape.update(d_warps=4, c_warps=8)
            shape.update(_tune or {})
            if self.nbuf < 2 or self.chunk < 1 or self.S < 1:
                raise KernelArgError(f"{what}: buffer_num >= 2, chunk_tokens >= 1 and slices >= 1 are required")
            self.recv_rows = self.max_recv_rows
            R = num_experts + W + 4
            self.R = R
            n_ring = W * self.nbuf * self.chunk
            specs = [([2 * W * R], torch.int32), ([2 * W * SIG_ELEMS], torch.int64),
                     ([n_ring * self.d_hidden], self.d_dtype), ([n_ring * topk], torch.int32),
                     ([n_ring * topk], torch.float32),
                     ([W * self.S * SIG_ELEMS], torch.int64), ([W * self.S * SIG_ELEMS], torch.int64),
                     ([n_ring * hidden], dtype),
                     ([W * self.S * SIG_ELEMS], torch.int64), ([W * self.S * SIG_ELEMS], torch.int64)]
        else:
            if max_tokens > 1024:
                raise KernelArgError(f"{what}: low_latency holds all tokens of a rank in one tile: max_tokens "
                                     f"({max_tokens}) must be <= 1024 (use high_throughput above that)")
            # launch shapes: tile rows / columns and warps of the dispatch (d_*) and the combine (c_*);
            # _tune overrides them, and may add d_grid / c_grid (benchmarks/gpu_kernels/sweep_moe.py)
            shape = {"d_rows": min(32, pow2(max_tokens)), "d_cols": min(256, pow2(self.d_hidden)), "d_warps": 4,
                     "c_cols": min(256 // torch.empty((), dtype=dtype).element_size(), pow2(hidden)), "c_warps": 8}
            shape.update(_tune or {})
            # combine: W * S programs (home rank, column slice), co-resident
            self.S = slices or max(1, min(32, cdiv(hidden, 256),
                                          resident_grid(RESOURCES.sm_budget(), shape["c_warps"]) // W))
            self.grid_c = max(self.W * self.S, shape.get("c_grid", 0))
            # dispatch: W * S_d senders (destination, slice: columns and a share of the experts' pair
            # positions), then every program of the co-resident grid expands
            resident = resident_grid(RESOURCES.sm_budget(), shape["d_warps"])
            self.S_d = max(1, min(32, resident // W))
            self.grid_d = max(W * self.S_d, shape.get("d_grid", resident))
            self.recv_rows = L * W * max_tokens
            self.HDR = 8 + L  # n, status (code, a, b, c), 3 spare, then the L per-expert pair counts
            n_area = 2 * W * max_tokens
            specs = [([n_area * self.d_hidden], self.d_dtype), ([n_area * topk], torch.int32),
                     ([n_area * topk], torch.int32),
                     ([n_area * topk], torch.float32), ([2 * W * self.HDR], torch.int32),
                     ([2 * W * self.S_d * SIG_ELEMS], torch.int64), ([n_area * hidden], dtype),
                     ([2 * W * self.S * SIG_ELEMS], torch.int64)]
        self.shape = shape  # the launch shape of this mode's kernels (the keys above)
        if torch.cuda.is_current_stream_capturing():
            raise KernelArgError(f"{what}: a buffer is made (collectively, with a synchronisation) outside CUDA-graph "
                                 "capture: make it, or call the op once, eagerly first")
        _made[0] += 1  # every rank makes its buffers in the same order: the same key everywhere
        key = ("moe", _made[0], mode, num_experts, hidden, topk, max_tokens, str(dtype), self.recv_rows, self.fp8)
        self.sym = RESOURCES.symmetric(key, *specs)
        dev = self.sym[0].device
        self.ctl = torch.zeros(4 * SIG_ELEMS, dtype=torch.int64, device=dev)  # call epochs (LL dispatch, combine)
        self.seq = torch.zeros(4 * self.S * W, dtype=torch.int64, device=dev)  # ring sequence numbers
        # every counter and flag starts at 0 on every rank before any peer can signal into it
        for t in self.sym:
            t.zero_()
        torch.cuda.synchronize()
        ash.team_barrier(self.team)

    # ---- high throughput ----

    def _ht_dispatch(self, x, idx, w, T_real, T, recv_x):
        torch = self.torch
        W, E, L, K, H, dev = self.W, self.num_experts, self.L, self.topk, self.d_hidden, x.device
        cnt, flag, ring, ring_rows, ring_w, ready, credit = self.sym[:7]
        pos = torch.empty((max(T, 1), K), dtype=torch.int32, device=dev)
        row = torch.empty(self.R, dtype=torch.int32, device=dev)
        send_list = torch.empty((W, self.max_tokens), dtype=torch.int32, device=dev)
        spos = torch.empty((max(T, 1), W), dtype=torch.int32, device=dev)
        plan = torch.empty(plan_len(E, W, L), dtype=torch.int32, device=dev)
        counts = torch.empty(L, dtype=torch.int32, device=dev)
        recv_x = torch.empty((self.recv_rows, H), dtype=self.d_dtype, device=dev) if recv_x is None else recv_x
        h_rows = torch.full((W * self.max_tokens, K), -1, dtype=torch.int32, device=dev)  # -1 past the tokens
        h_w = torch.empty((W * self.max_tokens, K), dtype=torch.float32, device=dev)
        bt = min(128, pow2(max(T, 1)))
        moe_layout_kernel[(E + W + 1,)](idx, pos, row, send_list, spos, T, T_real, E, L, K, W, self.max_tokens,
                                        BLOCK_T=bt, BLOCK_K=self.block_k)
        moe_counts_kernel[(1,)](row, cnt, flag, self.ctl, plan, counts, self.me, W, *self.pemap, E, L, self.R,
                                self.max_recv_rows, self.chunk, BLOCK_R=pow2(self.R), BLOCK_E=pow2(E),
                                BLOCK_W=pow2(W))
        self.kernels["ht_dispatch"] = moe_ht_dispatch_kernel[(2 * self.S,)](
            x, idx, w, pos, send_list, plan, ring, ring_rows, ring_w, ready, credit, self.seq, recv_x, h_rows, h_w,
            self.me, W, *self.pemap, H, K, L, E, self.max_tokens, self.chunk, self.nbuf, self.S,
            BLOCK_C=self.shape["d_rows"], BLOCK_H=self._dispatch_block_h(), BLOCK_K=self.block_k,
            num_warps=self.shape["d_warps"])
        h = MoeHandle(self, T, idx, w, plan, plan=plan, send_list=send_list, spos=spos, h_rows=h_rows, h_w=h_w)
        return recv_x, counts, h

    def _dispatch_block_h(self):
        """Columns per tile of the high-throughput dispatch. Each slice owns whole tiles, so with the
        packed fp8 rows (about a quarter of the words of bf16 rows: 1848 at H = 7168) 256-word tiles
        would leave most of the slices idle (8 of 28 at that shape, measured 23 % slower than bf16);
        with 64-word tiles the slices are as many as the tiles (29 at that shape, see ``S``)."""
        return 64 if self.fp8 else min(256, pow2(self.d_hidden))

    def _combine_block_h(self):
        """Columns per tile of the high-throughput combine (its slices' tiles and ``ht_tile_rows``)."""
        return min(256, pow2(self.hidden))

    def _ht_combine(self, y, h, h_w):
        torch = self.torch
        cring, cready, ccredit = self.sym[7:10]
        T, H = h.num_tokens, self.hidden
        # a token's partial sum between its first and its last row (only tokens with two or more)
        acc = torch.empty((max(T, 1), H), dtype=torch.float32, device=y.device)
        out = torch.empty((T, H), dtype=self.dtype, device=y.device)
        self.kernels["ht_combine"] = moe_ht_combine_kernel[(2 * self.S,)](
            y, h.h_rows, h_w, h.plan, h.send_list, h.spos, cring, cready, ccredit, self.seq[2 * self.S * self.W:], acc,
            out, self.me, self.W, *self.pemap, H, self.topk, self.num_experts, T, self.max_tokens, self.chunk,
            self.nbuf, self.S,
            BLOCK_C=self.shape["c_rows"], BLOCK_H=self._combine_block_h(), BLOCK_K=self.block_k,
            BLOCK_W=pow2(self.W), num_warps=self.shape["c_warps"])
        return out

    # ---- low latency ----

    def _ll_dispatch(self, x, idx, w, T_real, T, recv_x):
        torch = self.torch
        W, E, L, K, H, dev = self.W, self.num_experts, self.L, self.topk, self.d_hidden, x.device
        area, meta_j, meta_pos, meta_w, hdr, flag = self.sym[:6]
        recv_x = torch.empty((L, W * self.max_tokens, H), dtype=self.d_dtype, device=dev) if recv_x is None else recv_x
        counts = torch.empty(L, dtype=torch.int32, device=dev)
        spos = torch.empty((max(T, 1), W), dtype=torch.int32, device=dev)
        h_rows = torch.full((W * self.max_tokens, K), -1, dtype=torch.int32, device=dev)  # -1 past the tokens
        h_w = torch.empty((W * self.max_tokens, K), dtype=torch.float32, device=dev)
        n_recv = torch.empty(W, dtype=torch.int32, device=dev)
        status = torch.zeros(8, dtype=torch.int32, device=dev)
        # the W * S_d senders, then every program expands (source, tokens, columns): all co-resident
        shape = self.shape
        self._ll_launch(
            "ll_dispatch", moe_ll_dispatch_kernel, self.grid_d, (T, T_real), (x, idx, w, recv_x),
            (x, idx, w, T, T_real, area, meta_j, meta_pos, meta_w, hdr, flag, self.ctl, recv_x, counts, spos,
             h_rows, h_w, n_recv, status, self.me, W, *self.pemap, H, K, L, E, self.max_tokens, self.HDR, self.S_d),
            dict(BLOCK_T=pow2(max(self.max_tokens, W)), BLOCK_R=shape["d_rows"], BLOCK_H=shape["d_cols"],
                 BLOCK_K=self.block_k, BLOCK_L=pow2(L)),
            shape["d_warps"])
        h = MoeHandle(self, T, idx, w, status, spos=spos, h_rows=h_rows, h_w=h_w, n_recv=n_recv)
        return recv_x, counts, h

    def _ll_combine(self, y, h, h_w):
        torch = self.torch
        area, flag = self.sym[6], self.sym[7]
        T, H = h.num_tokens, self.hidden
        out = torch.empty((T, H), dtype=self.dtype, device=y.device)
        shape = self.shape
        self._ll_launch(
            "ll_combine", moe_ll_combine_kernel, self.grid_c, (T,), (y, h.h_rows, h_w, h.n_recv, h.spos, out),
            (y, h.h_rows, h_w, h.n_recv, h.spos, T, area, flag, self.ctl[2 * SIG_ELEMS:], out,
             self.me, self.W, *self.pemap, H, self.topk, self.max_tokens, self.S),
            dict(BLOCK_T=pow2(max(self.max_tokens, 1)), BLOCK_H=shape["c_cols"], BLOCK_K=self.block_k),
            shape["c_warps"])
        return out

    def _ll_launch(self, name, fn, grid, ints, tensors, args, constexprs, warps):
        """``fn[(grid,)](*args, **constexprs)`` through a ``_launch.Launch`` cached per specialization:
        what Triton specialises on and may change between calls of one buffer, namely the integers
        ``ints`` (equal to 1, a multiple of 16) and the 16-byte alignment of ``tensors`` (the caller's
        and the new ones); every other argument is the same in each call of this buffer. The first
        call of a key goes through Triton (compile, checks); later ones pass device addresses."""
        from ._launch import Launch
        key = (name, tuple((v == 1, v % 16 == 0) for v in ints), tuple(t.data_ptr() % 16 == 0 for t in tensors))
        ln = self._launches.get(key)
        if ln is None:
            ln = self._launches[key] = Launch(fn, (grid,), constexprs, {"num_warps": warps})
            self.kernels[name] = ln(*args)
        else:
            self.kernels[name] = ln(*[a.data_ptr() if hasattr(a, "data_ptr") else a for a in args])

    # ---- API ----

    def _check_x(self, x, what):
        if x.dim() != 2 or x.shape[1] != self.hidden or x.dtype != self.dtype or not x.is_cuda:
            raise KernelArgError(f"{what}: x must be a CUDA (T, {self.hidden}) {self.dtype} tensor, got "
                                 f"{tuple(x.shape)} {x.dtype}")
        return x.contiguous()

    def _fp8_pack(self, x, what):
        """The packed fp8 rows (T, fp8_row_words(H)) int32 of ``x``: a (T, H) tensor of the buffer's
        dtype, quantized here, or ``(codes, scales)`` already quantized, packed as they are."""
        torch, H = self.torch, self.hidden
        nb = H // FP8_BLOCK
        if isinstance(x, (tuple, list)):
            codes, scales = x if len(x) == 2 else (None, None)
            ok = codes is not None and codes.dim() == 2 and codes.shape[1] == H and codes.is_cuda and \
                codes.dtype == torch.float8_e4m3fn and scales.dtype == torch.float32 and \
                tuple(scales.shape) == (codes.shape[0], nb) and scales.device == codes.device
            if not ok:
                got = [(tuple(t.shape), t.dtype) for t in x] if all(hasattr(t, "shape") for t in x) else x
                raise KernelArgError(f"{what}: fp8 x = (codes, scales) must be a (T, {H}) float8_e4m3fn and a "
                                     f"(T, {nb}) float32 CUDA tensor, got {got}")
            packed = torch.empty((codes.shape[0], self.d_hidden), dtype=torch.int32, device=codes.device)
            pc, ps = fp8_views(packed, H)
            pc.copy_(codes)
            ps.copy_(scales)
            return packed
        x = self._check_x(x, what)
        packed = torch.empty((x.shape[0], self.d_hidden), dtype=torch.int32, device=x.device)
        if x.shape[0]:
            blocks = min(8, pow2(nb))
            moe_fp8_pack_kernel[(x.shape[0], cdiv(nb, blocks))](
                x, packed.view(torch.uint8), packed.view(torch.float32), H, 4 * self.d_hidden,
                BLOCKS=blocks, BLOCK=FP8_BLOCK)
        return packed

    def dispatch(self, x, topk_idx, topk_weights, check=True, out=None):
        """Collective. ``x`` (T, H) of the buffer's dtype, ``topk_idx`` (T, K) int64 or int32 (-1: empty slot),
        ``topk_weights`` (T, K) float32; T <= max_tokens on every rank (a larger T fails on every rank).
        ``check``: raise ``InvalidValue`` on a bad input of any rank (one host synchronisation); with
        ``check=False`` nothing synchronises and ``handle.status`` carries the verdict.
        fp8 buffer: ``x`` may also be ``(codes, scales)`` ((T, H) float8_e4m3fn, (T, H / 128) float32),
        ``recv_x`` is ``(codes, scales)``, views of the packed rows (``fp8_views``), and ``out`` (if
        given) the packed rows themselves, int32 words."""
        torch = self.torch
        what = "moe_dispatch"
        x = self._fp8_pack(x, what) if self.fp8 else self._check_x(x, what)
        T_real = x.shape[0]
        if tuple(topk_idx.shape) != (T_real, self.topk) or tuple(topk_weights.shape) != (T_real, self.topk):
            raise KernelArgError(f"{what}: topk_idx and topk_weights must be ({T_real}, {self.topk}), got "
                                 f"{tuple(topk_idx.shape)} and {tuple(topk_weights.shape)}")
        idx = topk_idx.to(torch.int32).contiguous()  # int32 on the device: no narrowing casts in the kernels
        w = topk_weights.to(torch.float32).contiguous()
        T = min(T_real, self.max_tokens)  # a larger T is refused on every rank through the status words
        want = (self.recv_rows, self.d_hidden) if self.mode == "high_throughput" else \
            (self.L, self.W * self.max_tokens, self.d_hidden)
        if out is not None and (tuple(out.shape) != want or out.dtype != self.d_dtype or not out.is_contiguous()):
            raise KernelArgError(f"{what}: out must be a contiguous {want} {self.d_dtype}, got {tuple(out.shape)} "
                                 f"{out.dtype}")
        if self.mode == "high_throughput":
            recv_x, counts, h = self._ht_dispatch(x, idx, w, T_real, T, out)
        else:
            recv_x, counts, h = self._ll_dispatch(x, idx, w, T_real, T, out)
        if check:
            h.check()
        return (fp8_views(recv_x, self.hidden) if self.fp8 else recv_x), counts, h

    def combine(self, y, handle, unit_weights=False):
        """Collective. ``y`` in the layout of the dispatch output of ``handle``; returns (T, H):
        ``out[t] = sum_k w[t, k] * y[row(t, k)]`` (``unit_weights``: every w = 1, dispatch's backward)."""
        what = "moe_combine"
        if handle.buf is not self and (handle.buf.mode, handle.buf.num_experts) != (self.mode, self.num_experts):
            raise KernelArgError(f"{what}: the handle comes from another buffer")
        want = (self.recv_rows, self.hidden) if self.mode == "high_throughput" else \
            (self.L, self.W * self.max_tokens, self.hidden)
        if tuple(y.shape) != want or y.dtype != self.dtype:
            raise KernelArgError(f"{what}: y must be {want} {self.dtype}, got {tuple(y.shape)} {y.dtype}")
        y = y.contiguous()
        h_w = self.torch.ones_like(handle.h_w) if unit_weights else handle.h_w
        if self.mode == "high_throughput":
            return self._ht_combine(y, handle, h_w)
        return self._ll_combine(y, handle, h_w)
