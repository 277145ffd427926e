"""The MoE Triton kernels (tdist_kernels.moe) on CPU ranks, with MoeBuffer's host plan in numpy:

    TDIST_PLATFORM=cpu PYTHONPATH=python python3 tools/tdist-run -n 4 -- \\
        .venv-ascend/bin/python tests/ascend/moe_cpu_worker.py

The same kernel sources as on CUDA, compiled through triton-ascend for CPU ranks (prefix sums as
masked reductions, SCAN_QUAD). Both modes, random and skewed routing (a rank sending nothing, the
last rank receiving nothing, empty slots), several consecutive calls on one buffer (rings, sequence
numbers and epochs across calls), bad input on one rank. Every rank rebuilds every rank's inputs
from (seed, call, rank) and checks: the dispatch output exactly (poisoned with NaN first; rows past
the groups stay NaN in high-throughput mode), the counts, the combine within (2 u + 8 K 2^-24) *
sum_k |w y|. Prints "PASS <case> (<s> s)" / "FAIL <case> (<s> s): why" and "<n> cases, <k> failures".

``--teams K``: every case runs over teams instead of the world (what ``moe_dispatch(group=)`` runs
on): the PEs split into K strided teams, each with its own team heap, every team running the cases
at once over its own members, its experts spread over them; the kernels get the team's rank, size
and PE map, and the inputs are seeded by the team too, so rows that crossed teams would be caught."""
import faulthandler
import os
import sys
import time

import numpy as np


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

SEED = 20261202
SIG = 8
STALL_REPORT_S = 240
REPEAT = 60
# rows per tile of the high-throughput kernels: 2 with chunks of 3, so a chunk moves in two tiles
# (one partly masked), as chunks larger than a tile do on the GPU (moe.ht_tile_rows)
TILE_ROWS = 2


def pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


