"""One rank of the tdist_kernels GPU soak: a long random sequence of the ops, every result checked.

    python3 tools/tdist-run -n 8 --timeout 900 -- python3 tests/gpu_kernels/soak_gpu.py --seconds 300

(scripts/gpu-run soak:8 runs it for $SOAK_SECONDS, default 240.) Rank 0 draws a seed (or takes
--seed) and broadcasts it; every rank draws the same sequence of steps from random.Random(seed), so
all ranks make the same collective calls in the same order. A step is one call of one op --
reverse_all_to_all, dispatch_all_to_all, all_reduce, ag_gemm or gemm_rs -- with a variant / impl, a
dtype (fp16, bf16, fp32) and a shape from small fixed menus (a few shapes per op, since the ops cache
their symmetric buffers per shape), so a step takes milliseconds; the Triton forms of the overlap
GEMMs are drawn rarely (they are slow). About one step in LATE_EVERY, a rank drawn from the same
sequence arrives late (its queue drained, then a sleep of a few ms). Inputs are fresh each step
(gen(seed, pe, tag) as in gpu_worker.py, so every rank computes the reference of its peers' data
locally); outputs are poisoned (NaN) before the call (all_reduce also runs sometimes without out=,
the eager plan path). Data movement is compared exactly (torch.equal); all_reduce within AR_TOL of
the float64 sum and bitwise equal on every rank; the GEMMs within GEMM_TOL of a float64 product.

The run stops collectively: every CHECK_EVERY steps rank 0 broadcasts whether --seconds have passed
on its clock and the ranks gather their mismatch counts (every step once any rank has one); they
stop when the time is up, when a rank has MAX_MISMATCHES, or at --steps. A mismatch is printed
(FAIL, with the step, op, variant, dtype, shape and the error) and counted; an exception is printed
with its traceback and ends this rank at once (exit 1; tdist-run then stops the others), since a
failed collective leaves the ranks out of step. At the end rank 0 prints a one-line JSON summary
(steps, seconds, per-op counts, mismatches, ranks); every rank prints "rank R: N failure(s)" like
gpu_worker.py and exits 1 if it had any. A failing sequence is replayed with --seed (rank 0 prints
it) and --verbose (rank 0 prints each step before running it).
"""
import argparse
import collections
import json
import os
import random
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))

import torch  # noqa: E402

import shmem as ash  # noqa: E402
import tdist  # noqa: E402
from tdist_kernels import ops  # noqa: E402

failures = []
DTYPES = [torch.float16, torch.bfloat16, torch.float32]
# relative-norm tolerances where arithmetic happens (fp32 GEMMs use tf32 tensor cores): gpu_worker.py's
GEMM_TOL = {torch.float16: 5e-3, torch.bfloat16: 2e-2, torch.float32: 5e-3}
AR_TOL = {torch.float16: 2e-3, torch.bfloat16: 1.5e-2, torch.float32: 1e-6}

# The menus. Each distinct (op, shape, dtype, variant) keeps its symmetric buffers until the end, so
# there are few shapes; at 8 ranks all of them together take well under the 1 GiB heap.
OPS = ("reverse_all_to_all", "dispatch_all_to_all", "all_reduce", "ag_gemm", "gemm_rs")
OP_WEIGHTS = {"reverse_all_to_all": 3, "dispatch_all_to_all": 2, "all_reduce": 3, "ag_gemm": 2, "gemm_rs": 2}
A2A_SHAPES = ((32, 4, 256), (37, 3, 100), (8, 16, 128))  # (S, H, D): reverse (S * W, H, D), dispatch (S, H * W, D)
AR_SIZES = ((7,), (4097,), (1 << 16,), (300000,))  # 300000 fp32 is above AUTO_LL_MAX_BYTES: "auto" -> two_shot
AG_SHAPES = ((128, 256, 384), (100, 72, 130), (256, 192, 512))  # (M, K, N) per rank -> (W * M, N)
RS_SHAPES = ((32, 256, 384), (25, 72, 130), (80, 192, 520))  # (M / W, K, N): a is (M, K) per rank
IMPL_WEIGHT, TRITON_WEIGHT = 3, 0.25  # the overlap GEMMs' impls: "triton" about 1 step in 40 of its op
AR_NO_OUT = 0.25  # the share of all_reduce steps called without out= (the eager fast path)
LATE_EVERY = 20  # about one step in LATE_EVERY has a late rank
LATE_S = (0.002, 0.02)  # how late it arrives (uniform, seconds)
CHECK_EVERY = 50  # steps between the collective stop checks
MAX_MISMATCHES = 10  # a rank with this many stops the run (at the next check)
NOTE_S = 30  # rank 0 prints progress at a check at most this often

