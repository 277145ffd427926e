"""tdist_kernels benchmark: ratios against baselines measured in the same run.

    tools/tdist-run -n W -- python3 benchmarks/gpu_kernels/bench.py [--json out.json] [--ops a2a,gemm,ar]

All ranks run each op at the same time (a stream barrier over all PEs before every timed repetition),
so on one GPU under MPS the baselines run under the same SM sharing as the kernels:

* reverse all-to-all (3 variants) vs the copy ceiling (each rank copies the same bytes device to
  device, read + write counted: ``ratio = t_copy / t_a2a``, goal >= 0.85) and vs a torch reference
  (the same permutation done locally by ``a.view(W, S, H, D).transpose(0, 1).reshape(...)``);
* AG + GEMM vs torch.matmul alone on the gathered shape, GEMM + RS vs torch.matmul alone on the full
  (M, K) x (K, N) product: ``ratio = t_fused / t_matmul``, goal <= 1.10;
* all-reduce (3 variants) latency / bus bandwidth;
* with one GPU per rank (torch.cuda.device_count() >= W): NCCL through torch.distributed
  (all_to_all_single, all_gather_into_tensor + matmul, matmul + reduce_scatter_tensor, all_reduce).

Each op's time is the median of per-repetition CUDA-event times of the whole op as a user calls it
(signal reset and the protocol's two barriers included).
"""
import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import torch  # noqa: E402

import shmem as ash  # noqa: E402
import tdist  # noqa: E402
from tdist_kernels import ops  # noqa: E402


def timed(fn, reps, warmup=2):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(reps):
        ash.barrier_all_on_stream()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) * 1e-3)
    return statistics.median(ts)


def worst(t):
    """The slowest rank's time (all ranks must call it)."""
    got = tdist.ctrl_allgather(float(t).hex().encode().ljust(32))
    return max(float.fromhex(bytes(got[i:i + 32]).decode().strip()) for i in range(0, len(got), 32))