class Buf:
    """MoeBuffer's areas and launches (python/tdist_kernels/moe.py) over numpy and cpu.launch."""

    def __init__(self, ash, cpu, moe, W, me, team, mode, E, H, K, max_tokens, chunk=3, nbuf=2, S=2):
        self.ash, self.cpu, self.moe, self.team = ash, cpu, moe, team
        # the kernels' PE map: member r of the team is world PE pe0 + r * pes (the world: 0, 1)
        self.pemap = (0, 1) if team is None else (team.start, team.stride)
        self.W, self.me, self.mode, self.E, self.H, self.K, self.T = W, me, mode, E, H, K, max_tokens
        self.L = E // W
        self.allocs = []
        self.ctl = np.zeros(4 * SIG, np.int64)
        if mode == "high_throughput":
            self.chunk, self.nbuf, self.S = chunk, nbuf, S
            self.recv_rows = max_tokens * W * min(K, self.L)
            self.R = E + W + 4
            n_ring = W * nbuf * chunk
            self.cnt = self.sym(2 * W * self.R, np.int32)
            self.flag = self.sym(2 * W * SIG, np.int64)
            self.ring = self.sym(n_ring * H, np.float32)
            self.ring_rows = self.sym(n_ring * K, np.int32)
            self.ring_w = self.sym(n_ring * K, np.float32)
            self.ready = self.sym(W * S * SIG, np.int64)
            self.credit = self.sym(W * S * SIG, np.int64)
            self.cring = self.sym(n_ring * H, np.float32)
            self.cready = self.sym(W * S * SIG, np.int64)
            self.ccredit = self.sym(W * S * SIG, np.int64)
            self.seq = np.zeros(4 * S * W, np.int64)
        else:
            self.S = 2
            self.S_d = 2  # dispatch senders per destination: columns, and a share of the experts' positions
            self.recv_rows = self.L * W * max_tokens
            n_area = 2 * W * max_tokens
            self.area = self.sym(n_area * H, np.float32)
            self.meta_j = self.sym(n_area * K, np.int32)
            self.meta_pos = self.sym(n_area * K, np.int32)
            self.meta_w = self.sym(n_area * K, np.float32)
            self.hdr = self.sym(2 * W * (8 + self.L), np.int32)
            self.flag = self.sym(2 * W * self.S_d * SIG, np.int64)
            self.carea = self.sym(n_area * H, np.float32)
            self.cflag = self.sym(2 * W * self.S * SIG, np.int64)
        for a in self.allocs:
            a[...] = 0
        ash.team_barrier(team)

    def sym(self, n, dt):
        t = self.ash.aclshmem_create_tensor([n], dt, team=self.team)
        self.allocs.append(t)
        return t

    def free(self):
        for t in reversed(self.allocs):
            self.ash.aclshmem_free_tensor(t)

    def dispatch(self, x, idx, w, out):
        m, W, E, L, K, H, T = self.moe, self.W, self.E, self.L, self.K, self.H, x.shape[0]
        idx = np.ascontiguousarray(idx, np.int32)
        Tc = min(T, self.T)
        bk = pow2(K)
        h = {"T": Tc, "idx": idx, "w": w}
        h_rows = np.full((W * self.T, K), -1, np.int32)
        h_w = np.zeros((W * self.T, K), np.float32)
        spos = np.zeros((max(Tc, 1), W), np.int32)
        counts = np.full(L, -7, np.int32)
        xs = np.ascontiguousarray(x if x.shape[0] else np.zeros((1, H), np.float32))
        ids = idx if idx.shape[0] else np.zeros((1, K), np.int32)
        ws = np.ascontiguousarray(w if w.shape[0] else np.zeros((1, K), np.float32))
        if self.mode == "high_throughput":
            pos = np.zeros((max(Tc, 1), K), np.int32)
            row = np.zeros(self.R, np.int32)
            send_list = np.zeros((W, self.T), np.int32)
            plan = np.zeros(m.plan_len(E, W, L), np.int32)
            # BLOCK_T fixed: one specialisation on every rank (a peer never waits for another's compile)
            self.cpu.launch(m.moe_layout_kernel, (E + W + 1,), ids, pos, row, send_list, spos, Tc, T, E, L, K, W,
                            self.T, BLOCK_T=16, BLOCK_K=bk, SCAN_QUAD=True)
            self.cpu.launch(m.moe_counts_kernel, (1,), row, self.cnt, self.flag, self.ctl, plan, counts, self.me, W,
                            *self.pemap, E, L, self.R, self.recv_rows, self.chunk, BLOCK_R=pow2(self.R),
                                BLOCK_E=pow2(E),
                            BLOCK_W=pow2(W), SCAN_QUAD=True)
            h["status"] = plan[:5].copy()
            self.cpu.launch(m.moe_ht_dispatch_kernel, (2 * self.S,), xs, ids, ws, pos, send_list, plan, self.ring,
                            self.ring_rows, self.ring_w, self.ready, self.credit, self.seq, out, h_rows, h_w,
                            self.me, W, *self.pemap, H, K, L, E, self.T, self.chunk, self.nbuf, self.S,
                            BLOCK_C=TILE_ROWS, BLOCK_H=16, BLOCK_K=bk)
            h.update(plan=plan, send_list=send_list)
        else:
            n_recv = np.zeros(W, np.int32)
            status = np.zeros(8, np.int32)
            # the W * S_d senders and two more programs; 4-token tiles: several token blocks a source
            grid = W * self.S_d + 2
            self.cpu.launch(m.moe_ll_dispatch_kernel, (grid,), xs, ids, ws, Tc, T, self.area, self.meta_j,
                            self.meta_pos, self.meta_w, self.hdr, self.flag, self.ctl, out, counts, spos, h_rows, h_w,
                            n_recv, status, self.me, W, *self.pemap, H, K, L, E, self.T, 8 + L, self.S_d,
                            BLOCK_T=pow2(max(self.T, W)), BLOCK_R=4, BLOCK_H=8, BLOCK_K=bk, BLOCK_L=pow2(L),
                            SCAN_QUAD=True)
            h.update(status=status[:5].copy(), n_recv=n_recv)
        h.update(spos=spos, h_rows=h_rows, h_w=h_w)
        return counts, h

    def combine(self, y, h):
        m, W, H, K, T = self.moe, self.W, self.H, self.K, h["T"]
        out = np.full((max(T, 1), H), np.nan, np.float32)
        bk = pow2(K)
        if self.mode == "high_throughput":
            acc = np.full((max(T, 1), H), np.nan, np.float32)  # the kernel reads no element it did not write
            self.cpu.launch(m.moe_ht_combine_kernel, (2 * self.S,), y, h["h_rows"], h["h_w"], h["plan"], h["send_list"],
                            h["spos"], self.cring, self.cready, self.ccredit, self.seq[2 * self.S * W:], acc, out,
                            self.me, W, *self.pemap, H, K, self.E, T, self.T, self.chunk, self.nbuf, self.S,
                            BLOCK_C=TILE_ROWS, BLOCK_H=16, BLOCK_K=bk, BLOCK_W=pow2(W))
        else:
            self.cpu.launch(m.moe_ll_combine_kernel, (W * self.S,), y, h["h_rows"], h["h_w"], h["n_recv"], h["spos"], T,
                            self.carea, self.cflag, self.ctl[2 * SIG:], out, self.me, W, *self.pemap, H, K, self.T,
                            self.S,
                            BLOCK_T=pow2(max(self.T, 1)), BLOCK_H=16, BLOCK_K=bk)
        return out[:T]


