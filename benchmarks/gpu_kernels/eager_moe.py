"""Where the host time of an eager low-latency MoE dispatch / combine goes (diagnostic).

    tools/tdist-run -n 2 -- python3 benchmarks/gpu_kernels/eager_moe.py [--tokens 128] [--calls 300]

DeepSeek-V3's shape by default (hidden 7168, top-8, 256 experts), random routing, bf16. Every rank
makes ``--calls`` calls back to back (no synchronisation inside the loop, one at the end) and prints
the host wall time per call, until the last call was issued / until the GPU finished:

* ``dispatch``   ``buf.dispatch(x, idx, w, check=False)`` as a decoding step calls it;
* ``combine``    ``buf.combine(y, handle)``;
* ``round``      dispatch then combine;
* ``graph``      a CUDA graph of one dispatch and one combine, replayed ``--calls`` times (no host
                 launch work: the reference);

then rank 0 prints the functions with the most own time in a cProfile of the dispatch loop. Each
call is collective (every rank makes the same calls) and the loop's last combine is checked against
the identity experts' result.
"""
import argparse
import cProfile
import io
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
from bench import ash, torch  # noqa: E402
from bench_moe import moe_calls, routing  # noqa: E402
from eager_host import per_call  # noqa: E402

from tdist_kernels import moe as _moe  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--shape", default="7168x8x256", help="HIDDENxTOPKxEXPERTS")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    me, W, _ = bench.start(4 << 30, False, 1, nccl=False)
    H, K, E = (int(v) for v in a.shape.split("x"))
    T = a.tokens
    buf = _moe.MoeBuffer(E, H, K, T, torch.bfloat16, mode="low_latency")
    x = torch.randn(T, H, device="cuda").to(torch.bfloat16)
    idx, w = routing("random", me, T, K, E, bench.SEED[0])
    disp, comb, check, st = moe_calls(buf, x, idx, w)

    def both():
        disp()
        comb()

    both()
    torch.cuda.synchronize()
    for name, fn in (("dispatch", disp), ("combine", comb), ("round", both)):
        for run in range(a.runs):
            issued, done = per_call(fn, a.calls)
            if me == 0:
                print(f"{name:9s} run {run}: {issued:7.1f} us issued, {done:7.1f} us finished per call", flush=True)
    ok = check()
    print(f"rank {me}: check {'ok' if ok else 'FAILED'}", flush=True)
    g, why = bench.capture(both)
    if g is None:
        sys.exit(f"rank {me}: the round is not capturable: {why}")
    for run in range(a.runs):
        issued, done = per_call(g.replay, a.calls)
        if me == 0:
            print(f"graph     run {run}: {issued:7.1f} us issued, {done:7.1f} us finished per round", flush=True)
    prof = cProfile.Profile()
    ash.barrier_all()
    prof.enable()
    for _ in range(a.calls):
        disp()
    prof.disable()
    torch.cuda.synchronize()
    if me == 0:
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(18)
        print(out.getvalue(), flush=True)
    st.clear()
    torch.cuda.synchronize()
    ash.barrier_all()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
