"""One rank of the MoE dispatch / combine GPU checks (docs/MOE.md); run under tools/tdist-run -n W
(test_moe_gpu.py does, at 2, 4 and 8 ranks).

Fresh inputs each run (rank 0's seed, broadcast); every rank regenerates every rank's tokens,
routing and weights from (seed, rank, tag), so it checks its own outputs against a torch reference:
the dispatch output exactly (torch.equal on the group rows; the output poisoned with NaN before each
call, rows past the groups must stay NaN in high-throughput mode), the counts exactly, the combine
within (2 u + 8 K 2^-24) * sum_k |w y| (identity-scaled experts: y = x * (1 + e / 16), rounded to the
dtype). Routing: random, skewed (hot experts, the last rank receives nothing, rank 1 sends nothing,
empty slots), all to rank 0. Both modes, several consecutive calls (rings and epochs across calls),
low latency under CUDA-graph replay, bad input on one rank (every rank raises, no hang), the
autograd Functions, and the fp8 dispatch (codes and scales against a torch quantization of every
source row, bit for bit; the experts and the combine reference read the dequantized rows).
Prints PASS/FAIL per check and "rank r: n failure(s)"; exits 1 on a failure."""
import os
import sys
import time
import traceback
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import torch  # noqa: E402

import shmem as ash  # noqa: E402
import tdist  # noqa: E402
from tdist_kernels import ops  # noqa: E402
from tdist_kernels import layers  # noqa: E402
from tdist_kernels.moe import MoeBuffer, fp8_dequantize, fp8_row_words  # noqa: E402

failures = []
UNIT = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11, torch.float32: 2.0 ** -24}


def check(name, cond, detail=""):
    print(f"{'PASS' if cond else 'FAIL'} {name} {detail}", flush=True)
    if not cond:
        failures.append(name)


def gen(seed, pe, tag):
    return torch.Generator(device="cpu").manual_seed((seed * 1000003 + pe * 7919 + zlib.crc32(tag.encode())) % 2**62)


def inputs(seed, pe, tag, W, E, H, K, max_tokens, routing, dtype):
    """(x, topk_idx, topk_weights) of rank ``pe`` on the CPU, reproducible on every rank."""
    g = gen(seed, pe, tag)
    T = int(torch.randint(0, max_tokens + 1, (1,), generator=g))
    if routing == "skewed" and pe == 1 % W:
        T = 0
    x = torch.randn(T, H, generator=g).to(dtype)
    L = E // W
    if routing == "skewed":
        pool = E - L if W > 1 else E  # the last rank's experts get nothing
        idx = torch.stack([torch.randperm(pool, generator=g)[:K] for _ in range(T)]) if T else \
            torch.empty(0, K, dtype=torch.int64)
        # hot experts: half the picks go to expert k (a token may then list one expert twice: two pairs)
        hot = torch.rand(T, K, generator=g) < 0.5
        idx = torch.where(hot, torch.arange(K).expand(T, K), idx)
        if K > 1:
            idx[:, K - 1] = torch.where(torch.rand(T, generator=g) < 0.3, -1, idx[:, K - 1])
    elif routing == "one_rank":
        idx = torch.stack([torch.randperm(L, generator=g)[:min(K, L)] for _ in range(T)]) if T else \
            torch.empty(0, min(K, L), dtype=torch.int64)
        if K > L:
            idx = torch.cat([idx, torch.full((T, K - L), -1, dtype=torch.int64)], dim=1)
    else:
        idx = torch.stack([torch.randperm(E, generator=g)[:K] for _ in range(T)]) if T else \
            torch.empty(0, K, dtype=torch.int64)
    w = torch.rand(T, K, generator=g) + 0.01
    return x, idx.to(torch.int64), w


def groups(all_in, me, L, K):
    """Reference rows of each local group on rank ``me``: list of lists of (src, t)."""
    out = [[] for _ in range(L)]
    for j in range(L):
        for r, (x, idx, w) in enumerate(all_in):
            for t in range(idx.shape[0]):
                for k in range(K):
                    if int(idx[t, k]) == me * L + j:
                        out[j].append((r, t))
    return out


def scale(e):
    return 1.0 + (e % 16) / 16.0