Step = collections.namedtuple("Step", "op variant dtype shape kw late_rank late_s")


# the seeded inputs, the error measure, poisoned outputs and the cross-rank check of the GPU worker
from gpu_worker import gen, poisoned, rel_err, same_on_all_ranks  # noqa: E402,F401


# -- the sequence -------------------------------------------------------------------------------


def draw(rng, W, names):
    """The next step, drawn from ``rng`` alone: the same on every rank (nothing rank-dependent may
    decide what is drawn or how many draws a step takes)."""
    op = rng.choices(names, weights=[OP_WEIGHTS[n] for n in names])[0]
    kw = {}
    if op == "reverse_all_to_all":
        variant, shape = rng.choice(ops.REVERSE_A2A_VARIANTS), rng.choice(A2A_SHAPES)
    elif op == "dispatch_all_to_all":
        variant, shape = rng.choice(ops.DISPATCH_A2A_VARIANTS), rng.choice(A2A_SHAPES)
    elif op == "all_reduce":
        variant, shape = rng.choice(ops.ALLREDUCE_VARIANTS + ("auto",)), rng.choice(AR_SIZES)
        kw["out"] = rng.random() >= AR_NO_OUT
    else:
        impls = ops.AG_GEMM_IMPLS if op == "ag_gemm" else ops.GEMM_RS_IMPLS
        variant = rng.choices(impls, weights=[TRITON_WEIGHT if i == "triton" else IMPL_WEIGHT for i in impls])[0]
        shape = rng.choice(AG_SHAPES if op == "ag_gemm" else RS_SHAPES)
        # as gpu_worker.py's OVERLAP_FORMS: the piecewise cuBLAS forms with one or two GEMM streams
        kw["gemm_streams"] = 1 if variant in ("triton", "cublas_whole", "auto") else rng.choice((1, 2))
    dtype = rng.choice(DTYPES)
    late = rng.random() < 1 / LATE_EVERY
    late_rank, late_s = rng.randrange(W), rng.uniform(*LATE_S)
    return Step(op, variant, dtype, shape, kw, late_rank if late else None, late_s)


def label(st):
    v = st.variant
    if st.kw.get("gemm_streams", 1) > 1:
        v += ",gemm_streams=2"
    if st.kw.get("out") is False:
        v += ",out=None"
    return v


def describe(st):
    late = f" (rank {st.late_rank} {st.late_s * 1e3:.0f} ms late)" if st.late_rank is not None else ""
    return (f"{st.op} variant={label(st)} dtype={str(st.dtype).replace('torch.', '')} "
            f"shape={tuple(st.shape)}{late}")


# -- the steps: each returns (ok, detail) -------------------------------------------------------

SYM = {}  # (kind, shape, dtype) -> the symmetric out= of the direct all-to-alls, made once (collective)


def symmetric_out(kind, shape, dtype):
    key = (kind, tuple(shape), dtype)
    if key not in SYM:
        SYM[key] = ash.aclshmem_create_tensor(list(shape), dtype)
    return SYM[key]


def arrive(st, me):
    """This step's late rank drains its queue, then sleeps: the others enter the call first."""
    if st.late_rank == me:
        torch.cuda.synchronize()
        time.sleep(st.late_s)


def exact(out, ref):
    got = out.cpu()
    if torch.equal(got, ref):
        return True, ""
    return False, (f"{int((got != ref).sum())} of {ref.numel()} elements differ "
                   f"({int(torch.isnan(got).sum())} NaN: never written)")


def step_reverse(st, seed, me, W, tag):
    S, H, D = st.shape
    dt = st.dtype
    a = gen(seed, me, tag, (S * W, H, D), dt).cuda()
    ref = torch.cat([gen(seed, r, tag, (S * W, H, D), dt)[me * S:(me + 1) * S] for r in range(W)], dim=1)
    if st.variant == "direct":
        out = symmetric_out("reverse", (S, H * W, D), dt)
        out.fill_(float("nan"))
    else:
        out = poisoned((S, H * W, D), dt)
    arrive(st, me)
    ops.reverse_all_to_all(a, variant=st.variant, out=out)
    torch.cuda.synchronize()
    return exact(out, ref)


def step_dispatch(st, seed, me, W, tag):
    S, H, D = st.shape
    dt = st.dtype
    x = gen(seed, me, tag, (S, H * W, D), dt).cuda()
    ref = torch.cat([gen(seed, r, tag, (S, H * W, D), dt)[:, me * H:(me + 1) * H] for r in range(W)], dim=0)
    if st.variant == "direct":
        out = symmetric_out("dispatch", (S * W, H, D), dt)
        out.fill_(float("nan"))
    else:
        out = poisoned((S * W, H, D), dt)
    arrive(st, me)
    ops.dispatch_all_to_all(x, out=out, variant=st.variant)
    torch.cuda.synchronize()
    return exact(out, ref)


