"""Shared by the pytest suites that run a multi-rank GPU worker under tools/tdist-run (several
ranks on one GPU under MPS): why such a test must be skipped here, and how to run the worker."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def gpu_skip_reason():
    """None when a GPU run is possible, else why not (torch, a GPU, the NVIDIA backend, the bitcode)."""
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


def run_worker(worker, ranks, timeout_s):
    """Run `worker` on `ranks` ranks; fail unless every rank reports ' 0 failure(s)'."""
    cmd = [sys.executable, str(REPO / "tools" / "tdist-run"), "-n", str(ranks), "--timeout", str(timeout_s),
           "--", sys.executable, str(worker)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s + 60)
    print(r.stdout[-8000:], r.stderr[-4000:])
    assert r.returncode == 0, f"tdist-run -n {ranks} exited {r.returncode}"
    assert r.stdout.count(" 0 failure(s)") == ranks
