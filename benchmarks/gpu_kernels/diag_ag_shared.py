"""Where AG+GEMM's whole form spends its time when the ranks share a GPU: each piece of
``ag_gemm.run_in_place`` timed alone (all ranks at once, CUDA-graph replays, 10 calls per sample)
next to the matmul it is measured against.

    CUDA_VISIBLE_DEVICES=0 tools/tdist-run -n 2 -- python3 benchmarks/gpu_kernels/diag_ag_shared.py \
        [--shape 8192x8192x3584]
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402
from bench import ash, ops, torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="8192x8192x3584", help="M_total x K x N")
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    me, W, _ = bench.start(4 << 30, True, 10, nccl=False)
    Mt, K, N = (int(v) for v in args.shape.split("x"))
    M = Mt // W
    dt = torch.bfloat16
    a = torch.randn(M, K, device="cuda").to(dt)
    b = torch.randn(K, N, device="cuda").to(dt)
    full = torch.randn(Mt, K, device="cuda").to(dt)
    o = torch.empty(Mt, N, device="cuda", dtype=dt)
    rows = ash.aclshmem_create_tensor([M, K], dt)
    rows.copy_(a)
    stack = ash.peer_stack(rows)
    bc = b.expand(W, K, N).contiguous()
    peer = [ash.peer_tensor(rows, r) for r in range(W)]
    pieces = [
        ("matmul whole (the baseline)", lambda: torch.matmul(full, b, out=o)),
        ("matmul of one rank's rows", lambda: torch.matmul(a, b, out=o[:M])),
        ("bmm(peer_stack, b expanded)", lambda: torch.bmm(stack, b.expand(W, K, N), out=o.view(W, M, N))),
        ("bmm(peer_stack, b materialised)", lambda: torch.bmm(stack, bc, out=o.view(W, M, N))),
        ("W matmuls on peer views", lambda: [torch.matmul(peer[r], b, out=o[r * M:(r + 1) * M]) for r in range(W)]),
        ("copy of own rows", lambda: rows.copy_(a)),
        ("barrier_all_on_stream", lambda: ash.barrier_all_on_stream()),
        ("ag_gemm cublas_whole (whole op)", lambda: ops.ag_gemm(a, b, out=o, impl="cublas_whole")),
    ]
    res = []
    for name, fn in pieces:
        res.append((name, bench.worst(bench.timed(fn, args.reps, what=name))))
    if me == 0:
        base = res[0][1]
        for name, t in res:
            print(f"DIAG W={W} {args.shape}: {name}: {t * 1e6:.1f} us ({t / base:.3f}x the whole matmul)", flush=True)
    ops.release()
    ash.aclshmem_free_tensor(rows)
    ash.aclshmem_finalize()


if __name__ == "__main__":
    main()
