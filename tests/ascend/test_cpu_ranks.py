"""The same dl.* kernel sources run on CPU ranks: triton-ascend's ttadapter output, lowered with
MLIR 22 and run over the CPU backend's program pool (docs/COMPILE.md section 4). Every rank checks
its output exactly (data only moves); the launcher fails the run if any rank fails."""
import os
import subprocess
import sys

import pytest

from conftest import REPO


def _run(n, script, *args, timeout=600):
    env = dict(os.environ, TDIST_PLATFORM="cpu", TDIST_WAIT_TIMEOUT_MS="30000",
               PYTHONPATH=os.pathsep.join([str(REPO / "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    cmd = [sys.executable, str(REPO / "tools" / "tdist-run"), "-n", str(n), "--", sys.executable, str(script), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    return r


@pytest.mark.parametrize("n", [2, 4])
def test_ring_kernel_on_cpu_ranks(n):
    r = _run(n, REPO / "examples" / "ring_kernel.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("3 epochs, exact") == n, r.stdout


@pytest.mark.parametrize("n", [2, 4])
def test_every_kernel_on_cpu_ranks(n):
    """tests/ascend/cpu_kernels_worker.py: every tdist_kernels kernel, ops.py's host protocol in
    numpy, several calls each; every op passes on every rank."""
    import cpu_kernels_worker as w
    r = _run(n, REPO / "tests" / "ascend" / "cpu_kernels_worker.py")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln.split("] ", 1)[-1] for ln in r.stdout.splitlines()]
    for op in w.OPS:
        assert sum(ln == f"PASS {op}" for ln in lines) == n, (op, r.stdout)
    assert sum(ln.startswith(f"{len(w.OPS)} ops, 0 failures") for ln in lines) == n, r.stdout


@pytest.mark.parametrize("n,teams", [(4, 2), (3, 3)])
def test_every_kernel_over_teams_on_cpu_ranks(n, teams):
    """The same worker with --teams: the PEs split into strided teams (each with its own team heap),
    every team running every kernel at once over its own members (what group= on the ops runs on):
    team allocations, team barriers, and the kernels' team PE map (pe0, pes)."""
    import cpu_kernels_worker as w
    r = _run(n, REPO / "tests" / "ascend" / "cpu_kernels_worker.py", "--teams", str(teams))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln.split("] ", 1)[-1] for ln in r.stdout.splitlines()]
    for op in w.OPS:
        assert sum(ln == f"PASS {op}" for ln in lines) == n, (op, r.stdout)
    assert sum(ln.startswith(f"{len(w.OPS)} ops, 0 failures") for ln in lines) == n, r.stdout


def test_bad_launches_are_named_errors():
    """tests/ascend/cpu_launch_errors.py: a non-contiguous array, a missing argument or constexpr
    and a grid over the CPU limit each fail with an error that names them."""
    r = _run(1, REPO / "tests" / "ascend" / "cpu_launch_errors.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("] OK ") == 4, r.stdout
