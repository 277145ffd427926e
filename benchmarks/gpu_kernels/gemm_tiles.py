"""The Triton GEMM tile loop against cuBLAS on one GPU: which tile loop can the per-tile fused forms
(``ag_gemm`` / ``gemm_rs`` impl "triton") afford?

Every variant computes ``c = a @ b`` (a (M, K), b (K, N), row-major) and is timed with
``triton.testing.do_bench`` (median) in rounds that alternate the variants, so the spread of the
rounds is printed beside each ratio (``t_cublas / t_variant``, higher is better).

Variants:
  ``ptr``            the tile loop the fused forms use today (``_gemm.k_loop``: pointer loads,
                     masked in K and N), one program per tile, grouped order
  ``ptr_even``       the same without the K and N masks (shapes that divide the blocks)
  ``tma``            host tensor descriptors (TMA loads and store), one program per tile
  ``tma_persist``    the same, a persistent grid of one program per SM walking the tiles
  ``tma_ws``         the persistent one with the tile loop warp-specialized

    python3 benchmarks/gpu_kernels/gemm_tiles.py [--rounds 3] [--json out.json]
"""
import argparse
import json
import statistics
import sys

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

sys.path.insert(0, __file__.rsplit("/benchmarks/", 1)[0] + "/python")
from tdist_kernels._gemm import k_loop, tile_of  # noqa: E402


@triton.jit
def ptr_kernel(a_ptr, b_ptr, c_ptr, M, N, K, EVEN: tl.constexpr,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    tm, tn = tile_of(pid, tiles_m, tiles_n, GROUP_M)
    rm = tm * BLOCK_M + tl.arange(0, BLOCK_M)
    rm = tl.where(rm < M, rm, M - 1)
    rn = tn * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rm.to(tl.int64)[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk.to(tl.int64)[:, None] * N + rn[None, :]
    if EVEN:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for _ in range(0, K, BLOCK_K):
            acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
            a_ptrs += BLOCK_K
            b_ptrs += BLOCK_K * N
    else:
        acc = k_loop(a_ptrs, b_ptrs, rn < N, K, 1, N, BLOCK_M, BLOCK_N, BLOCK_K)
    rm = tm * BLOCK_M + tl.arange(0, BLOCK_M)
    tl.store(c_ptr + rm.to(tl.int64)[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm < M)[:, None] & (rn < N)[None, :])


@triton.jit
def tma_kernel(a_desc, b_desc, c_desc, M, N, K,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tm, tn = tile_of(pid, tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        acc = tl.dot(a_desc.load([tm * BLOCK_M, k]), b_desc.load([k, tn * BLOCK_N]), acc)
    c_desc.store([tm * BLOCK_M, tn * BLOCK_N], acc.to(c_desc.dtype))


@triton.jit
def tma_persist_kernel(a_desc, b_desc, c_desc, M, N, K, WS: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       GROUP_M: tl.constexpr):
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, tl.num_programs(0), warp_specialize=WS):
        tm, tn = tile_of(tile, tiles_m, tiles_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            acc = tl.dot(a_desc.load([tm * BLOCK_M, k]), b_desc.load([k, tn * BLOCK_N]), acc)
        c_desc.store([tm * BLOCK_M, tn * BLOCK_N], acc.to(c_desc.dtype))


CONFIGS = [  # (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages)
    (128, 256, 64, 8, 3),
    (128, 256, 64, 8, 4),
    (128, 128, 64, 8, 4),
    (128, 128, 64, 4, 4),
]


def launcher(variant, a, b, c, cfg, nsm):
    bm, bn, bk, warps, stages = cfg
    M, K = a.shape
    N = b.shape[1]
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    opts = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages)
    if variant.startswith("ptr"):
        even = variant == "ptr_even"
        return lambda: ptr_kernel[(tiles,)](a, b, c, M, N, K, EVEN=even, **opts)
    ad = TensorDescriptor.from_tensor(a, [bm, bk])
    bd = TensorDescriptor.from_tensor(b, [bk, bn])
    cd = TensorDescriptor.from_tensor(c, [bm, bn])
    if variant == "tma":
        return lambda: tma_kernel[(tiles,)](ad, bd, cd, M, N, K, **opts)
    ws = variant == "tma_ws"
    return lambda: tma_persist_kernel[(min(nsm, tiles),)](ad, bd, cd, M, N, K, WS=ws, **opts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rep", type=int, default=300, help="do_bench repetition time per timing, ms")
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.manual_seed(0)
    nsm = torch.cuda.get_device_properties(0).multi_processor_count
    shapes = [(8192, 8192, 3584, torch.bfloat16), (4096, 4096, 4096, torch.bfloat16),
              (8192, 8192, 3584, torch.float16)]
    variants = ["ptr", "ptr_even", "tma", "tma_persist", "tma_ws"]
    rows = []
    for M, K, N, dt in shapes:
        a = torch.randn(M, K, device="cuda", dtype=dt)
        b = torch.randn(K, N, device="cuda", dtype=dt)
        ref = torch.matmul(a, b)
        flops = 2.0 * M * N * K
        cands = {"cublas": lambda: torch.matmul(a, b, out=c_cublas)}
        c_cublas = torch.empty_like(ref)
        outs = {}
        for v in variants:
            for cfg in CONFIGS:
                c = torch.full_like(ref, float("nan"))
                name = f"{v} {cfg[0]}x{cfg[1]}x{cfg[2]} w{cfg[3]} s{cfg[4]}"
                try:
                    fn = launcher(v, a, b, c, cfg, nsm)
                    fn()
                    torch.cuda.synchronize()
                except Exception as e:  # a config a variant cannot compile is reported, not fatal
                    print(f"{M}x{K}x{N} {dt}: {name}: not run: {type(e).__name__}: {str(e)[:200]}", flush=True)
                    continue
                err = ((c.float() - ref.float()).norm() / ref.float().norm()).item()
                if not err < 1e-2:  # NaN fails too
                    print(f"{M}x{K}x{N} {dt}: {name}: WRONG rel_err {err}", flush=True)
                    continue
                cands[name] = fn
                outs[name] = err
        times = {k: [] for k in cands}
        for _ in range(args.rounds):
            for k, fn in cands.items():
                times[k].append(triton.testing.do_bench(fn, warmup=50, rep=args.rep, return_mode="median"))
        base = statistics.median(times["cublas"])
        for k, ts in times.items():
            ratios = [t_c / t for t_c, t in zip(times["cublas"], ts)]
            row = dict(shape=[M, K, N], dtype=str(dt).split(".")[-1], variant=k, ms=ts,
                       tflops=[flops / t / 1e9 for t in ts], ratio=ratios, rel_err=outs.get(k))
            rows.append(row)
            print(f"{M}x{K}x{N} {row['dtype']:9s} {k:34s} median {statistics.median(ts):.3f} ms "
                  f"{flops / statistics.median(ts) / 1e9:6.0f} TFLOP/s  cublas/this {min(ratios):.3f}-"
                  f"{max(ratios):.3f}", flush=True)
        print(f"{M}x{K}x{N} cublas median {base:.3f} ms", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(0), triton=triton.__version__,
                           torch=torch.__version__, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