def step_all_reduce(st, seed, me, W, tag):
    (N,) = st.shape
    dt = st.dtype
    x = gen(seed, me, tag, (N,), dt).cuda()
    ref = sum(gen(seed, r, tag, (N,), dt).double() for r in range(W))
    out = poisoned((N,), dt) if st.kw["out"] else None
    arrive(st, me)
    y = ops.all_reduce(x, variant=st.variant, out=out)
    torch.cuda.synchronize()
    res = y if out is None else out
    e = rel_err(res, ref)
    same = same_on_all_ranks(res)  # collective: called on every rank whatever the comparison gave
    return e <= AR_TOL[dt] and same, f"rel_err={e:.2e} tol={AR_TOL[dt]:.0e} bitwise-equal-across-ranks={same}"


def step_ag_gemm(st, seed, me, W, tag):
    M, K, N = st.shape
    dt = st.dtype
    a = gen(seed, me, tag, (M, K), dt).cuda()
    b = gen(seed, 99, tag + "b", (K, N), dt).cuda()
    ref = torch.cat([gen(seed, r, tag, (M, K), dt) for r in range(W)]).cuda().double() @ b.double()
    out = poisoned((W * M, N), dt)
    if st.variant == "triton":
        kw = {"chunk_m": 128 if M > 256 else None}
    elif st.variant in ("auto", "cublas_whole"):
        kw = {}
    else:
        kw = {"gemm_streams": st.kw["gemm_streams"]}
    arrive(st, me)
    ops.ag_gemm(a, b, out=out, impl=st.variant, **kw)
    torch.cuda.synchronize()
    e = rel_err(out, ref)
    return e <= GEMM_TOL[dt], f"rel_err={e:.2e} tol={GEMM_TOL[dt]:.0e}"


def step_gemm_rs(st, seed, me, W, tag):
    ml, K, N = st.shape
    M = ml * W
    dt = st.dtype
    a = gen(seed, me, tag, (M, K), dt).cuda()
    b = gen(seed, me, tag + "b", (K, N), dt).cuda()
    # this rank's rows of the sum over ranks of a_r @ b_r
    ref = sum(gen(seed, r, tag, (M, K), dt)[me * ml:(me + 1) * ml].cuda().double()
              @ gen(seed, r, tag + "b", (K, N), dt).cuda().double() for r in range(W))
    out = poisoned((ml, N), dt)
    ns = st.kw["gemm_streams"]
    arrive(st, me)
    ops.gemm_rs(a, b, out=out, impl=st.variant, **({"gemm_streams": ns} if ns > 1 else {}))
    torch.cuda.synchronize()
    e = rel_err(out, ref)
    return e <= GEMM_TOL[dt], f"rel_err={e:.2e} tol={GEMM_TOL[dt]:.0e}"


STEPS = {"reverse_all_to_all": step_reverse, "dispatch_all_to_all": step_dispatch, "all_reduce": step_all_reduce,
         "ag_gemm": step_ag_gemm, "gemm_rs": step_gemm_rs}


# -- the run ------------------------------------------------------------------------------------


def parse_args():
    ap = argparse.ArgumentParser(description="tdist_kernels GPU soak (one rank; start it under tools/tdist-run)")
    ap.add_argument("--seconds", type=float, default=60,
                    help="run until this many seconds have passed on rank 0's clock (checked every "
                         f"{CHECK_EVERY} steps; default 60)")
    ap.add_argument("--steps", type=int, default=0, help="stop after this many steps (default 0: no limit)")
    ap.add_argument("--seed", type=int, default=None,
                    help="the sequence's seed (default: rank 0 draws one; the run prints it)")
    ap.add_argument("--ops", default=",".join(OPS), help=f"comma-separated ops to draw from (default {','.join(OPS)})")
    ap.add_argument("--verbose", action="store_true", help="rank 0 prints each step before running it")
    args = ap.parse_args()
    names = tuple(n for n in args.ops.split(",") if n)
    bad = [n for n in names if n not in OPS]
    if bad or not names:
        ap.error(f"--ops: {', '.join(bad) or 'none given'}; choose from {', '.join(OPS)}")
    return args, names


def gather_counts(n):
    """Collective: every rank's ``n`` (mismatches so far), in rank order."""
    got = bytes(tdist.ctrl_allgather(int(n).to_bytes(4, "little")))
    return [int.from_bytes(got[i:i + 4], "little") for i in range(0, len(got), 4)]


