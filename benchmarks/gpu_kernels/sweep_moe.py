"""Launch shapes of the MoE kernels, swept (diagnostic for the MoE tuning work).

    tools/tdist-run -n 2 -- python3 benchmarks/gpu_kernels/sweep_moe.py [--rounds 3] [--shape 7168x8x256]
    tools/tdist-run -n 2 -- python3 benchmarks/gpu_kernels/sweep_moe.py --mode high_throughput --tokens 4096

For each variant (``MoeBuffer(..., _tune=...)``, the keys of ``MoeBuffer.shape``: low latency, tile
rows / columns, warps and grid of the dispatch and the combine; high throughput, the two kernels'
tile rows), one buffer, one checked round (combine(dispatch(x)) = (sum_k w) x within the
stated bound, identity experts), then the dispatch alone and the combine alone timed as CUDA-graph
replays (``bench.timed``, median of ``--reps``). The variants run in turn in every round, so that
drifts of the machine fall on all of them; rank 0 prints each variant's median and range over the
rounds, and the register and spill counts of its compiled kernels. Grids larger than the default
are taken only where the compiled kernel's registers leave room for every program to stay
co-resident (``resident_grid`` with the kernel's own register count).

``--variants "default;d_warps=8;chunk_tokens=128,slices=14"`` replaces the built-in list (keys of
``MoeBuffer.shape``, or the buffer's ``chunk_tokens`` / ``buffer_num`` / ``slices``); ``--profile N``
also prints every rank's device time per kernel over N eager dispatches and combines of the first
(default) buffer, from torch.profiler.
"""
import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
from bench import ash, ops, torch  # noqa: E402
from bench_moe import moe_calls, routing  # noqa: E402

from tdist_kernels import moe as _moe  # noqa: E402
from tdist_kernels._common import RESIDENT_FILL, programs_per_sm, resident_grid  # noqa: E402
from tdist_kernels._resources import RESOURCES  # noqa: E402


def variants(mode, regs):
    """(name, tune) pairs; ``regs``: (dispatch, combine) registers per thread of the default build."""
    if mode == "high_throughput":
        return [("default", {})] + [(f"d_rows={d},c_rows={c}", {"d_rows": d, "c_rows": c})
                                    for d, c in ((64, 64), (32, 32), (32, 16), (64, 16))]  # (64, 64): before
    sms = RESOURCES.sm_budget()
    d_fit, c_fit = (int(sms * programs_per_sm(4, regs_per_thread=r) * RESIDENT_FILL) for r in regs)
    base = resident_grid(sms, 4)
    out = [("default", {}),
           ("d_rows=16", {"d_rows": 16}), ("d_rows=64", {"d_rows": 64}),
           ("d_cols=128", {"d_cols": 128}), ("d_cols=512", {"d_cols": 512}),
           ("d_warps=8", {"d_warps": 8}),
           ("c_cols=64,c_warps=4 (before)", {"c_cols": 64, "c_warps": 4}),
           ("c_cols=64", {"c_cols": 64})]
    if d_fit >= 2 * base:
        out.append((f"d_grid={2 * base}", {"d_grid": 2 * base}))
    if c_fit >= 2 * base:
        out.append((f"c_grid={2 * base}", {"c_grid": 2 * base}))
    return out


BUFFER_KEYS = ("chunk_tokens", "buffer_num", "slices")  # variant keys that are MoeBuffer arguments, not _tune


def parse_variant(text):
    """'d_rows=32,chunk_tokens=128' -> {'d_rows': 32, 'chunk_tokens': 128}; 'default' -> {}."""
    out = {}
    for item in filter(None, text.split(",")):
        if item == "default":
            continue
        k, _, v = item.partition("=")
        if not v:
            raise SystemExit(f"sweep_moe: variant item {item!r} is not key=value")
        out[k.strip()] = int(v)
    return out


