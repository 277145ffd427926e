"""GPU timeline of one call of an overlap op or an all-reduce, to see where its time goes (diagnostic, not a benchmark).

    tools/tdist-run -n W -- python3 benchmarks/gpu_kernels/profile_ops.py [--shape 8192x8192x3584]
        [--ops ag_gemm,gemm_rs,all_reduce] [--impl cublas] [--ar-bytes 4096] [--graph]

Each rank warms the op up, then records a few calls under torch.profiler (CUDA activity). Rank 0
prints, for its last call, every kernel and copy in start order: the offset from the call's first
GPU event, the duration, the stream, and the idle gap before it on that stream; then the same op's
matmul-alone time for scale. With --graph the call is a CUDA-graph replay, as bench.py --graph
times it.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (start, capture)
from bench import ash, ops, torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402


def timeline(prof, rank, title):
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    if not evs:
        print(f"[{title}] no CUDA events recorded", flush=True)
        return
    # the last call: events after the last stream-barrier kernel that opens a call are hard to name
    # generically, so take the last third of the events (3 profiled calls)
    evs = sorted(evs, key=lambda e: e.time_range.start)
    per = len(evs) // 3
    last = evs[-per:] if per else evs
    t0 = last[0].time_range.start
    end = max(e.time_range.end for e in last)
    print(f"[{title}] rank {rank}: {len(last)} GPU events, span {(end - t0):.1f} us", flush=True)
    prev_end = {}
    for e in last:
        s = getattr(e, "device_resource_id", None)
        gap = e.time_range.start - prev_end[s] if s in prev_end else 0.0
        prev_end[s] = max(prev_end.get(s, 0.0), e.time_range.end)
        print(f"  +{e.time_range.start - t0:9.1f} us  {e.time_range.elapsed_us():9.1f} us  stream {s}  "
              f"gap {gap:7.1f}  {e.name[:90]}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shape", default="8192x8192x3584", help="M_total x K x N")
    p.add_argument("--ops", default="ag_gemm,gemm_rs")
    p.add_argument("--impl", default="cublas")
    p.add_argument("--graph", action="store_true")
    p.add_argument("--ar-bytes", type=int, default=4096, help="all_reduce: bytes per rank (bf16)")
    p.add_argument("--ar-variant", default="one_shot_ll")
    args = p.parse_args()
    rank, world, _ = bench.start(4 << 30, args.graph, 1, nccl=False)
    Mt, K, N = (int(x) for x in args.shape.split("x"))
    M = Mt // world
    dt = torch.bfloat16
    a = torch.randn(M, K, device="cuda").to(dt)
    a2 = torch.randn(Mt, K, device="cuda").to(dt)
    b = torch.randn(K, N, device="cuda").to(dt)
    x = torch.randn(args.ar_bytes // 2, device="cuda").to(dt)
    calls = {"ag_gemm": lambda: ops.ag_gemm(a, b, impl=args.impl),
             "all_reduce": lambda: ops.all_reduce(x, variant=args.ar_variant),
             "gemm_rs": lambda: ops.gemm_rs(a2, b, impl=args.impl),
             "matmul_gathered": lambda: torch.matmul(a2, b)}
    for name in args.ops.split(",") + (["matmul_gathered"] if "gemm" in args.ops else []):
        fn = calls[name]
        for _ in range(3):
            fn()
        run = fn
        if args.graph:
            g, why = bench.capture(fn)
            if g is None:
                raise SystemExit(f"{name}: cannot be captured in a CUDA graph: {why}")
            run = g.replay
            run()
        torch.cuda.synchronize()
        ash.barrier_all()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                ash.barrier_all_on_stream()
                run()
            torch.cuda.synchronize()
        if rank == 0:
            timeline(prof, rank, f"{name} {args.impl} {args.shape} W={world}{' graph' if args.graph else ''}")
        ash.barrier_all()
    ops.release()
    ash.aclshmem_finalize()


if __name__ == "__main__":
    main()
