"""tdist_kernels benchmark: ratios against baselines measured in the same run.

    tools/tdist-run -n W -- python3 benchmarks/gpu_kernels/bench.py [--json out.json] [--ops a2a,gemm,ar]

All ranks run each op at the same time (a stream barrier over all PEs before every timed repetition),
so on one GPU under MPS the baselines run under the same SM sharing as the kernels:

* reverse all-to-all (direct, pipeline, bulk, wait_notify) and dispatch (staged, direct) vs the copy
  ceiling (each rank copies the same bytes device to
  device, read + write counted: ``ratio = t_copy / t_a2a``, goal >= 0.85) and vs a torch reference
  (the same permutation done locally by ``a.view(W, S, H, D).transpose(0, 1).reshape(...)``);
* AG + GEMM (cuBLAS and Triton forms) vs torch.matmul alone on the gathered shape, GEMM + RS vs
  torch.matmul alone on the full
  (M, K) x (K, N) product: ``ratio = t_fused / t_matmul``, goal <= 1.10;
* all-reduce (one_shot, two_shot, ring, one_shot_ll) latency / bus bandwidth;
* with one GPU per rank (torch.cuda.device_count() >= W): NCCL through torch.distributed
  (all_to_all_single, all_gather_into_tensor + matmul, matmul + reduce_scatter_tensor, all_reduce);
  for the overlap ops also NCCL's collective alone, and ``ideal_overlap_speedup`` = sequential time
  / max(matmul alone, collective alone): the most any overlap of those two pieces can give.

Each op's time is the median of per-repetition CUDA-event times of the whole op as a user calls it
(signal reset and the protocol's two barriers included); ``--graph`` times CUDA-graph replays.
Every op's result is checked once outside the timing: inputs are fresh random tensors (a seed drawn
by rank 0 per run; every rank rebuilds its peers' inputs for the reference), the output is
poisoned with NaN first, data movement must match exactly, arithmetic within a stated relative
error; any miss fails the job.
"""
import argparse
import json
import os
import statistics
import sys
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import torch  # noqa: E402

import shmem as ash  # noqa: E402
import tdist  # noqa: E402
from tdist_kernels import ops  # noqa: E402


_T0 = [0.0]


def progress(msg):
    """One line per measurement on rank 0's stderr, with the elapsed time (long sweeps)."""
    import time
    if not _T0[0]:
        _T0[0] = time.time()
    if int(os.environ.get("RANK", "0")) == 0:
        print(f"[bench {time.time() - _T0[0]:7.1f} s] {msg}", file=sys.stderr, flush=True)


GRAPH = {"on": False, "failed": []}


def capture(fn):
    """fn captured into a CUDA graph (after an eager warm-up on a side stream, as torch requires), or
    None when something in it cannot be captured (the reason is recorded in the JSON)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            fn()
    except Exception as e:  # noqa: BLE001 - reported, then measured eagerly
        return None, f"{type(e).__name__}: {str(e)[:200]}"
    return g, None


INNER = [1]


def timed(fn, reps, warmup=2, what=None):
    """Median time of one call of ``fn`` over ``reps`` samples (CUDA events, every rank synchronised by
    a stream barrier before each sample). With ``--graph`` the call is captured once and replayed: the
    GPU time without the host's launch overhead, as a CUDA-graph user runs it. With ``--inner K`` a
    sample is K back-to-back calls divided by K (as nccl-tests times): the steady-state time per
    call, without the barrier's release and the first launch, which every sample pays once (~15 us
    on an H200, measured as the floor of a 1 MiB copy); every op here is safe to call back to back,
    each carries its own protocol."""
    if what:
        progress(what)
    for _ in range(warmup):
        fn()
    run = fn
    if GRAPH["on"]:
        g, why = capture(fn)
        if g is None:
            GRAPH["failed"].append({"op": what, "why": why})
            progress(f"  not capturable, timed eagerly: {why}")
        else:
            run = g.replay
            run()
    ts = []
    for _ in range(reps):
        ash.barrier_all_on_stream()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(INNER[0]):
            run()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) * 1e-3 / INNER[0])
    return statistics.median(ts)


SEED = [0]
CHECKS = {"passed": 0, "failed": []}


def rgen(pe, tag, shape, dtype):
    """Fresh random input of PE ``pe`` (seed drawn by rank 0 for this run): every rank can rebuild
    any peer's input on its own GPU for the reference."""
    g = torch.Generator(device="cuda")
    g.manual_seed((SEED[0] * 1000003 + pe * 7919 + zlib.crc32(tag.encode())) % 2**62)
    return torch.randn(*shape, generator=g, device="cuda").to(dtype)


