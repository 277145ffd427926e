"""MoE dispatch / combine on GPUs (tdist_kernels.moe, docs/MOE.md) against the baselines of the same
run, under tools/tdist-run:

    tools/tdist-run -n 2 -- python3 benchmarks/gpu_kernels/bench_moe.py --json moe-2.json [--graph]

* tdist high_throughput (DeepSeek-V3 shape: hidden 7168, top-8, 256 experts, 4096 tokens per rank;
  and hidden 2048, top-2, 16 experts) and low_latency (128 tokens per rank), random and skewed
  routing (half the picks on the first experts, the last quarter of the experts idle);
* torch's path with one GPU per rank (NCCL): the counts exchange (all_to_all_single of the
  per-expert counts, then .tolist(): the host sync), the permute by expert, all_to_all_single with
  split sizes, the permute by local expert; and the way back with the weighted sum;
* the copy ceiling: one device-to-device copy of the bytes this rank sends in a dispatch;
* DeepEP's metric: the bytes a rank sends to the other ranks in a dispatch (each token once per
  destination rank) over the dispatch time, against 450 GB/s per direction (H200 NVLink);
* payloads (``--payloads``): bf16 both ways, and fp8 dispatch (e4m3 codes and one float32 scale per
  128 columns, ``H + H / 32`` bytes a token, quantized inside the timed dispatch) with a bf16
  combine, as DeepEP's figures are taken; the byte counts are those of the wire format.

Every configuration is checked once before it is timed (identity experts: combine(dispatch(x)) =
(sum_k w) x within (2 u + 8 K 2^-24) |.|). Prints one JSON line per row; --json writes them all.
The ratios printed are the goals of the MoE issue: high_throughput >= 2x the torch path and >= 0.8 of
450 GB/s, low_latency at 128 tokens >= 3x the torch path, >= 0.7 of the copy ceiling on one GPU.
"""
import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import bench  # noqa: E402
from tdist_kernels import moe as _moe  # noqa: E402

NVLINK_GBPS = 450.0
UNIT = {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11, torch.float32: 2.0 ** -24}


def routing(kind, me, T, K, E, seed):
    g = torch.Generator(device="cuda").manual_seed((seed * 7919 + me * 104729 + T) % 2**62)
    usable = E - E // 4 if kind == "skewed" else E
    scores = torch.rand(T, usable, generator=g, device="cuda")
    if kind == "skewed":
        scores[:, :K] += (torch.rand(T, K, generator=g, device="cuda") < 0.5).float()  # hot experts
    idx = scores.topk(K, dim=-1).indices
    w = torch.rand(T, K, generator=g, device="cuda") + 0.01
    return idx.to(torch.int64), w


def moe_calls(buf, x, idx, w):
    """(dispatch, combine, check, state) over one buffer, for the diagnostics built on this file
    (eager_moe.py, sweep_moe.py): ``dispatch`` leaves its result in ``state["r"]``, ``combine`` (of
    the rows of the first dispatch, made here, whose status is checked) in ``state["o"]``, and
    ``check()`` says whether ``state["o"]`` is the identity experts' result, (sum_k w) x, within
    the stated bound."""
    st = {}

    def dispatch():
        st["r"] = buf.dispatch(x, idx, w, check=False)

    dispatch()
    st["r"][2].check()
    y = st["r"][0]

    def combine():
        st["o"] = buf.combine(y, st["r"][2])

    def check():
        want = (x.float() * w.sum(1, keepdim=True)).double()
        tol = (2 * UNIT[x.dtype] + 8 * idx.shape[1] * 2.0 ** -24) * want.abs() + 1e-30
        return bool(((st["o"].double() - want).abs() <= tol).all())

    return dispatch, combine, check, st


