"""tdist-bench --gpu-json: plots drawn from a committed GPU benchmark result (no GPU needed)."""
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULT = REPO / "benchmarks" / "gpu_kernels" / "results" / "2026-11-29-h200x2-2gpus" / "graph.json"


def test_gpu_json_plots(tmp_path):
    pytest.importorskip("matplotlib")
    p = subprocess.run([sys.executable, str(REPO / "tools" / "tdist-bench"), "--gpu-json", str(RESULT),
                        "--plots", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    made = sorted(f.name for f in tmp_path.glob("*.png"))
    assert made == ["graph-allreduce.png", "graph-alltoall.png", "graph-gemm.png"], (made, p.stderr)
    for f in tmp_path.glob("*.png"):
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f.stat().st_size > 10_000, f


def test_gpu_json_missing_file_fails_clearly(tmp_path):
    p = subprocess.run([sys.executable, str(REPO / "tools" / "tdist-bench"), "--gpu-json",
                        str(tmp_path / "nope.json"), "--plots", str(tmp_path)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode != 0
    assert f"--gpu-json: {tmp_path / 'nope.json'} does not exist" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