def main():
    args, names = parse_args()
    t_start = time.monotonic()
    me, W = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", me)) % torch.cuda.device_count())
    # the references are generated on the CPU: share its cores among the ranks of this host
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", W))))
    ash.init_from_env(local_mem_size=1 << 30, backend=tdist.BACKEND_CUDA)
    mine = os.urandom(4) if args.seed is None else (args.seed % 2**32).to_bytes(4, "little")
    seed = int.from_bytes(tdist.ctrl_broadcast(mine, 0), "little")
    info = ops.sm_info()
    print(f"rank {me}/{W}: seed {seed}, SM budget {info['budget']} (reported {info['reported']}, "
          f"MPS {info['mps_pct']} %)", flush=True)
    if me == 0:
        print(f"soak: {W} ranks, ops {','.join(names)}, --seconds {args.seconds:g}, --steps {args.steps}; "
              f"replay this sequence with --seed {seed}", flush=True)

    rng = random.Random(seed)
    counts, variants = collections.Counter(), collections.Counter()
    op_s = collections.Counter()  # seconds per op on this rank (inputs and references included)
    late_steps = 0
    slowest = (0.0, "")
    per_rank = [0] * W
    stopped_by = "steps"
    step = next_check = 0
    t0 = last_note = time.monotonic()
    while True:
        if step == next_check:
            # collective: the same steps on every rank decide together whether to go on
            stop = tdist.ctrl_broadcast(bytes([int(me == 0 and time.monotonic() - t0 >= args.seconds)]), 0)[0]
            per_rank = gather_counts(len(failures))
            if stop or max(per_rank) >= MAX_MISMATCHES:
                stopped_by = "seconds" if stop else "mismatches"
                break
            next_check = step + (1 if any(per_rank) else CHECK_EVERY)
            if me == 0 and time.monotonic() - last_note >= NOTE_S:
                last_note = time.monotonic()
                print(f"soak: step {step}, {last_note - t0:.0f} s, mismatches per rank {per_rank}", flush=True)
        if args.steps and step >= args.steps:
            break
        st = draw(rng, W, names)
        what = describe(st)
        if args.verbose and me == 0:
            print(f"step {step}: {what}", flush=True)
        t = time.monotonic()
        try:
            ok, detail = STEPS[st.op](st, seed, me, W, f"soak-{step}")
        except Exception:
            traceback.print_exc()
            print(f"FAIL step {step} {what}: raised (stopping: a failed collective leaves the ranks out of step)",
                  flush=True)
            failures.append(f"step {step} {st.op} {label(st)} raised")
            # no release or finalize: both are collective and the peers are elsewhere; exit at once
            # so that tdist-run stops the other ranks
            print(f"rank {me}: {len(failures)} failure(s): {failures[:MAX_MISMATCHES]} "
                  f"({time.monotonic() - t_start:.1f} s)", flush=True)
            sys.stderr.flush()
            os._exit(1)
        took = time.monotonic() - t
        counts[st.op] += 1
        variants[f"{st.op}/{label(st)}"] += 1
        op_s[st.op] += took
        late_steps += st.late_rank is not None
        if took > slowest[0]:
            slowest = (took, f"step {step} {what}")
        if not ok:
            print(f"FAIL step {step} {what} {detail}", flush=True)
            failures.append(f"step {step} {st.op} {label(st)} {str(st.dtype).replace('torch.', '')} "
                            f"{tuple(st.shape)}")
        step += 1
    seconds = time.monotonic() - t0

    per_rank = gather_counts(len(failures))  # collective
    if me == 0:
        print(json.dumps({"soak": "tdist_kernels", "ranks": W, "seed": seed, "steps": step,
                          "seconds": round(seconds, 1), "stopped_by": stopped_by, "ops": dict(counts),
                          "variants": dict(sorted(variants.items())), "late_steps": late_steps,
                          "mismatches": sum(per_rank), "mismatches_per_rank": per_rank,
                          "rank0_ms_per_step": {k: round(1e3 * op_s[k] / counts[k], 2) for k in counts},
                          "rank0_slowest_step": {"ms": round(1e3 * slowest[0], 1), "what": slowest[1]}}),
              flush=True)
    for t in SYM.values():  # collective, in the same order on every rank (made in the same order)
        ash.aclshmem_free_tensor(t)
    SYM.clear()
    ops.release()
    ash.aclshmem_finalize()
    print(f"rank {me}: {len(failures)} failure(s): {failures[:MAX_MISMATCHES]} "
          f"({time.monotonic() - t_start:.1f} s)", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
