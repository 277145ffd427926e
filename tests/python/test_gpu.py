"""Multi-rank GPU tests (tools/tdist-run, several ranks on one GPU under MPS). Skipped without a
CUDA GPU, torch and the device bitcode."""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from gpu_worker_launch import gpu_skip_reason, run_worker  # noqa: E402

_reason = gpu_skip_reason()


@pytest.mark.skipif(_reason is not None, reason=f"GPU tests need a GPU run: {_reason}")
@pytest.mark.parametrize("ranks", [int(n) for n in os.environ.get("TDIST_TEST_RANKS", "2,4").split(",")])
def test_gpu_worker(ranks):
    run_worker(Path(__file__).with_name("gpu_worker.py"), ranks, 240)


@pytest.mark.skipif(_reason is not None, reason=f"GPU tests need a GPU run: {_reason}")
@pytest.mark.parametrize("ranks", [int(n) for n in os.environ.get("TDIST_TEST_RANKS", "2,4").split(",")])
def test_gpu_compat_worker(ranks):
    """Triton-distributed's tutorial-style kernels and host helpers (gpu_compat_worker.py)."""
    run_worker(Path(__file__).with_name("gpu_compat_worker.py"), ranks, 300)


@pytest.mark.skipif(_reason is not None, reason=f"GPU tests need a GPU run: {_reason}")
@pytest.mark.parametrize("ranks", [int(n) for n in os.environ.get("TDIST_TEST_RANKS", "2,4").split(",")])
def test_torch_gpu_worker(ranks):
    """shmem.init_from_torch, a model of ops.* under torch.compile(fullgraph=True), autograd through
    the ops (tests/torch/torch_gpu_worker.py)."""
    run_worker(Path(__file__).resolve().parents[1] / "torch" / "torch_gpu_worker.py", ranks, 300)


def _run_scenario(scenario, ranks):
    import subprocess
    from gpu_worker_launch import REPO
    cmd = [sys.executable, str(REPO / "tools" / "tdist-run"), "-n", str(ranks), "--timeout", "120", "--",
           sys.executable, str(Path(__file__).with_name("gpu_wait_faults.py")), scenario]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    out = r.stdout + r.stderr
    print(out[-6000:])
    assert r.returncode == 0, f"tdist-run exited {r.returncode}"
    expected = [line.split("EXPECT ", 1)[1].strip() for line in out.splitlines() if "EXPECT " in line]
    assert expected, "the scenario printed no expectation"
    for text in expected:
        assert text in out, f"the device did not print {text!r}"
    assert "HOST " in out and "HOST the wait returned normally" not in out, "the host did not see the launch fail"


@pytest.mark.skipif(_reason is not None, reason=f"GPU tests need a GPU run: {_reason}")
def test_expired_wait_reports_and_stops():
    _run_scenario("timeout", 1)


@pytest.mark.skipif(_reason is not None, reason=f"GPU tests need a GPU run: {_reason}")
def test_lost_peer_ends_a_wait_forever():
    _run_scenario("lost-peer", 2)
