"""The MoE Triton kernels (tdist_kernels.moe) on CPU ranks through triton-ascend
(tests/ascend/moe_cpu_worker.py): both modes, random and skewed routing, bad input; every rank
checks its outputs (dispatch exact, combine within the stated bound); the launcher fails the run if
any rank fails. The first run compiles the kernels (minutes on a 2-core machine; ranks compile the
same specialisations, so the wait bound covers a peer that is still compiling)."""
import os
import subprocess
import sys

import pytest

from conftest import REPO


@pytest.mark.parametrize("n,teams", [(2, 0), (4, 0), (4, 2)])
def test_moe_kernels_on_cpu_ranks(n, teams):
    """teams: the PEs split into that many strided teams, each running every case over its own
    members at once (what moe_dispatch(group=) runs on)."""
    env = dict(os.environ, TDIST_PLATFORM="cpu", TDIST_WAIT_TIMEOUT_MS="900000",
               PYTHONPATH=os.pathsep.join([str(REPO / "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    cmd = [sys.executable, str(REPO / "tools" / "tdist-run"), "-n", str(n), "--timeout", "1500", "--", sys.executable,
           str(REPO / "tests" / "ascend" / "moe_cpu_worker.py")] + (["--teams", str(teams)] if teams else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1600, env=env, cwd=REPO)
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    lines = [ln.split("] ", 1)[-1] for ln in r.stdout.splitlines()]
    assert sum(ln == "10 cases, 0 failures" for ln in lines) == n, r.stdout[-6000:]
