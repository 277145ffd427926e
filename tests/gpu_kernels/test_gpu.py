"""Multi-rank GPU checks of every tdist_kernels kernel (tools/tdist-run, several ranks on one GPU
under MPS). Skipped, with the reason, without a CUDA GPU, torch, the tdist bindings or the bitcode."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _gpu_reason():
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU visible"
    try:
        import tdist
        if not tdist.cuda_available():
            return "libtdist was built without the NVIDIA backend"
    except ImportError as e:
        return f"tdist bindings not built: {e}"
    from triton_dist import _bitcode
    try:
        _bitcode.find_bitcode()
    except _bitcode.BitcodeNotFound as e:
        return str(e)
    return None


_reason = _gpu_reason()


@pytest.mark.skipif(_reason is not None, reason=f"GPU kernel tests need a GPU run: {_reason}")
@pytest.mark.parametrize("ranks", [int(n) for n in os.environ.get("TDIST_TEST_RANKS", "2,4,8").split(",")])
def test_kernels_gpu_worker(ranks):
    cmd = [sys.executable, str(REPO / "tools" / "tdist-run"), "-n", str(ranks), "--timeout", "400", "--",
           sys.executable, str(Path(__file__).with_name("gpu_worker.py"))]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=450)
    print(r.stdout[-8000:], r.stderr[-4000:])
    assert r.returncode == 0, f"tdist-run -n {ranks} exited {r.returncode}"
    assert r.stdout.count(" 0 failure(s)") == ranks