def torch_path(dist, x, idx, w, E, W):
    """Dispatch then combine (identity experts) the way a torch user does with all_to_all_single;
    returns (dispatch fn, combine fn)."""
    L = E // W
    state = {}

    def dispatch():
        flat = idx.reshape(-1)
        order = torch.argsort(flat, stable=True)
        order = order[flat[order] >= 0]
        counts = torch.bincount(flat[order], minlength=E).to(torch.int64)
        recv_counts = torch.empty_like(counts)
        dist.all_to_all_single(recv_counts, counts)
        send_split = counts.view(W, L).sum(1).tolist()  # the host sync
        rc = recv_counts.view(W, L)
        recv_split = rc.sum(1).tolist()
        send = x[order // idx.shape[1]]
        recv = torch.empty((sum(recv_split), x.shape[1]), dtype=x.dtype, device=x.device)
        dist.all_to_all_single(recv, send, recv_split, send_split)
        # by source then expert -> by local expert then source
        src_of = torch.repeat_interleave(torch.arange(W * L, device=x.device), rc.reshape(-1))
        key = (src_of % L) * W + src_of // L
        perm = torch.argsort(key, stable=True)
        state.update(order=order, send_split=send_split, recv_split=recv_split, perm=perm, shape=send.shape)
        return recv[perm]

    def combine(y):
        back_in = torch.empty_like(y)
        back_in[state["perm"]] = y
        back = torch.empty(state["shape"], dtype=y.dtype, device=y.device)
        dist.all_to_all_single(back, back_in, state["send_split"], state["recv_split"])
        out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
        o = state["order"]
        out.index_add_(0, o // idx.shape[1], back.float() * w.reshape(-1)[o, None])
        return out.to(y.dtype)

    return dispatch, combine


def bench_case(me, W, dist, res, reps, mode, kind, T, H, K, E, dtype, fp8=False, **buffer_options):
    seed = bench.SEED[0]
    x = torch.randn(T, H, device="cuda", generator=torch.Generator(device="cuda").manual_seed(seed + me)).to(dtype)
    idx, w = routing(kind, me, T, K, E, seed)
    buf = _moe.MoeBuffer(E, H, K, T, dtype, mode=mode, fp8=fp8, **buffer_options)
    st = {}

    def d():
        st["r"] = buf.dispatch(x, idx, w, check=False)

    d()
    st["r"][2].check()
    # the experts' input: the rows as they arrived (dequantized once, outside the timing, with fp8)
    y = _moe.fp8_dequantize(*st["r"][0], dtype) if fp8 else st["r"][0]

    def c():
        st["o"] = buf.combine(y, st["r"][2])

    c()
    torch.cuda.synchronize()
    # what the experts saw of x: x itself, or its fp8 rounding (the dequantized packed rows)
    seen = _moe.fp8_dequantize(*_moe.fp8_views(buf._fp8_pack(x, "bench"), H), dtype) if fp8 else x
    want = (seen.float() * w.sum(1, keepdim=True)).double()
    ok = bool(((st["o"].double() - want).abs() <= (2 * UNIT[dtype] + 8 * K * 2.0 ** -24) * want.abs() + 1e-30).all())
    payload = "fp8" if fp8 else str(dtype).replace("torch.", "")
    if ok:
        bench.CHECKS["passed"] += 1
    else:
        bench.CHECKS["failed"].append(f"moe {mode} {kind} {payload} T={T} H={H}: combine(dispatch(x)) off")
    t_d = bench.timed(d, reps, what=f"moe {mode} dispatch {kind} {payload} T={T} H={H} K={K} E={E}")
    t_c = bench.timed(c, reps, what=f"moe {mode} combine {kind}")
    L = E // W
    onehot = torch.nn.functional.one_hot(idx.clamp(min=0) // L, W) * (idx >= 0).unsqueeze(-1)
    dest = onehot.amax(dim=1).bool()  # (T, W): token t goes to rank p
    sent_remote = int(dest.sum()) - int(dest[:, me].sum())
    d_row = 4 * _moe.fp8_row_words(H) if fp8 else H * x.element_size()  # a token on the wire
    sent_bytes = int(dest.sum()) * d_row
    remote_bytes = sent_remote * d_row
    combine_remote_bytes = sent_remote * H * x.element_size()
    row = {"op": "moe", "mode": mode, "routing": kind, "ranks": W, "tokens": T, "hidden": H, "topk": K, "experts": E,
           "dtype": str(dtype).replace("torch.", ""), "dispatch_payload": payload,
           "chunk_tokens": getattr(buf, "chunk", None), "buffer_num": getattr(buf, "nbuf", None), "slices": buf.S,
           "dispatch_us": t_d * 1e6, "combine_us": t_c * 1e6,
           "dispatch_bytes": sent_bytes, "remote_bytes": remote_bytes, "combine_remote_bytes": combine_remote_bytes,
           "deepep_dispatch_GBps": remote_bytes / t_d / 1e9, "deepep_combine_GBps": combine_remote_bytes / t_c / 1e9,
           "check": "ok" if ok else "FAIL"}
    row["nvlink_fraction_dispatch"] = row["deepep_dispatch_GBps"] / NVLINK_GBPS
    # the copy ceiling: one device-to-device copy of the bytes a dispatch sends
    src = torch.empty(max(sent_bytes, 16), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    t_copy = bench.timed(lambda: dst.copy_(src), reps, what="copy ceiling")
    row["copy_us"] = t_copy * 1e6
    row["vs_copy_ceiling"] = t_copy / t_d
    if dist is not None:
        td_fn, tc_fn = torch_path(dist, x, idx, w, E, W)
        got = {}

        def tdisp():
            got["y"] = td_fn()

        t_td = bench.timed(tdisp, reps, what="torch all_to_all_single dispatch")
        t_tc = bench.timed(lambda: tc_fn(got["y"]), reps, what="torch all_to_all_single combine")
        row.update(torch_dispatch_us=t_td * 1e6, torch_combine_us=t_tc * 1e6, speedup_dispatch=t_td / t_d,
                   speedup_combine=t_tc / t_c, speedup_round_trip=(t_td + t_tc) / (t_d + t_c))
    _moe_release(buf)
    res.append(row)
    if me == 0:
        print(json.dumps(row), flush=True)


def _moe_release(buf):
    from tdist_kernels import ops
    del buf
    torch.cuda.synchronize()
    ops.release()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--shapes", default="7168x8x256,2048x2x16", help="HIDDENxTOPKxEXPERTS, comma-separated")
    ap.add_argument("--ht-tokens", default="4096")
    ap.add_argument("--ll-tokens", default="128")
    ap.add_argument("--routing", default="random,skewed")
    ap.add_argument("--modes", default="high_throughput,low_latency")
    ap.add_argument("--heap-gib", type=int, default=4)
    ap.add_argument("--graph", action="store_true", help="time CUDA-graph replays (the torch path is not capturable)")
    ap.add_argument("--inner", type=int, default=1)
    ap.add_argument("--payloads", default="bf16,fp8", help="dispatch payloads: bf16, fp8 (combine is bf16)")
    ap.add_argument("--ht-buffers", default="", help="high_throughput buffer settings to sweep: "
                    "CHUNKxBUFFERSxSLICES,... (0: the default), e.g. 64x4x0,256x4x0")
    a = ap.parse_args()
    me, W, dist = bench.start(a.heap_gib << 30, a.graph, a.inner)
    res = []
    for shape in a.shapes.split(","):
        H, K, E = (int(v) for v in shape.split("x"))
        for mode in a.modes.split(","):
            for T in (int(t) for t in (a.ht_tokens if mode == "high_throughput" else a.ll_tokens).split(",")):
                for kind in a.routing.split(","):
                    sweep = [None] if mode != "high_throughput" or not a.ht_buffers else a.ht_buffers.split(",")
                    for payload in a.payloads.split(","):
                        for setting in sweep:
                            opts = {}
                            if setting:
                                c, nb, sl = (int(v) for v in setting.split("x"))
                                opts = {k: v for k, v in (("chunk_tokens", c), ("buffer_num", nb), ("slices", sl)) if v}
                            bench_case(me, W, dist, res, a.reps, mode, kind, T, H, K, E, torch.bfloat16,
                                       fp8=payload == "fp8", **opts)
    if me == 0:
        print(json.dumps({"checks": bench.CHECKS, "graph_failures": bench.GRAPH.get("failed", [])}), flush=True)
        if a.json:
            Path(a.json).write_text(json.dumps({"rows": res, "checks": bench.CHECKS}, indent=1))
    if dist is not None:
        dist.destroy_process_group()
    os._exit(1 if bench.CHECKS["failed"] else 0)


if __name__ == "__main__":
    main()