SALT = [0]  # the team's first PE with --teams: each team's inputs differ


def inputs(call, r, W, E, H, K, max_tokens, routing):
    g = np.random.default_rng([SEED, call, r, sum(map(ord, routing)), SALT[0]])
    T = int(g.integers(0, max_tokens + 1))
    if routing == "skewed" and r == 1 % W:
        T = 0
    L = E // W
    pool = E - L if routing == "skewed" and W > 1 else E
    idx = np.stack([g.permutation(pool)[:K] for _ in range(T)]).astype(np.int32) if T else np.zeros((0, K), np.int32)
    if routing == "skewed" and T:
        hot = g.random((T, K)) < 0.5
        idx = np.where(hot, np.arange(K)[None, :], idx).astype(np.int32)  # hot experts (a token may repeat one)
        if K > 1:
            idx[:, K - 1] = np.where(g.random(T) < 0.3, -1, idx[:, K - 1])
    x = g.standard_normal((T, H)).astype(np.float32)
    w = (g.random((T, K)) + 0.01).astype(np.float32)
    return x, idx, w


def scale(e):
    return np.float32(1.0 + (e % 16) / 16.0)


def describe(e):
    return f"{type(e).__name__}: {' | '.join(str(e).strip().splitlines()[:4])}"


def with_buffer(ash, buf, body):
    """body()'s verdict (None or why it failed), then a barrier and the buffer's release. A failure
    of those is added to the verdict, never put in its place: the first thing that went wrong on a
    rank is the one it reports."""
    try:
        bad = body()
    except Exception as e:  # noqa: BLE001 - a launch error is this case's failure
        bad = describe(e)
    try:
        ash.team_barrier(buf.team)
        buf.free()
    except Exception as e:  # noqa: BLE001
        bad = f"{bad}; then {describe(e)}" if bad else describe(e)
    return bad


def run_case(ctx, mode, routing, E, H, K, max_tokens, calls):
    ash, cpu, moe, W, me, team = ctx
    buf = Buf(ash, cpu, moe, W, me, team, mode, E, H, K, max_tokens)
    L = E // W

    def body():
        for call in range(calls):
            all_in = [inputs(call, r, W, E, H, K, max_tokens, routing) for r in range(W)]
            x, idx, w = all_in[me]
            shape = (buf.recv_rows, H)
            out = np.full(shape, np.nan, np.float32)
            counts, h = buf.dispatch(x, idx, w, out)
            if h["status"][0] != 0:
                return f"call {call}: status {h['status'].tolist()}"
            groups = [[(r, t) for r, (xr, ir, wr) in enumerate(all_in) for t in range(ir.shape[0]) for k in range(K)
                       if ir[t, k] == me * L + j] for j in range(L)]
            if counts.tolist() != [len(gj) for gj in groups]:
                return f"call {call}: counts {counts.tolist()}, expected {[len(gj) for gj in groups]}"
            y = np.full(shape, np.nan, np.float32)
            used = np.zeros(shape[0], bool)
            start = 0
            for j in range(L):
                s0 = start if mode == "high_throughput" else j * W * max_tokens
                n = len(groups[j])
                want = np.stack([all_in[r][0][t] for r, t in groups[j]]) if n else np.zeros((0, H), np.float32)
                if not np.array_equal(out[s0:s0 + n], want):
                    bad = np.argwhere(~(out[s0:s0 + n] == want))[0]
                    return f"call {call}: group {j} row {bad[0]} col {bad[1]} = {out[s0 + bad[0], bad[1]]}"
                used[s0:s0 + n] = True
                y[s0:s0 + n] = out[s0:s0 + n] * scale(me * L + j)
                start += n
            if mode == "high_throughput" and not np.isnan(out[~used]).all():
                return f"call {call}: a row past the groups was written"
            got = buf.combine(y, h)
            terms = np.zeros((x.shape[0], K, H))
            for k in range(K):
                e = idx[:, k]
                yk = (x * np.array([scale(v) for v in e], np.float32)[:, None]).astype(np.float64)
                terms[:, k] = np.where((e >= 0)[:, None], yk * w[:, k:k + 1], 0.0)
            want = terms.sum(1)
            tol = (2 * 2.0 ** -24 + 8 * K * 2.0 ** -24) * np.abs(terms).sum(1) + 1e-30
            bad = ~(np.abs(got - want) <= tol)
            if bad.any():
                i = np.argwhere(bad)[0]
                return f"call {call}: combine token {i[0]} col {i[1]} = {got[i[0], i[1]]}, expected {want[i[0], i[1]]}"
        return None
    return with_buffer(ash, buf, body)


