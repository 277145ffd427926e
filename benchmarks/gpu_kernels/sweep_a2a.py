"""The direct reverse all-to-all's tuning space, against NCCL in the same run: tile shape (BLOCK_S x
BLOCK_D) and programs per SM, at each size. Used to pick ``ops.direct_tiles`` and
``all_to_all.DIRECT_PROGRAMS_PER_SM``; every configuration's result is checked exactly.

    tools/tdist-run -n W -- python3 benchmarks/gpu_kernels/sweep_a2a.py --graph --inner 10 [--a2a-mb 1,16,64]
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (timed, worst, rgen, verify and the CUDA-graph switch)
from bench import ash, ops, torch  # noqa: E402

from tdist_kernels import all_to_all as a2a  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a2a-mb", default="1,16,64")
    ap.add_argument("--tiles", default="16x256,32x256,64x256,8x512,32x512",
                    help="BLOCK_S x BLOCK_D candidates (bf16, D = 1024)")
    ap.add_argument("--per-sm", default="2,4,8,16", help="programs per SM candidates")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--inner", type=int, default=10)
    ap.add_argument("--graph", action="store_true")
    args = ap.parse_args()
    me, W, dist = bench.start(2 << 30, args.graph, args.inner)
    dt, H, D = torch.bfloat16, 8, 1024
    tiles = [tuple(int(v) for v in t.split("x")) for t in args.tiles.split(",")]
    per_sm = [int(v) for v in args.per_sm.split(",")]
    for mb in [float(x) for x in args.a2a_mb.split(",")]:
        S = max(1, int(mb * 2**20) // (2 * H * D * W))
        tag = f"sweep-{mb}"
        a = bench.rgen(me, tag, (S * W, H, D), dt)
        ref = torch.cat([bench.rgen(r, tag, (S * W, H, D), dt)[me * S:(me + 1) * S] for r in range(W)], dim=1)
        base = None
        if dist is not None:
            flat = a.view(-1)
            o = torch.empty_like(flat)
            base = bench.worst(bench.timed(lambda: dist.all_to_all_single(o, flat), args.reps))
        sym = ash.aclshmem_create_tensor([S, H * W, D], dt)
        rows = []
        for bs, bd in tiles:
            for p in per_sm:
                a2a.DIRECT_PROGRAMS_PER_SM[ops.shared_gpu()] = p
                call = lambda: ops.reverse_all_to_all(a, variant="direct", out=sym, block_s=bs, block_d=bd)  # noqa: E731
                t = bench.worst(bench.timed(call, args.reps))
                bench.verify(f"direct {bs}x{bd} {p}/SM {mb} MiB", call, sym, ref)
                rows.append((t, bs, bd, p))
                ops.release()
        ash.aclshmem_free_tensor(sym)
        if me == 0:
            rows.sort()
            for t, bs, bd, p in rows:
                vs = f"  {base / t:.2f}x NCCL ({base * 1e6:.1f} us)" if base else ""
                print(f"SWEEP W={W} {mb:g} MiB/rank: {bs}x{bd} tiles, {p}/SM: {t * 1e6:.1f} us{vs}", flush=True)
    if dist is not None:
        dist.destroy_process_group()
    ops.release()
    ash.aclshmem_finalize()
    if bench.CHECKS["failed"]:
        print(f"rank {me}: {len(bench.CHECKS['failed'])} failed checks", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