def bench_a2a(me, W, res, reps):
    S, H, D = 4096 // W, 8, 1024
    dt = torch.bfloat16
    a = torch.randn(S * W, H, D, device="cuda").to(dt)
    nbytes = a.numel() * a.element_size()
    src = torch.randn(nbytes // 2, device="cuda").to(dt)
    dst = torch.empty_like(src)
    t_copy = worst(timed(lambda: dst.copy_(src), reps))
    out_ref = torch.empty(S, H * W, D, device="cuda", dtype=dt)
    t_torch = worst(timed(lambda: out_ref.copy_(a.view(W, S, H, D).transpose(0, 1).reshape(S, W * H, D)), reps))
    res["a2a"] = {"shape": [S * W, H, D], "dtype": "bfloat16", "bytes_per_rank": nbytes, "ranks": W,
                  "copy_s": t_copy, "copy_GBps_rw": 2 * nbytes / t_copy / 1e9,
                  "torch_local_permute_s": t_torch}
    for variant in ("mte", "bulk", "wait_notify"):
        out = torch.empty(S, H * W, D, device="cuda", dtype=dt)
        t = worst(timed(lambda: ops.reverse_all_to_all(a, variant=variant, out=out), reps))
        res["a2a"][variant] = {"s": t, "GBps_rw": 2 * nbytes / t / 1e9, "vs_copy_ceiling": t_copy / t,
                               "vs_torch_local": t_torch / t}
    x = torch.randn(S, H * W, D, device="cuda").to(dt)
    t = worst(timed(lambda: ops.dispatch_all_to_all(x), reps))
    res["dispatch_a2a"] = {"s": t, "vs_copy_ceiling": t_copy / t}


def bench_gemm(me, W, res, reps):
    dt = torch.bfloat16
    M, K, N = 4096 // W, 4096, 4096
    a = torch.randn(M, K, device="cuda").to(dt)
    b = torch.randn(K, N, device="cuda").to(dt)
    full = torch.randn(W * M, K, device="cuda").to(dt)
    t_mm = worst(timed(lambda: torch.matmul(full, b), reps))
    t_ag = worst(timed(lambda: ops.ag_gemm(a, b), reps))
    flops = 2.0 * W * M * K * N
    res["ag_gemm"] = {"M_per_rank": M, "K": K, "N": N, "ranks": W, "matmul_alone_s": t_mm, "fused_s": t_ag,
                      "ratio_vs_matmul": t_ag / t_mm, "fused_TFLOPs_per_rank": flops / t_ag / 1e12}
    a2 = torch.randn(W * M, K, device="cuda").to(dt)
    t_mm2 = worst(timed(lambda: torch.matmul(a2, b), reps))
    t_rs = worst(timed(lambda: ops.gemm_rs(a2, b), reps))
    res["gemm_rs"] = {"M": W * M, "K": K, "N": N, "ranks": W, "matmul_alone_s": t_mm2, "fused_s": t_rs,
                      "ratio_vs_matmul": t_rs / t_mm2}


def bench_ar(me, W, res, reps):
    res["all_reduce"] = {}
    for nbytes in (256 << 10, 64 << 20):
        x = torch.randn(nbytes // 2, device="cuda").to(torch.bfloat16)
        row = {}
        for variant in ("one_shot", "two_shot", "ring"):
            t = worst(timed(lambda: ops.all_reduce(x, variant=variant), reps))
            row[variant] = {"s": t, "busbw_GBps": 2 * (W - 1) / W * nbytes / t / 1e9}
        res["all_reduce"][str(nbytes)] = row


def bench_nccl(me, W, res, reps):
    import torch.distributed as dist
    dist.init_process_group("nccl", rank=me, world_size=W, device_id=torch.device("cuda", me))
    dt = torch.bfloat16
    S, H, D = 4096 // W, 8, 1024
    a = torch.randn(S * W * H * D, device="cuda").to(dt)
    o = torch.empty_like(a)
    t = timed(lambda: dist.all_to_all_single(o, a), reps)
    res["nccl"] = {"all_to_all_single_s": t}
    if "a2a" in res:
        for v in ("mte", "bulk", "wait_notify"):
            res["a2a"][v]["vs_nccl"] = t / res["a2a"][v]["s"]
    M, K, N = 4096 // W, 4096, 4096
    x = torch.randn(M, K, device="cuda").to(dt)
    b = torch.randn(K, N, device="cuda").to(dt)
    g = torch.empty(W * M, K, device="cuda", dtype=dt)
    res["nccl"]["ag_then_matmul_s"] = timed(lambda: (dist.all_gather_into_tensor(g, x), torch.matmul(g, b)), reps)
    a2 = torch.randn(W * M, K, device="cuda").to(dt)
    r = torch.empty(M, N, device="cuda", dtype=dt)
    res["nccl"]["matmul_then_rs_s"] = timed(lambda: dist.reduce_scatter_tensor(r, torch.matmul(a2, b)), reps)
    y = torch.randn(32 << 20, device="cuda").to(dt)
    res["nccl"]["all_reduce_64MB_s"] = timed(lambda: dist.all_reduce(y), reps)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="")
    ap.add_argument("--ops", default="a2a,gemm,ar")
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    me, W = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", me)) % torch.cuda.device_count())
    ash.init_from_env(local_mem_size=1 << 30, backend=tdist.BACKEND_CUDA)
    torch.manual_seed(1234 + me)
    res = {"ranks": W, "gpus": torch.cuda.device_count(), "device": torch.cuda.get_device_name(),
           "sm_budget_per_rank": ops.sm_budget(), "mps_pct": os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")}
    wanted = args.ops.split(",")
    for name, fn in (("a2a", bench_a2a), ("gemm", bench_gemm), ("ar", bench_ar)):
        if name in wanted:
            fn(me, W, res, args.reps)
    if torch.cuda.device_count() >= W > 1 and "nccl" in wanted:
        bench_nccl(me, W, res, args.reps)
    ops.release()
    ash.aclshmem_finalize()
    if me == 0:
        text = json.dumps(res, indent=1)
        if args.json:
            Path(args.json).write_text(text)
        print(text)
        a = res.get("a2a")
        if a:
            print(f"SUMMARY W={W} a2a copy ceiling {a['copy_GBps_rw']:.0f} GB/s; " + "; ".join(
                f"{v} {a[v]['vs_copy_ceiling']:.2f}x ceiling, {a[v]['vs_torch_local']:.2f}x torch"
                for v in ("mte", "bulk", "wait_notify")))
        for k in ("ag_gemm", "gemm_rs"):
            if k in res:
                print(f"SUMMARY W={W} {k} {res[k]['fused_s'] * 1e3:.3f} ms vs matmul alone "
                      f"{res[k]['matmul_alone_s'] * 1e3:.3f} ms: {res[k]['ratio_vs_matmul']:.2f}x")
        if "all_reduce" in res:
            for nb, row in res["all_reduce"].items():
                print(f"SUMMARY W={W} all_reduce {int(nb) >> 10} KB: " + ", ".join(
                    f"{v} {row[v]['s'] * 1e6:.1f} us" for v in row))


if __name__ == "__main__":
    main()
