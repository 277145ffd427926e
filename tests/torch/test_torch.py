"""torch integration on CPU ranks: shmem.init_from_torch over a gloo job, group= on the ops, and
torch.compile(fullgraph=True) tracing the ops as torch.library custom ops (tests/torch/torch_worker.py
at 2 and 3 ranks). The compiled model runs on the GPU in tests/python/test_gpu.py."""
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/install-deps.sh makes .venv-torch)")
pytest.importorskip("tdist._C", reason="tdist._C not built (cmake -DTDIST_BUILD_PYTHON=ON)")

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("ranks", [2, 3])
def test_torch_integration(ranks):
    r = subprocess.run([sys.executable, str(REPO / "tools" / "tdist-run"), "-n", str(ranks), "--timeout", "240", "--",
                        sys.executable, str(REPO / "tests" / "torch" / "torch_worker.py")],
                       capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    for rank in range(ranks):
        assert f"rank {rank}: 0 failure(s)" in out, out[-6000:]
    assert out.count("ok torch.compile(fullgraph=True): one graph") == ranks, out[-6000:]