def one(me, W, mode, tune, H, K, E, T, reps, seed, profile=0):
    opts = {k: v for k, v in tune.items() if k in BUFFER_KEYS}
    tune = {k: v for k, v in tune.items() if k not in BUFFER_KEYS}
    buf = _moe.MoeBuffer(E, H, K, T, torch.bfloat16, mode=mode, _tune=tune, **opts)
    x = torch.randn(T, H, device="cuda").to(torch.bfloat16)
    idx, w = routing("random", me, T, K, E, seed)
    d, c, check, st = moe_calls(buf, x, idx, w)
    c()
    torch.cuda.synchronize()
    ok = check()
    t_d = bench.timed(d, reps)
    t_c = bench.timed(c, reps)
    if profile:
        kernel_times(me, d, c, profile)
    ks = {n: (getattr(k, "n_regs", -1), getattr(k, "n_spills", -1)) for n, k in buf.kernels.items()}
    grids = (buf.grid_d, buf.S_d, buf.grid_c, buf.S) if mode == "low_latency" else (2 * buf.S, buf.shape)
    st.clear()
    torch.cuda.synchronize()
    ops.release()
    return ok, t_d * 1e6, t_c * 1e6, ks, grids


def kernel_times(me, d, c, calls):
    """Device time of each kernel of ``calls`` dispatches and combines (torch.profiler, CUPTI), printed
    by every rank: which launch of a call holds its time."""
    from torch.profiler import ProfilerActivity, profile
    ash.barrier_all_on_stream()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            d()
        for _ in range(calls):
            c()
        torch.cuda.synchronize()
    rows = []
    for ev in prof.key_averages():
        dev_us = getattr(ev, "device_time_total", None)
        if dev_us is None:
            dev_us = ev.cuda_time_total
        if dev_us > 0:
            rows.append((dev_us / calls, ev.count, ev.key))
    for us, n, name in sorted(rows, reverse=True)[:12]:
        print(f"[profile rank {me}] {us:9.1f} us per call  x{n // calls:<3d} {name[:90]}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="7168x8x256", help="HIDDENxTOPKxEXPERTS")
    ap.add_argument("--mode", default="low_latency", choices=_moe.MODES)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--variants", default="", help="instead of the built-in list: ';'-separated variants, each "
                    "','-separated key=value of MoeBuffer.shape or of " + "/".join(BUFFER_KEYS) + " ('default': none)")
    ap.add_argument("--profile", type=int, default=0, help="also profile this many calls of the default variant")
    a = ap.parse_args()
    me, W, _ = bench.start(4 << 30, True, 1, nccl=False)
    H, K, E = (int(v) for v in a.shape.split("x"))
    ok, _, _, ks, _ = one(me, W, a.mode, {}, H, K, E, a.tokens, 2, bench.SEED[0], a.profile)
    kind = "ll" if a.mode == "low_latency" else "ht"
    regs = (ks[f"{kind}_dispatch"][0], ks[f"{kind}_combine"][0])
    todo = variants(a.mode, regs) if not a.variants else [(v, parse_variant(v)) for v in a.variants.split(";")]
    res = {name: ([], [], None, None) for name, _ in todo}
    bad = 0 if ok else 1
    for rnd in range(a.rounds):
        for name, tune in todo:
            ok, td, tc, ks, grids = one(me, W, a.mode, tune, H, K, E, a.tokens, a.reps, bench.SEED[0] + rnd)
            bad += 0 if ok else 1
            res[name][0].append(td)
            res[name][1].append(tc)
            res[name] = (res[name][0], res[name][1], ks, grids)
            if me == 0:
                print(f"round {rnd} {name:22s} dispatch {td:7.1f} us combine {tc:7.1f} us {'ok' if ok else 'FAIL'}",
                      flush=True)
    if me == 0:
        print(f"{a.mode}, shape {a.shape}, {a.tokens} tokens per rank, {W} ranks; graph replays, us: median [min-max] "
              f"over {a.rounds} rounds")
        for name, (tds, tcs, ks, grids) in res.items():
            print(f"{name:22s} dispatch {statistics.median(tds):7.1f} [{min(tds):.1f}-{max(tds):.1f}]  combine "
                  f"{statistics.median(tcs):7.1f} [{min(tcs):.1f}-{max(tcs):.1f}]  grids {grids} "
                  f"regs/spills {ks}", flush=True)
        print(f"checks failed: {bad}", flush=True)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
