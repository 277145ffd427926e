"""Signal round trip of dl.notify + dl.wait in a Triton kernel, against the raw PTX floor measured in
the same run.

    tools/tdist-run -n 2 -- python3 benchmarks/gpu_kernels/bench_signal.py [--iters 20000] [--runs 5]

Ranks 0 and 1 play ping-pong on one int64 slot each: rank 0 notifies value i into rank 1's slot and
waits for i in its own; rank 1 waits, then answers. One program of one warp on each side, so the time
per iteration is one round trip (two one-way signals) through the GPU's memory system.

* ``dl``: ``dl.notify(slot, peer, i)`` + ``dl.wait(slot, 1, waitValue=i)``, exactly what a kernel
  author writes (the translation of the peer address, the bound on the wait and its failure path
  included);
* ``raw``: the floor: the peer address translated once, then one ``st.release.sys`` and an
  ``ld.acquire.sys`` spin with no bound, no status and no failure path.

Prints, per run, both times per round trip and ``ratio = dl / raw`` (goal <= 1.05), then the median,
min and max of the ratio over the runs. ``--json`` writes every run. Values keep rising across runs
(run r uses r * iters + i), so no slot is ever reset between runs.
"""
import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import shmem as ash  # noqa: E402
import tdist  # noqa: E402
import triton_dist.language as dl  # noqa: E402


@triton.jit
def pingpong_dl(slot, peer, base, iters, FIRST: tl.constexpr):
    for i in range(1, iters + 1):
        v = (base + i).to(tl.int64)
        if FIRST:
            dl.notify(slot, peer, v)
            dl.wait(slot, 1, "gpu", "acquire", waitValue=v)
        else:
            dl.wait(slot, 1, "gpu", "acquire", waitValue=v)
            dl.notify(slot, peer, v)


_RAW_WAIT = tl.constexpr("""{
    .reg .pred %p;
    .reg .u64 %v;
  spin:
    ld.acquire.sys.global.u64 %v, [$1];
    setp.ne.u64 %p, %v, $2;
    @%p bra spin;
    mov.u32 $0, 0;
}""")
_RAW_SIGNAL = tl.constexpr("""{
    .reg .pred %p;
    .reg .u32 %t;
    bar.sync 0;
    mov.u32 %t, %tid.x;
    setp.eq.u32 %p, %t, 0;
    @%p st.release.sys.global.u64 [$1], $2;
    mov.u32 $0, 0;
}""")


@triton.jit
def pingpong_raw(slot, peer, base, iters, FIRST: tl.constexpr):
    remote = dl.symm_at(slot, peer).to(tl.int64)
    mine = slot.to(tl.int64)
    for i in range(1, iters + 1):
        v = (base + i).to(tl.int64)
        if FIRST:
            tl.inline_asm_elementwise(_RAW_SIGNAL, "=r,l,l", [remote, v], dtype=tl.int32, is_pure=False, pack=1)
            tl.inline_asm_elementwise(_RAW_WAIT, "=r,l,l", [mine, v], dtype=tl.int32, is_pure=False, pack=1)
        else:
            tl.inline_asm_elementwise(_RAW_WAIT, "=r,l,l", [mine, v], dtype=tl.int32, is_pure=False, pack=1)
            tl.inline_asm_elementwise(_RAW_SIGNAL, "=r,l,l", [remote, v], dtype=tl.int32, is_pure=False, pack=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    me, W = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if W < 2:
        sys.exit("bench_signal.py needs 2 ranks")
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", me)) % torch.cuda.device_count())
    ash.init_from_env(local_mem_size=64 << 20, backend=tdist.BACKEND_CUDA)
    slots = {k: ash.aclshmem_create_tensor((8,), torch.int64) for k in ("dl", "raw")}
    for t in slots.values():
        t.zero_()
    torch.cuda.synchronize()
    ash.barrier_all()
    kernels = {"dl": pingpong_dl, "raw": pingpong_raw}
    peer = 1 - me if me < 2 else me
    runs = []
    for r in range(args.runs + 1):  # run 0 warms up (compiles, first touch)
        row = {}
        for name in ("raw", "dl"):
            base = r * args.iters
            ash.barrier_all_on_stream()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            if me < 2:
                kernels[name][(1,)](slots[name], peer, base, args.iters, FIRST=(me == 0), num_warps=1)
            e.record()
            e.synchronize()
            row[name + "_us"] = s.elapsed_time(e) * 1e3 / args.iters
            got = int(slots[name][0].item())
            if me < 2 and got != base + args.iters:
                sys.exit(f"bench_signal.py: rank {me} {name} run {r}: slot holds {got}, expected {base + args.iters}")
        row["ratio"] = row["dl_us"] / row["raw_us"]
        if r:
            runs.append(row)
    ash.barrier_all()
    for t in slots.values():
        ash.aclshmem_free_tensor(t)
    ash.aclshmem_finalize()
    if me == 0:
        ratios = [x["ratio"] for x in runs]
        res = {"device": torch.cuda.get_device_name(), "ranks": W, "iters": args.iters, "runs": runs,
               "ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios)}
        for x in runs:
            print(f"round trip: dl {x['dl_us']:.3f} us, raw PTX floor {x['raw_us']:.3f} us, ratio {x['ratio']:.3f}")
        print(f"SUMMARY signal round trip dl.notify+dl.wait / raw PTX floor: median {res['ratio_median']:.3f} "
              f"(min {res['ratio_min']:.3f}, max {res['ratio_max']:.3f}, {len(runs)} runs of {args.iters})")
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
