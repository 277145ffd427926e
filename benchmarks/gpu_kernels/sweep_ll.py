"""one_shot_ll all-reduce's program shape against NCCL in the same run: warps per program (the
payload per program scales with it; fewer warps mean more, smaller programs and a warp-only
reduction in the wait loop). Every configuration's result is checked against one_shot bit for bit.

    tools/tdist-run -n W -- python3 benchmarks/gpu_kernels/sweep_ll.py [--bytes 4096,65536] [--warps 1,2,4]
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
from bench import ash, ops, torch  # noqa: E402

from tdist_kernels import all_reduce as ar  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bytes", default="4096,65536,262144")
    ap.add_argument("--warps", default="1,2,4")
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    me, W, dist = bench.start(1 << 30, True, 10)
    for nb in [int(v) for v in args.bytes.split(",")]:
        x = bench.rgen(me, f"ll-{nb}", (nb // 2,), torch.bfloat16)
        ref = ops.all_reduce(x, variant="one_shot")
        o = torch.empty_like(x)
        base = None
        if dist is not None:
            y = x.clone()
            base = bench.worst(bench.timed(lambda: dist.all_reduce(y), args.reps))
        for wp in [int(v) for v in args.warps.split(",")]:
            ar.LL_WARPS = wp
            t = bench.worst(bench.timed(lambda: ops.all_reduce(x, variant="one_shot_ll", out=o), args.reps))
            bench.verify(f"one_shot_ll {nb} B {wp} warps",
                         lambda: ops.all_reduce(x, variant="one_shot_ll", out=o), o, ref)
            if me == 0:
                vs = f"  {t / base:.2f}x NCCL ({base * 1e6:.1f} us)" if base else ""
                print(f"SWEEP W={W} all_reduce one_shot_ll {nb} B, {wp} warps/program: {t * 1e6:.1f} us{vs}",
                      flush=True)
        ops.release()
    if dist is not None:
        dist.destroy_process_group()
    ash.aclshmem_finalize()
    if bench.CHECKS["failed"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
