"""Where the host time of an eager ``ops.all_reduce`` goes (diagnostic for the eager-overhead work).

    tools/tdist-run -n 2 -- python3 benchmarks/gpu_kernels/eager_host.py [--bytes 4096,65536] [--calls 2000]

For each size, every rank makes ``--calls`` eager calls back to back (no synchronisation inside the
loop, one at the end) and prints the host wall time per call; then the same loop with pieces taken
away, so that the differences name the pieces:

* ``ops``      ``ops.all_reduce(x)`` as a user calls it (after the first call: the cached plan,
               ``all_reduce.LLPlan``);
* ``checked``  ``ops.all_reduce(x, out=o)``: every check made again, the plan's launch reused;
* ``run``      ``all_reduce.run`` (the op without its validation and ``empty_like``);
* ``launch``   only the Triton launch of the LL kernel with arguments made once (Triton's own path,
               ``JITFunction.run``);
* ``direct``   only the plan's launch with arguments made once (``_launch.Launch``: the C path,
               ``tdist._C.CudaLaunch``, where the kernel allows it);
* ``ops-py``, ``dir-py``  ``ops`` and ``direct`` again with the plan's C path taken away (the compiled
               kernel's launcher, the path before it), in the same run;
* ``empty``    only ``torch.empty_like(x)``, for scale;
* ``gpu``      the GPU time per call (CUDA events around the ``ops`` loop / calls);
* ``graph``    the time per call of a CUDA graph of ``--graph-calls`` calls, replayed (no host
               launch work: the reference of the eager goal, eager finished / graph <= 1.5).

Rank 0 then prints the 15 functions with the most cumulative time in a cProfile of the ``ops`` loop.
Every loop is collective (each rank makes the same calls), and the sum is checked once.
"""
import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
from bench import ash, ops, torch  # noqa: E402

from tdist_kernels import all_reduce as _ar  # noqa: E402
from tdist_kernels._resources import RESOURCES  # noqa: E402


def per_call(fn, calls):
    ash.barrier_all()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) * 1e6 / calls, (t2 - t0) * 1e6 / calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", default="4096,65536")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--graph-calls", type=int, default=100)
    args = ap.parse_args()
    me, W, _ = bench.start(256 << 20, False, 1, nccl=False)
    for nbytes in (int(b) for b in args.bytes.split(",")):
        n = nbytes // 2
        x = torch.full((n,), float(me + 1), dtype=torch.bfloat16, device="cuda")
        out = ops.all_reduce(x)
        torch.cuda.synchronize()
        want = float(W * (W + 1) // 2)
        if not bool((out == want).all()):
            raise SystemExit(f"rank {me}: all_reduce of {nbytes} B gave {out[:4].tolist()}, want {want}")
        xf, o = x.view(-1), torch.empty_like(x)
        dt = "bfloat16"
        nsm = RESOURCES.sm_budget()
        rows = {}
        o2 = torch.empty_like(x)
        for name, fn in (("ops", lambda: ops.all_reduce(x)),
                         ("checked", lambda: ops.all_reduce(x, out=o2)),
                         ("run", lambda: _ar.run("one_shot_ll", xf, o, W, me, dt)),
                         ("empty", lambda: torch.empty_like(x))):
            rows[name] = [per_call(fn, args.calls) for _ in range(args.runs)]
        # the bare Triton launch: the LL kernel with every argument made once
        nw = nbytes // 4
        warps = _ar._ll_warps(nbytes)
        block = _ar.ll_block(W, warps)
        grid = max(1, min(_ar.allreduce_grid(nsm), _ar.cdiv(nw, block)))
        area, = RESOURCES.epoch_buffers(("all_reduce", "one_shot_ll", nw, W, grid), "all_reduce",
                                        ([_ar.ll_buffer_words(W, nw) + grid * 8], torch.int64))
        xi, oi, ep = xf.view(torch.int32), o.view(torch.int32), area[_ar.ll_buffer_words(W, nw):]
        kern = _ar.allreduce_ll_kernel[(grid,)]
        lfn = lambda: kern(xi, area, oi, ep, me, W, 0, 1, nw, KIND=_ar.LL_KIND[dt], BLOCK=block,  # noqa: E731
                           WP=_ar.pow2(W), num_warps=warps)
        rows["launch"] = [per_call(lfn, args.calls) for _ in range(args.runs)]
        # the plan's own launch (Launch: tdist._C.CudaLaunch where the kernel allows it), arguments
        # made once; then the user's call and that launch with the C path taken away (the compiled
        # kernel's launcher, as before it), in the same run
        plan = RESOURCES.plans.get(("all_reduce", x.shape, x.dtype, x.get_device(), "auto", RESOURCES.team_key()))
        if plan is not None:
            area_p, epochs_p, *scalars = plan._args  # what the plan's own call passes: addresses, PEs, words
            pa = (xi.data_ptr(), area_p, oi.data_ptr(), epochs_p, *scalars)
            rows["direct"] = [per_call(lambda: plan.launch(*pa), args.calls) for _ in range(args.runs)]
            c_path = plan.launch._c
            plan.launch._c = None
            try:
                rows["ops-py"] = [per_call(lambda: ops.all_reduce(x), args.calls) for _ in range(args.runs)]
                rows["dir-py"] = [per_call(lambda: plan.launch(*pa), args.calls) for _ in range(args.runs)]
            finally:
                plan.launch._c = c_path
            if me == 0:
                print(f"  (the plan's launch goes through {'tdist._C.CudaLaunch' if c_path else 'the kernel launcher'}"
                      "; ops-py / dir-py: the same calls through the kernel launcher)", flush=True)
        ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ash.barrier_all()
        ev0.record()
        for _ in range(args.calls):
            ops.all_reduce(x)
        ev1.record()
        torch.cuda.synchronize()
        gpu = ev0.elapsed_time(ev1) * 1e3 / args.calls
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(args.graph_calls):
                ops.all_reduce(x)
        reps = max(1, args.calls // args.graph_calls)
        graphed = [per_call(graph.replay, reps)[1] / args.graph_calls for _ in range(args.runs)]
        del graph
        if me == 0:
            print(f"all_reduce {nbytes} B, {W} ranks, {args.calls} calls x {args.runs} runs "
                  "(host us per call issued / until the GPU finished):", flush=True)
            for name, vals in rows.items():
                hs = ", ".join(f"{a:.1f}/{b:.1f}" for a, b in vals)
                print(f"  {name:7s} {hs}", flush=True)
            print(f"  gpu     {gpu:.1f} us per call (events around {args.calls} eager calls)", flush=True)
            print("  graph   " + ", ".join(f"{g:.1f}" for g in graphed) +
                  f" us per call (a graph of {args.graph_calls} calls replayed)", flush=True)
            eager = sorted(b for _, b in rows["ops"])[len(rows["ops"]) // 2]
            ratio = eager / sorted(graphed)[len(graphed) // 2]
            print(f"  eager finished / graph (medians): {ratio:.2f} (goal <= 1.5)", flush=True)
        prof = cProfile.Profile()
        ash.barrier_all()
        prof.enable()
        for _ in range(args.calls // 4):
            ops.all_reduce(x)
        prof.disable()
        torch.cuda.synchronize()
        if me == 0:
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(15)
            print(s.getvalue(), flush=True)
    ash.barrier_all()


if __name__ == "__main__":
    main()