def verify(name, fn, out, ref, tol=0.0):
    """One checked call of ``fn`` (outside the timing): ``out`` poisoned with NaN first, then compared
    with ``ref`` exactly (``tol`` 0: data only moves) or by relative error of the norm."""
    out.fill_(float("nan"))
    fn()
    torch.cuda.synchronize()
    if tol == 0.0:
        ok, detail = bool(torch.equal(out, ref)), "exact"
    else:
        o, r = out.double(), ref.double()
        err = float("inf") if torch.isnan(o).any() else float((o - r).norm() / max(float(r.norm()), 1e-30))
        ok, detail = err <= tol, f"rel_err {err:.2e} (tol {tol:.0e})"
    if ok:
        CHECKS["passed"] += 1
    else:
        CHECKS["failed"].append(f"{name}: {detail}")
        print(f"CHECK FAILED {name}: {detail}", file=sys.stderr, flush=True)


def worst(t):
    """The slowest rank's time (all ranks must call it)."""
    got = tdist.ctrl_allgather(float(t).hex().encode().ljust(32))
    return max(float.fromhex(bytes(got[i:i + 32]).decode().strip()) for i in range(0, len(got), 32))


def _nccl():
    import torch.distributed as dist
    return dist if dist.is_initialized() else None


def bench_a2a(me, W, res, reps, sizes_mb):
    dt = torch.bfloat16
    H, D = 8, 1024
    dist = _nccl()
    res["a2a"] = []
    for mb in sizes_mb:
        S = max(1, int(mb * 2**20) // (2 * H * D * W))
        tag = f"a2a-{mb}"
        a = rgen(me, tag, (S * W, H, D), dt)
        ref = torch.cat([rgen(r, tag, (S * W, H, D), dt)[me * S:(me + 1) * S] for r in range(W)], dim=1)
        nbytes = a.numel() * a.element_size()
        src = torch.randn(nbytes // 2, device="cuda").to(dt)
        dst = torch.empty_like(src)
        t_copy = worst(timed(lambda: dst.copy_(src), reps, what=f"copy {nbytes >> 20} MiB"))
        out_ref = torch.empty(S, H * W, D, device="cuda", dtype=dt)
        t_torch = worst(timed(lambda: out_ref.copy_(a.view(W, S, H, D).transpose(0, 1).reshape(S, W * H, D)), reps))
        row = {"shape": [S * W, H, D], "dtype": "bfloat16", "bytes_per_rank": nbytes, "ranks": W,
               "copy_s": t_copy, "copy_GBps_rw": 2 * nbytes / t_copy / 1e9, "torch_local_permute_s": t_torch}
        if dist is not None:
            flat = a.view(-1)
            o = torch.empty_like(flat)
            row["nccl_all_to_all_single_s"] = worst(timed(lambda: dist.all_to_all_single(o, flat), reps))
        sym = ash.aclshmem_create_tensor([S, H * W, D], dt)
        for variant in ("direct", "pipeline", "bulk", "wait_notify"):
            out = sym if variant == "direct" else torch.empty(S, H * W, D, device="cuda", dtype=dt)
            t = worst(timed(lambda: ops.reverse_all_to_all(a, variant=variant, out=out), reps, what=f"a2a {variant}"))
            verify(f"a2a {variant} {mb} MiB", lambda: ops.reverse_all_to_all(a, variant=variant, out=out), out, ref)
            row[variant] = {"s": t, "GBps_rw": 2 * nbytes / t / 1e9, "vs_copy_ceiling": t_copy / t,
                            "vs_torch_local": t_torch / t}
            if dist is not None:
                row[variant]["vs_nccl"] = row["nccl_all_to_all_single_s"] / t
        del ref
        x = rgen(me, tag + "d", (S, H * W, D), dt)
        refd = torch.cat([rgen(r, tag + "d", (S, H * W, D), dt)[:, me * H:(me + 1) * H] for r in range(W)], dim=0)
        t = worst(timed(lambda: ops.dispatch_all_to_all(x), reps))
        dout = torch.empty(S * W, H, D, device="cuda", dtype=dt)
        verify(f"dispatch staged {mb} MiB", lambda: ops.dispatch_all_to_all(x, out=dout), dout, refd)
        row["dispatch_staged"] = {"s": t, "vs_copy_ceiling": t_copy / t}
        dsym = ash.aclshmem_create_tensor([S * W, H, D], dt)
        t = worst(timed(lambda: ops.dispatch_all_to_all(x, out=dsym, variant="direct"), reps))
        verify(f"dispatch direct {mb} MiB", lambda: ops.dispatch_all_to_all(x, out=dsym, variant="direct"), dsym, refd)
        row["dispatch_direct"] = {"s": t, "vs_copy_ceiling": t_copy / t}
        if dist is not None:
            for k in ("dispatch_staged", "dispatch_direct"):
                row[k]["vs_nccl"] = row["nccl_all_to_all_single_s"] / row[k]["s"]
        ash.aclshmem_free_tensor(dsym)
        ash.aclshmem_free_tensor(sym)
        ops.release()
        res["a2a"].append(row)


IMPLS = ["cublas", "cublas_ce", "cublas_whole", "triton"]
ONE_STREAM = ("triton", "cublas_whole", "auto")  # forms without a GEMM-stream choice
GEMM_STREAMS = [1, 2]


def forms(op_impls):
    """(label, kwargs) of the overlap forms to time: the --impls this op has, the cuBLAS ones at every
    --gemm-streams count ("cublas/2s": two GEMM streams)."""
    out = []
    for impl in IMPLS:
        if impl not in op_impls:
            continue
        for ns in ((1,) if impl in ONE_STREAM else GEMM_STREAMS):
            kw = {"impl": impl} if impl in ONE_STREAM else {"impl": impl, "gemm_streams": ns}
            out.append((impl if ns == 1 else f"{impl}/{ns}s", kw))
    return out


def _vs_nccl_seq(row, seq_key, comm_key, t_fused, t_mm, t_seq, t_comm):
    """The overlap op against the NCCL + cuBLAS sequence, and what a perfect overlap of those same two
    pieces would give: the sequential time over the longer piece (a goal above it needs a faster GEMM
    or faster communication, not more overlap)."""
    row[seq_key], row[comm_key] = t_seq, t_comm
    row["speedup_vs_nccl_seq"] = t_seq / t_fused
    row["ideal_overlap_speedup"] = t_seq / max(t_mm, t_comm)


def _baseline(row, before, after, labels):
    """The matmul baseline, timed before and after the fused forms (under MPS the same GEMM has varied
    by 10 % between two timings of one run): the faster of the two is the baseline (the stricter
    ratio), both are recorded, and every form gets its ratio against it."""
    t = min(before, after)
    row["matmul_alone_s"], row["matmul_alone_before_after_s"] = t, [before, after]
    for lb in labels:
        row[lb]["ratio_vs_matmul"] = row[lb]["s"] / t
    return t


def bench_gemm(me, W, res, reps, shapes):
    dt = torch.bfloat16
    dist = _nccl()
    res["ag_gemm"], res["gemm_rs"] = [], []
    for (Mt, K, N) in shapes:
        M = Mt // W
        tag = f"gemm-{Mt}-{K}-{N}"
        a = rgen(me, tag, (M, K), dt)
        b = rgen(999, tag + "b", (K, N), dt)  # the same b on every rank
        full = torch.randn(W * M, K, device="cuda").to(dt)
        mm = lambda: torch.matmul(full, b)  # noqa: E731
        t_mm0 = worst(timed(mm, reps, what=f"matmul {W * M}x{K}x{N}"))
        flops = 2.0 * W * M * K * N
        # what the cuBLAS decomposition runs W times: one rank's rows (diagnostic, not a baseline)
        t_part = worst(timed(lambda: torch.matmul(a, b), reps, what=f"matmul {M}x{K}x{N}"))
        row = {"M_total": W * M, "K": K, "N": N, "ranks": W, "matmul_one_rank_rows_s": t_part}
        ag_forms = forms(ops.AG_GEMM_IMPLS)
        for label, kw in ag_forms:
            t = worst(timed(lambda: ops.ag_gemm(a, b, **kw), reps, what=f"ag_gemm {label} {Mt}x{K}x{N}"))
            o = torch.empty(W * M, N, device="cuda", dtype=dt)
            ref = torch.cat([rgen(r, tag, (M, K), dt) for r in range(W)]).float() @ b.float()
            verify(f"ag_gemm {label} {Mt}x{K}x{N}", lambda: ops.ag_gemm(a, b, out=o, **kw), o, ref, tol=2e-2)
            del ref
            row[label] = {"s": t, "TFLOPs_per_rank": flops / t / 1e12}
        t_mm = _baseline(row, t_mm0, worst(timed(mm, reps)), [lb for lb, _ in ag_forms])
        t_ag = min(row[lb]["s"] for lb, _ in ag_forms)
        row["fused_s"], row["ratio_vs_matmul"] = t_ag, t_ag / t_mm
        if dist is not None:
            g = torch.empty(W * M, K, device="cuda", dtype=dt)
            _vs_nccl_seq(row, "nccl_ag_then_cublas_s", "nccl_ag_alone_s", t_ag, t_mm,
                         worst(timed(lambda: (dist.all_gather_into_tensor(g, a), torch.matmul(g, b)), reps)),
                         worst(timed(lambda: dist.all_gather_into_tensor(g, a), reps)))
        res["ag_gemm"].append(row)
        a2 = rgen(me, tag + "rs", (W * M, K), dt)
        mm2 = lambda: torch.matmul(a2, b)  # noqa: E731
        t_mm20 = worst(timed(mm2, reps))
        row = {"M": W * M, "K": K, "N": N, "ranks": W}
        rs_forms = forms(ops.GEMM_RS_IMPLS)
        for label, kw in rs_forms:
            t = worst(timed(lambda: ops.gemm_rs(a2, b, **kw), reps, what=f"gemm_rs {label} {Mt}x{K}x{N}"))
            o = torch.empty(M, N, device="cuda", dtype=dt)
            ref = sum(rgen(r, tag + "rs", (W * M, K), dt)[me * M:(me + 1) * M].float() @ b.float() for r in range(W))
            verify(f"gemm_rs {label} {Mt}x{K}x{N}", lambda: ops.gemm_rs(a2, b, out=o, **kw), o, ref, tol=2e-2)
            del ref
            row[label] = {"s": t}
        t_mm2 = _baseline(row, t_mm20, worst(timed(mm2, reps)), [lb for lb, _ in rs_forms])
        t_rs = min(row[lb]["s"] for lb, _ in rs_forms)
        row["fused_s"], row["ratio_vs_matmul"] = t_rs, t_rs / t_mm2
        if dist is not None:
            r = torch.empty(M, N, device="cuda", dtype=dt)
            c = torch.matmul(a2, b)
            _vs_nccl_seq(row, "cublas_then_nccl_rs_s", "nccl_rs_alone_s", t_rs, t_mm2,
                         worst(timed(lambda: dist.reduce_scatter_tensor(r, torch.matmul(a2, b)), reps)),
                         worst(timed(lambda: dist.reduce_scatter_tensor(r, c), reps)))
        res["gemm_rs"].append(row)
        ops.release()


def bench_ar(me, W, res, reps, sizes):
    dist = _nccl()
    res["all_reduce"] = {}
    for nbytes in sizes:
        n = max(1, nbytes // 2)
        x = rgen(me, f"ar-{nbytes}", (n,), torch.bfloat16)
        ref = sum(rgen(r, f"ar-{nbytes}", (n,), torch.bfloat16).float() for r in range(W))
        o = torch.empty(n, device="cuda", dtype=torch.bfloat16)
        row = {}
        for variant in ops.ALLREDUCE_VARIANTS:
            t = worst(timed(lambda: ops.all_reduce(x, variant=variant), reps, what=f"all_reduce {variant} {nbytes} B"))
            verify(f"all_reduce {variant} {nbytes} B", lambda: ops.all_reduce(x, variant=variant, out=o), o, ref,
                   tol=1.5e-2)
            row[variant] = {"s": t, "busbw_GBps": 2 * (W - 1) / W * nbytes / t / 1e9}
        if dist is not None:
            y = x.clone()
            row["nccl_s"] = worst(timed(lambda: dist.all_reduce(y), reps))
            for variant in ops.ALLREDUCE_VARIANTS:
                row[variant]["vs_nccl_latency"] = row[variant]["s"] / row["nccl_s"]
        res["all_reduce"][str(nbytes)] = row
        ops.release()


def start(heap_bytes, graph, inner, nccl=True):
    """Process setup of this benchmark and of the scripts built on it (sweep_*.py, diag_*.py): timing
    mode, this rank's GPU, the tdist heap, the run's random seed (rank 0's draw) and, with one GPU
    per rank, NCCL through torch.distributed. Returns (rank, world size, torch.distributed or None)."""
    GRAPH["on"] = graph
    INNER[0] = inner
    me, W = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", me)) % torch.cuda.device_count())
    ash.init_from_env(local_mem_size=heap_bytes, backend=tdist.BACKEND_CUDA)
    torch.manual_seed(1234 + me)
    got = tdist.ctrl_allgather(int.from_bytes(os.urandom(8), "little").to_bytes(8, "little"))
    SEED[0] = int.from_bytes(bytes(got[:8]), "little")  # rank 0's draw, the same on every rank
    if not (nccl and torch.cuda.device_count() >= W > 1):
        return me, W, None
    import torch.distributed as dist
    dist.init_process_group("nccl", rank=me, world_size=W, device_id=torch.device("cuda", me))
    return me, W, dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="")
    ap.add_argument("--ops", default="a2a,gemm,ar")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--a2a-mb", default="64", help="all-to-all sizes per rank, MiB, comma-separated")
    ap.add_argument("--gemm-shapes", default="4096x4096x4096",
                    help="GEMM shapes MtotalxKxN, comma-separated (e.g. 8192x8192x3584)")
    ap.add_argument("--ar-bytes", default="4096,65536,262144,67108864")
    ap.add_argument("--no-nccl", action="store_true")
    ap.add_argument("--heap-gib", type=int, default=4,
                    help="symmetric heap per rank (the 256 MiB all-to-all needs ~1.3 GiB)")
    ap.add_argument("--graph", action="store_true",
                    help="time CUDA-graph replays of every op and baseline (no host launch overhead)")
    ap.add_argument("--impls", default="cublas,cublas_ce,cublas_whole,triton",
                    help="AG+GEMM / GEMM+RS implementations to time (each op times those it has)")
    ap.add_argument("--gemm-streams", default="1,2", help="GEMM stream counts for the cuBLAS forms")
    ap.add_argument("--inner", type=int, default=1,
                    help="calls per timed sample, back to back (steady state; see timed())")
    args = ap.parse_args()
    if args.inner < 1:
        ap.error(f"--inner must be >= 1, got {args.inner}")
    IMPLS[:] = args.impls.split(",")
    GEMM_STREAMS[:] = [int(x) for x in args.gemm_streams.split(",")]
    me, W, dist = start(args.heap_gib << 30, args.graph, args.inner, nccl=not args.no_nccl)
    res = {"ranks": W, "gpus": torch.cuda.device_count(), "device": torch.cuda.get_device_name(),
           "sm_budget_per_rank": ops.sm_budget(), "mps_pct": os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")}
    wanted = args.ops.split(",")
    if dist is not None:
        res["nccl"] = True
    if "a2a" in wanted:
        bench_a2a(me, W, res, args.reps, [float(x) for x in args.a2a_mb.split(",")])
    if "gemm" in wanted:
        bench_gemm(me, W, res, args.reps, [tuple(int(v) for v in sh.split("x")) for sh in args.gemm_shapes.split(",")])
    if "ar" in wanted:
        bench_ar(me, W, res, args.reps, [int(x) for x in args.ar_bytes.split(",")])
    if _nccl() is not None:
        _nccl().destroy_process_group()
    ops.release()
    ash.aclshmem_finalize()
    res["mode"] = mode = "graph" if args.graph else "eager"
    res["calls_per_sample"] = args.inner
    if args.inner > 1:
        mode += f" ({args.inner} calls per sample)"
    res["checks"] = dict(CHECKS)
    res["not_capturable"] = GRAPH["failed"]
    if me == 0:
        text = json.dumps(res, indent=1)
        if args.json:
            Path(args.json).write_text(text)
        print(text)
        for row in res.get("a2a", []):
            line = (f"SUMMARY W={W} {mode} a2a {row['bytes_per_rank'] >> 20} MiB/rank: "
                    f"copy ceiling {row['copy_GBps_rw']:.0f} GB/s; ")
            line += "; ".join(f"{v} {row[v]['vs_copy_ceiling']:.2f}x ceiling" + (
                f" {row[v]['vs_nccl']:.2f}x NCCL" if "vs_nccl" in row[v] else "")
                for v in ("direct", "pipeline", "bulk", "wait_notify", "dispatch_staged", "dispatch_direct"))
            print(line)
        for k in ("ag_gemm", "gemm_rs"):
            for row in res.get(k, []):
                extra = f", {row['speedup_vs_nccl_seq']:.2f}x faster than NCCL+cuBLAS sequential " \
                    f"(a perfect overlap of those two pieces: {row['ideal_overlap_speedup']:.2f}x)" \
                    if "speedup_vs_nccl_seq" in row else ""
                impls = ", ".join(f"{lb} {row[lb]['s'] * 1e3:.3f} ms ({row[lb]['ratio_vs_matmul']:.2f}x)"
                                  for lb, _ in forms(ops.AG_GEMM_IMPLS + ops.GEMM_RS_IMPLS) if lb in row)
                print(f"SUMMARY W={W} {mode} {k} {row.get('M_total', row.get('M'))}x{row['K']}x{row['N']}: "
                      f"matmul alone {row['matmul_alone_s'] * 1e3:.3f} ms; {impls}{extra}")
        print(f"SUMMARY W={W} {mode} result checks on rank 0: {CHECKS['passed']} passed, "
              f"{len(CHECKS['failed'])} failed (every rank checks its own and fails the job on a miss)")
        for nb, row in res.get("all_reduce", {}).items():
            print(f"SUMMARY W={W} {mode} all_reduce {int(nb)} B: " + ", ".join(
                f"{v} {row[v]['s'] * 1e6:.1f} us" for v in ops.ALLREDUCE_VARIANTS) + (
                f", NCCL {row['nccl_s'] * 1e6:.1f} us" if "nccl_s" in row else ""))


if __name__ == "__main__":
    main()
    if CHECKS["failed"]:
        sys.exit(f"bench.py: {len(CHECKS['failed'])} result check(s) FAILED: {CHECKS['failed']}")
