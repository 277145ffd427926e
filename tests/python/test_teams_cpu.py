"""The team bindings (docs/CONTRACT.md section 8) on CPU ranks under tdist-run: splits with team heaps,
split_2d, team allocation at equal offsets with data moved between members, team barriers and
all-gathers, and the errors (mismatch, rejected argument, non-member, no heap, live allocations at
destroy, heap_bytes that differ at the split), every one raised on every PE that takes part. Each rank
prints one line per case; the test fails unless every rank ran every case and the job exited 0."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("tdist._C", reason="tdist._C not built (cmake -DTDIST_BUILD_PYTHON=ON)")

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import ctypes, sys, time
    sys.path.insert(0, {python!r})
    import tdist
    tdist.init_from_env(local_mem_size=16 << 20, backend=tdist.BACKEND_CPU, control_timeout_s=30,
                        wait_timeout_ms=20000)
    me, n = tdist.my_pe(), tdist.n_pes()
    cases = []

    def case(name):
        def run(fn):
            t0 = time.monotonic()
            try:
                fn()
                print("OK", f"{{time.monotonic() - t0:.2f}}", name, flush=True)
            except Exception as e:
                print("WRONG", name, type(e).__name__, str(e)[:300], flush=True)
            cases.append(name)
        return run

    def expect(exc, needle, fn, *args):
        try:
            fn(*args)
        except exc as e:
            assert needle in str(e), (needle, str(e))
            return
        raise AssertionError(f"{{fn.__name__}}{{args}} did not raise {{exc.__name__}}")

    def world_offsets_equal():
        p = tdist.malloc(4096)
        got = tdist.ctrl_allgather(tdist.heap_offset(p).to_bytes(8, "little"))
        assert len(set(got[i:i + 8] for i in range(0, len(got), 8))) == 1, got
        tdist.free(p)

    heap = 1 << 16
    even = tdist.team_split_strided(tdist.TEAM_WORLD, 0, 2, (n + 1) // 2, heap_bytes=heap)
    odd = tdist.team_split_strided(tdist.TEAM_WORLD, 1, 2, n // 2, heap)
    mine = odd if me % 2 else even

    @case("split")
    def _():
        assert (even == tdist.TEAM_INVALID) == (me % 2 == 1) and (odd == tdist.TEAM_INVALID) == (me % 2 == 0)
        start, stride, size = tdist.team_world_pes(mine)
        assert (start, stride) == (me % 2, 2) and size == tdist.team_n_pes(mine), (start, stride, size)
        assert tdist.team_my_pe(mine) == me // 2
        assert tdist.team_heap_free_bytes(mine) == heap - 256

    @case("heap and data")
    def _():
        start, stride, size = tdist.team_world_pes(mine)
        slot = 512
        buf = tdist.team_malloc(mine, slot * size)
        aligned = tdist.team_align(mine, 4096, 100)
        assert aligned % 4096 == 0
        offs = tdist.team_ctrl_allgather(mine, tdist.heap_offset(buf).to_bytes(8, "little"))
        assert len(offs) == 8 * size and len(set(offs[i:i + 8] for i in range(0, len(offs), 8))) == 1
        mine_bytes = bytes((me * 7 + i) % 251 for i in range(slot))
        r = tdist.team_my_pe(mine)
        for m in range(size):  # into my slot of every member's buffer, through the peer mapping
            ctypes.memmove(tdist.ptr(buf + r * slot, start + m * stride), mine_bytes, slot)
        tdist.team_barrier(mine)
        for m in range(size):
            pe = start + m * stride
            assert ctypes.string_at(buf + m * slot, slot) == bytes((pe * 7 + i) % 251 for i in range(slot)), m
        tdist.team_barrier(mine)
        tdist.team_free(mine, aligned)
        tdist.team_free(mine, buf)
        assert tdist.team_heap_free_bytes(mine) == heap - 256
        world_offsets_equal()

    @case("ctrl_allgather member order")
    def _():
        start, stride, size = tdist.team_world_pes(mine)
        got = tdist.team_ctrl_allgather(mine, bytes([me]) * 3)
        assert got == b"".join(bytes([start + m * stride]) * 3 for m in range(size)), got

    @case("split_2d")
    def _():
        xr = 2 if n % 2 == 0 else 1
        x, y = tdist.team_split_2d(tdist.TEAM_WORLD, xr, x_heap_bytes=heap, y_heap_bytes=0)
        assert tdist.team_world_pes(x) == (me // xr * xr, 1, xr)
        assert tdist.team_world_pes(y) == (me % xr, xr, n // xr)
        p = tdist.team_malloc(x, 1000)  # the x-teams share one block: the same offset on every PE
        got = tdist.ctrl_allgather(tdist.heap_offset(p).to_bytes(8, "little"))
        assert len(set(got[i:i + 8] for i in range(0, len(got), 8))) == 1
        tdist.team_free(x, p)
        expect(tdist.InvalidParam, "has no team heap", tdist.team_malloc, y, 64)
        expect(tdist.InvalidParam, "has no team heap", tdist.team_heap_free_bytes, y)
        tdist.team_barrier(y)
        tdist.team_destroy(x)
        tdist.team_destroy(y)

    @case("mismatch")
    def _():
        if tdist.team_n_pes(mine) < 2:
            return
        r = tdist.team_my_pe(mine)
        expect(tdist.CollectiveMismatch, "called team_malloc(8192)", tdist.team_malloc, mine, 8192 if r == 1 else 4096)
        assert tdist.team_heap_free_bytes(mine) == heap - 256

    @case("rejected argument")
    def _():
        if tdist.team_n_pes(mine) < 2:
            return
        r = tdist.team_my_pe(mine)
        expect(tdist.InvalidParam, "size -1 is out of range", tdist.team_malloc, mine, -1 if r == 1 else 64)
        expect(tdist.InvalidParam, "data must be bytes", tdist.team_ctrl_allgather, mine, "x" if r == 0 else b"x")
        expect(tdist.InvalidParam, "ptr must be an int", tdist.team_free, mine, "p" if r == 1 else 0)
        assert tdist.team_heap_free_bytes(mine) == heap - 256

    @case("non-member and bad handles")
    def _():
        if n > 1:  # the other team's handle (handles agree on every PE): PE 1's for the even PEs, PE 0's for the odd
            handles = tdist.ctrl_allgather(mine.to_bytes(4, "little"))
            other = int.from_bytes(handles[4:8] if me % 2 == 0 else handles[0:4], "little")
            t0 = time.monotonic()
            expect(tdist.InvalidParam, "is not a member of team", tdist.team_malloc, other, 64)
            expect(tdist.InvalidParam, "is not a member", tdist.team_barrier, other)
            expect(tdist.InvalidParam, "is not a member", tdist.team_ctrl_allgather, other, b"x")
            assert time.monotonic() - t0 < 5
        expect(tdist.InvalidParam, "team -1 does not exist", tdist.team_malloc, tdist.TEAM_INVALID, 64)
        expect(tdist.InvalidParam, "team must be an int", tdist.team_malloc, "world", 64)
        expect(tdist.InvalidParam, "has no team heap", tdist.team_malloc, tdist.TEAM_WORLD, 64)
        assert tdist.team_world_pes(tdist.TEAM_WORLD) == (0, 1, n)
        tdist.team_barrier(tdist.TEAM_WORLD)

    @case("destroy with a live allocation")
    def _():
        p = tdist.team_malloc(mine, 256)
        expect(tdist.InvalidParam, "live allocation", tdist.team_destroy, mine)
        tdist.team_free(mine, p)

    @case("heap_bytes that differ at the split")
    def _():
        free = tdist.heap_free_bytes()
        if n > 1:
            expect(tdist.CollectiveMismatch, "-byte heap", tdist.team_split_strided, 0, 0, 1, n,
                   4096 if me == 0 else 8192)
        expect(tdist.InvalidParam, "heap_bytes -5", tdist.team_split_2d, 0, 1, -5 if me == n - 1 else 0, 0)
        assert tdist.heap_free_bytes() == free
        world_offsets_equal()

    @case("stream barrier without the CUDA backend")
    def _():
        expect(tdist.TdistError, "tdist_cuda_team_barrier_on_stream", tdist.cuda_team_barrier_on_stream, mine, 0)

    tdist.team_destroy(mine)
    tdist.ctrl_barrier()
    tdist.finalize()
    print("DONE", len(cases), flush=True)
""")


@pytest.mark.parametrize("n", [2, 4])
def test_team_bindings_on_cpu_ranks(n):
    code = SCRIPT.format(python=str(REPO / "python"))
    r = subprocess.run([sys.executable, str(REPO / "tools" / "tdist-run"), "-n", str(n), "--timeout", "120", "--",
                        sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    out = r.stdout
    assert r.returncode == 0, out[-3000:] + r.stderr[-3000:]
    for rank in range(n):
        lines = [ln.split("] ", 1)[1] for ln in out.splitlines() if ln.startswith(f"[rank {rank}] ")]
        wrong = [ln for ln in lines if ln.startswith("WRONG")]
        assert not wrong, (rank, wrong)
        oks = [ln for ln in lines if ln.startswith("OK ")]
        assert len(oks) == 10, (rank, lines)
        assert all(float(ln.split()[1]) < 10 for ln in oks), oks  # nobody waited for a timeout
        assert "DONE 10" in lines, lines