def quantize_fp8(x):
    """docs/MOE.md's fp8 quantization in torch: (codes (T, H) float8_e4m3fn, scales (T, H / 128))."""
    T, H = x.shape
    xf = x.float().reshape(T, H // 128, 128)
    sc = xf.abs().amax(-1).clamp_min(1e-10) / 448.0
    return (xf / sc.unsqueeze(-1)).to(torch.float8_e4m3fn).reshape(T, H), sc


def one_case(seed, me, W, mode, dtype, E, H, K, max_tokens, routing, calls, **opts):
    name = f"moe {mode} {routing} {dtype} E={E} H={H} K={K} T<={max_tokens} {opts}"
    buf = MoeBuffer(E, H, K, max_tokens, dtype, mode=mode, **opts)
    fp8 = opts.get("fp8", False)
    L = E // W
    ok_d = ok_c = ok_n = ok_p = True
    # what arrives of a source row: the row itself, or its packed fp8 form (codes, then scales)
    wire = (lambda xs: torch.cat([xs[0].view(torch.uint8), xs[1].view(torch.uint8)], 1)) if fp8 else (lambda xs: xs)
    for call in range(calls):
        tag = f"{name}-{call}"
        all_in = [inputs(seed, r, tag, W, E, H, K, max_tokens, routing, dtype) for r in range(W)]
        x, idx, w = all_in[me]
        rows = [wire(quantize_fp8(xr) if fp8 else xr) for xr, _, _ in all_in]
        # the experts' input: the rows as sent, dequantized with fp8
        seen = fp8_dequantize(*quantize_fp8(x), dtype) if fp8 else x
        width = fp8_row_words(H) if fp8 else H
        shape = (buf.recv_rows, width) if mode == "high_throughput" else (L, W * max_tokens, width)
        out = torch.full(shape, -1, dtype=torch.int32, device="cuda") if fp8 else \
            torch.full(shape, float("nan"), dtype=dtype, device="cuda")
        # fp8: odd calls hand over (codes, scales) quantized by torch instead of x
        xin = tuple(t.cuda() for t in quantize_fp8(x)) if fp8 and call % 2 else x.cuda()
        recv, counts, h = buf.dispatch(xin, idx.cuda(), w.cuda(), out=out)
        torch.cuda.synchronize()
        ref = groups(all_in, me, L, K)
        ok_n &= counts.cpu().tolist() == [len(g) for g in ref]
        flat = (out.view(torch.uint8) if fp8 else recv).reshape(-1, rows[0].shape[1]).cpu()
        if fp8:
            ok_d &= recv[0].data_ptr() == out.data_ptr() and tuple(recv[1].shape) == shape[:-1] + (H // 128,)
            recv = fp8_dequantize(*recv, dtype)
        y = torch.full(shape[:-1] + (H,), float("nan"), dtype=dtype, device="cuda")
        used = torch.zeros(flat.shape[0], dtype=torch.bool)
        start = 0
        for j in range(L):
            s0 = start if mode == "high_throughput" else j * W * max_tokens
            want = torch.stack([rows[r][t] for r, t in ref[j]]) if ref[j] else flat[:0]
            ok_d &= torch.equal(flat[s0:s0 + len(ref[j])], want)
            used[s0:s0 + len(ref[j])] = True
            y.reshape(-1, H)[s0:s0 + len(ref[j])] = (recv.reshape(-1, H)[s0:s0 + len(ref[j])].float() *
                                                   scale(me * L + j)).to(dtype)
            start += len(ref[j])
        if mode == "high_throughput":
            ok_p &= bool((flat[~used] == 255).all()) if fp8 else bool(torch.isnan(flat[~used].float()).all())
        got = buf.combine(y, h).cpu().double()
        ys = torch.zeros(x.shape[0], K, H, dtype=torch.float64)
        for k in range(K):
            e = idx[:, k]
            sc = torch.tensor([scale(int(v)) for v in e], dtype=torch.float32) if len(e) else torch.empty(0)
            yk = (seen.float() * sc[:, None]).to(dtype).double()
            ys[:, k] = torch.where((e >= 0)[:, None], yk * w[:, k:k + 1].double(), 0.0)
        want = ys.sum(1)
        tol = (2 * UNIT[dtype] + 8 * K * 2.0 ** -24) * ys.abs().sum(1)
        if dtype == torch.float16:
            tol = tol + (K + 2) * 2.0 ** -24  # fp16 subnormals below 2^-14: absolute spacing 2^-24
        ok_c &= bool(((got - want).abs() <= tol).all())
    check(f"{name} dispatch exact", ok_d)
    check(f"{name} counts", ok_n)
    check(f"{name} combine within tolerance", ok_c)
    if mode == "high_throughput":
        check(f"{name} rows past the groups untouched", ok_p)


def scenario_modes(seed, me, W):
    for mode in ("high_throughput", "low_latency"):
        for routing in ("random", "skewed", "one_rank"):
            one_case(seed, me, W, mode, torch.bfloat16, 2 * W, 256, 2, 37, routing, 3,
                     **({"chunk_tokens": 5, "slices": 2} if mode == "high_throughput" else {}))
        one_case(seed, me, W, mode, torch.float32, 4 * W, 200, 6, 19, "random", 2)
        one_case(seed, me, W, mode, torch.float16, W, 64, 1, 8, "skewed", 2)
    one_case(seed, me, W, "high_throughput", torch.bfloat16, 8 * W, 7168 // 4, 8, 64, "random", 2)


def scenario_teams(seed, me, W):
    """Expert parallelism over a team (docs/CONTRACT.md section 8): the even and the odd PEs each
    spread their experts over their own members, at once; a buffer made under the team (what
    ``moe_dispatch(..., group=team)`` does) allocates in the team's heap and its kernels name the
    members' world PEs. The seed differs per team, so rows that crossed teams would be caught; then
    the public path with group=."""
    from tdist_kernels._resources import RESOURCES
    if W % 2:
        check("teams: skipped (an odd rank count)", True)
        return
    team = None
    for i in (0, 1):
        team = ash.new_team(list(range(i, W, 2)), heap_bytes=256 << 20) or team
    n, r = team.size, team.rank
    tseed = seed + 7919 * (team.start + 1)
    prev = RESOURCES.enter(team)
    try:
        for mode in ("high_throughput", "low_latency"):
            one_case(tseed, r, n, mode, torch.bfloat16, 4 * n, 256, 2, 37, "random", 2,
                     **({"chunk_tokens": 5, "slices": 2} if mode == "high_throughput" else {}))
    finally:
        RESOURCES.leave(prev)
    E, H, K, T = 4 * n, 128, 2, 16
    g = gen(tseed, r, "team-ops")
    x = torch.randn(T, H, generator=g).to(torch.bfloat16).cuda()
    idx = torch.stack([torch.randperm(E, generator=g)[:K] for _ in range(T)]).cuda()
    w = (torch.rand(T, K, generator=g) + 0.01).cuda()
    recv, counts, h = ops.moe_dispatch(x, idx, w, E, T, group=team)
    out = ops.moe_combine(recv, h)  # identity experts: the token times its weights' sum
    torch.cuda.synchronize()
    want = (x.float() * w.sum(1, keepdim=True)).to(torch.bfloat16)
    total = torch.tensor([int(counts.sum())], device="cuda")
    sent = int((idx >= 0).sum())  # the rows grouped by local expert: one per (token, expert) pair
    got = [int.from_bytes(b, "little") for b in ash.team_allgather(team, int(total).to_bytes(4, "little"))]
    sents = [int.from_bytes(b, "little") for b in ash.team_allgather(team, sent.to_bytes(4, "little"))]
    check(f"moe_dispatch group={team.pes()}: rows received in the team = pairs routed", sum(got) == sum(sents),
          f"{got} {sents}")
    check(f"moe_combine group={team.pes()}: identity experts give x * sum(w)",
          rel_err_bf16(out, want) <= 1e-2, f"{rel_err_bf16(out, want):.2e}")
    ash.team_barrier(team)


def rel_err_bf16(x, ref):
    x, ref = x.double().cpu(), ref.double().cpu()
    return float((x - ref).norm() / max(ref.norm(), 1e-30))


def scenario_graph(seed, me, W):
    """Low latency in a CUDA graph: replays with refilled inputs, each exact."""
    E, H, K, T = 2 * W, 128, 2, 16
    buf = MoeBuffer(E, H, K, T, torch.bfloat16, mode="low_latency")
    x_g = torch.zeros(T, H, dtype=torch.bfloat16, device="cuda")
    i_g = torch.zeros(T, K, dtype=torch.int64, device="cuda")
    w_g = torch.ones(T, K, dtype=torch.float32, device="cuda")
    res = {}

    def step():
        recv, counts, h = buf.dispatch(x_g, i_g, w_g, check=False)
        res["out"] = buf.combine(recv, h)

    def fill(k):
        g = gen(seed, me, f"graph-{k}")
        x_g.copy_(torch.randn(T, H, generator=g).to(torch.bfloat16))
        i_g.copy_(torch.stack([torch.randperm(E, generator=g)[:K] for _ in range(T)]))
        w_g.copy_(torch.rand(T, K, generator=g))

    fill(0)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    ok = True
    for k in range(1, 4):
        fill(k)
        graph.replay()
        torch.cuda.synchronize()
        want = (x_g.float() * w_g.sum(1, keepdim=True)).double()
        tol = (2 * UNIT[torch.bfloat16] + 16 * 2.0 ** -24) * want.abs()
        ok &= bool(((res["out"].double() - want).abs() <= tol).all())
    check("moe low_latency CUDA-graph replays", ok)


def scenario_fp8(seed, me, W):
    for mode in ("high_throughput", "low_latency"):
        for routing in ("random", "skewed"):
            one_case(seed, me, W, mode, torch.bfloat16, 2 * W, 384, 2, 29, routing, 4, fp8=True,
                     **({"chunk_tokens": 5, "slices": 3} if mode == "high_throughput" else {}))
    one_case(seed, me, W, "high_throughput", torch.bfloat16, 8 * W, 7168 // 2, 8, 48, "random", 2, fp8=True)
    from tdist_kernels._common import KernelArgError
    for what, fn in (("hidden not a multiple of 128", lambda: MoeBuffer(2 * W, 200, 2, 8, torch.bfloat16, fp8=True)),
                     ("(codes, scales) of the wrong dtype", lambda: ops.moe_dispatch(
                         (torch.zeros(2, 256, device="cuda"), torch.zeros(2, 2, device="cuda")),
                         torch.zeros(2, 2, dtype=torch.int64, device="cuda"), torch.ones(2, 2, device="cuda"),
                         2 * W, 8, fp8=True)),
                     ("layers refuse an fp8 buffer", lambda: layers.moe_dispatch(
                         torch.zeros(2, 256, device="cuda", dtype=torch.bfloat16),
                         torch.zeros(2, 2, dtype=torch.int64, device="cuda"), torch.ones(2, 2, device="cuda"),
                         MoeBuffer(2 * W, 256, 2, 8, torch.bfloat16, fp8=True)))):
        try:
            fn()
            check(f"moe fp8 refuses {what}", False)
        except KernelArgError as e:
            check(f"moe fp8 refuses {what}", True, str(e)[:120])


def scenario_errors(seed, me, W):
    from tdist.errors import InvalidValue
    for mode in ("high_throughput", "low_latency"):
        buf = MoeBuffer(2 * W, 64, 2, 8, torch.bfloat16, mode=mode)
        x = torch.randn(4, 64, device="cuda").to(torch.bfloat16)
        idx = torch.tensor([[0, 1]] * 4, device="cuda")
        w = torch.ones(4, 2, device="cuda")
        bad = idx.clone()
        if me == W - 1:
            bad[2, 1] = 2 * W + 3
        try:
            buf.dispatch(x, bad, w)
            check(f"moe {mode} bad expert index raises on every rank", False)
        except InvalidValue as e:
            check(f"moe {mode} bad expert index raises on every rank",
                  f"PE {W - 1}: topk_idx[2, 1] = {2 * W + 3}" in str(e), str(e))
        big = torch.randn(9 if me == 0 else 1, 64, device="cuda").to(torch.bfloat16)
        try:
            buf.dispatch(big, idx[:1].expand(big.shape[0], 2).contiguous(), w[:1].expand(big.shape[0], 2).contiguous())
            check(f"moe {mode} too many tokens raises on every rank", False)
        except InvalidValue as e:
            check(f"moe {mode} too many tokens raises on every rank", "PE 0: 9 tokens exceed" in str(e), str(e))
        recv, counts, h = buf.dispatch(x, idx, w)  # the buffer still works
        out = buf.combine(recv, h)
        torch.cuda.synchronize()
        check(f"moe {mode} works after errors", torch.allclose(out.float(), 2 * x.float(), rtol=2e-2))


def scenario_autograd(seed, me, W):
    """Expert e multiplies its rows by e + 1, so out[t] = sum_k w[t, k] (idx[t, k] + 1) x[t]: the
    gradients are d out / d x[t] = go[t] sum_k w[t, k] (idx[t, k] + 1) and d out / d w[t, k] =
    (idx[t, k] + 1) <go[t], x[t]> (0 for an empty slot), in both modes; EPMoE's forward and backward
    run and its router gets a gradient."""
    E, H, K, T = 2 * W, 64, 2, 12
    L = E // W
    for mode in ("high_throughput", "low_latency"):
        buf = MoeBuffer(E, H, K, T, torch.float32, mode=mode)
        g = gen(seed, me, "autograd" + mode)
        x = torch.randn(T, H, generator=g).cuda().requires_grad_()
        idx = torch.stack([torch.randperm(E, generator=g)[:K] for _ in range(T)])
        idx[1, 1] = -1  # an empty slot: no term, no gradient
        idx = idx.cuda()
        w = torch.rand(T, K, generator=g).cuda().requires_grad_()
        recv, counts, h = layers.moe_dispatch(x, idx, w, buf)
        scale = me * L + torch.arange(L, device="cuda", dtype=torch.float32) + 1  # global expert + 1
        if mode == "high_throughput":  # groups packed from row 0
            per_row = torch.repeat_interleave(scale, counts.long())
            scale_rows = torch.cat([per_row, per_row.new_zeros(recv.shape[0] - per_row.shape[0])])[:, None]
        else:  # (L, rows, H): group j in slice j
            scale_rows = scale[:, None, None]
        out = layers.moe_combine(recv * scale_rows, h)
        go = torch.randn(T, H, generator=g).cuda()
        out.backward(go)
        f = torch.where(idx >= 0, idx + 1, 0).float()
        want_x = go * (w.detach() * f).sum(1, keepdim=True)
        want_w = f * (go * x.detach()).sum(1, keepdim=True)
        check(f"moe {mode} autograd: x's gradient", torch.allclose(x.grad, want_x, rtol=1e-4, atol=1e-5),
              f"max err {float((x.grad - want_x).abs().max()):.3g}")
        check(f"moe {mode} autograd: the routing weights' gradient",
              w.grad is not None and torch.allclose(w.grad, want_w, rtol=1e-4, atol=1e-4) and float(w.grad[1, 1]) == 0,
              "no gradient" if w.grad is None else f"max err {float((w.grad - want_w).abs().max()):.3g}")
    moe = layers.EPMoE(E, H, 2 * H, K, T, dtype=torch.float32, device="cuda")
    y = moe(torch.randn(T, H, device="cuda"))
    y.square().sum().backward()
    check("moe EPMoE forward/backward, the router trained through the weights",
          bool(torch.isfinite(y).all()) and moe.w1.grad is not None and moe.router.grad is not None and
          bool(torch.isfinite(moe.router.grad).all()) and float(moe.router.grad.abs().sum()) > 0)


def main():
    t_start = time.monotonic()
    me, W = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", me)) % torch.cuda.device_count())
    ash.init_from_env(local_mem_size=1 << 30, backend=tdist.BACKEND_CUDA)
    seed = int.from_bytes(tdist.ctrl_broadcast(os.urandom(4), 0), "little")
    print(f"rank {me}/{W}: seed {seed}", flush=True)
    only = os.environ.get("TDIST_KERNELS_ONLY", "")
    for name, fn in (("modes", scenario_modes), ("graph", scenario_graph), ("errors", scenario_errors),
                     ("autograd", scenario_autograd), ("fp8", scenario_fp8), ("teams", scenario_teams)):
        if only and name not in only.split(","):
            continue
        t0 = time.monotonic()
        try:
            fn(seed, me, W)
            if me == 0:
                print(f"scenario {name}: {time.monotonic() - t0:.1f} s", flush=True)
        except Exception:
            traceback.print_exc()
            check(f"scenario {name} raised", False)
            break  # a failed collective leaves the ranks out of step: stop rather than hang
    ops.release()
    ash.aclshmem_finalize()
    print(f"rank {me}: {len(failures)} failure(s): {failures} ({time.monotonic() - t_start:.1f} s)", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