def run_errors(ctx, mode):
    """A bad expert index on the last rank: every rank sees the same status; the buffer works after."""
    ash, cpu, moe, W, me, team = ctx
    E, H, K = 2 * W, 16, 2
    buf = Buf(ash, cpu, moe, W, me, team, mode, E, H, K, 4)

    def body():
        x = np.ones((3, H), np.float32)
        idx = np.array([[0, 1]] * 3, np.int32)
        w = np.full((3, K), 0.5, np.float32)
        bad = idx.copy()
        if me == W - 1:
            bad[2, 1] = E + 3
        out = np.full((buf.recv_rows, H), np.nan, np.float32)
        _, h = buf.dispatch(x, bad, w, out)
        if h["status"].tolist() != [1, W - 1, 2, 1, E + 3]:
            return f"status {h['status'].tolist()}, expected [1, {W - 1}, 2, 1, {E + 3}]"
        if mode == "high_throughput" and not np.isnan(out).all():
            return "data moved despite the bad input"
        counts, h = buf.dispatch(x, idx, w, out)
        if h["status"][0] != 0:
            return f"after the error: status {h['status'].tolist()}"
        got = buf.combine(out.copy(), h)
        if not np.allclose(got, 1.0):
            return f"after the error: combine {got[0, :4]}"
        return None
    return with_buffer(ash, buf, body)


def main(argv):
    import shmem as ash
    import tdist
    from triton_dist import cpu
    from tdist_kernels import moe
    teams = int(argv[1]) if argv[:1] == ["--teams"] else 0
    ash.init_from_env(local_mem_size=1 << 26)
    team = None
    if teams:
        n = tdist.n_pes()
        if n % teams:
            sys.exit(f"--teams {teams} does not divide the {n} PEs")
        for i in range(teams):  # collective over every PE: each split makes one team
            team = ash.new_team(list(range(i, n, teams)), heap_bytes=8 << 20) or team
        SALT[0] = team.start
    W, me = (team.size, team.rank) if team else (tdist.n_pes(), tdist.my_pe())
    ctx = (ash, cpu, moe, W, me, team)
    cases = []
    for mode in ("high_throughput", "low_latency"):
        for routing in ("random", "skewed"):
            cases.append((f"{mode} {routing}", lambda m=mode, r=routing: run_case(ctx, m, r, 2 * W, 24, 2, 7, 3)))
        cases.append((f"{mode} top-3 of {4 * W}", lambda m=mode: run_case(ctx, m, "random", 4 * W, 20, 3, 5, 2)))
        # many calls on one buffer: programs that share a tile of the handle at once (a masked
        # store that is a tile read-modify-write lost an entry about once in 40 calls)
        cases.append((f"{mode} top-3 of {4 * W} x {REPEAT}",
                      lambda m=mode: run_case(ctx, m, "random", 4 * W, 20, 3, 5, REPEAT)))
        cases.append((f"{mode} bad input", lambda m=mode: run_errors(ctx, m)))
    failures = 0
    for name, fn in cases:
        # A case that runs long (a compile, a slow peer) prints every thread's Python stack to
        # stderr, so that a stall in CI says where each rank was.
        faulthandler.dump_traceback_later(STALL_REPORT_S, repeat=True)
        t0 = time.monotonic()
        try:
            bad = fn()
        except Exception as e:  # noqa: BLE001 - a compile or launch error is this case's failure
            bad = describe(e)
        finally:
            faulthandler.cancel_dump_traceback_later()
        took = f"({time.monotonic() - t0:.1f} s)"
        if bad is None:
            print(f"PASS {name} {took}", flush=True)
        else:
            failures += 1
            print(f"FAIL {name} {took}: {bad}", flush=True)
    print(f"{len(cases)} cases, {failures} failures", flush=True)
    ash.aclshmem_finalize()
    return 1 if failures else 0


if __name__ == "__main__":
    if "RANK" not in os.environ:
        sys.exit("run under tools/tdist-run, e.g. tools/tdist-run -n 4 -- .venv-ascend/bin/python " + __file__)
    sys.exit(main(sys.argv[1:]))
