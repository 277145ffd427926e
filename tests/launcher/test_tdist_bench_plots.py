"""tdist-bench --gpu-json: plots drawn from a committed GPU benchmark result (no GPU needed)."""
import os
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


def _default_build():
    for b in ("build", "build-release"):
        if (REPO / b / "benchmarks" / "cpu").is_dir():
            return REPO / b
    return None


def test_cpu_repeats_spread_and_metadata(tmp_path):
    """--repeats runs every case that many times: one record per case with the median and the
    min / max of the runs; the JSON says which commit, versions and machine load it came from."""
    import json
    build = _default_build()
    if build is None or not list((build / "benchmarks" / "cpu").glob("tdist-bench-cpu*")):
        pytest.skip("tdist-bench-cpu is not built (scripts/build.sh)")
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, str(REPO / "tools" / "tdist-bench"), "--kernels", "a2a_direct", "--ranks", "2",
                        "--sizes", "64K,256K", "--baselines", "memcpy", "--repeats", "3", "--min-time", "0.02",
                        "--build-dir", str(build), "--out", str(out), "--no-plots"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    d = json.loads(out.read_text())
    recs = d["results"]
    assert sorted((r["kernel"], r["bytes"]) for r in recs) == [("a2a_direct", 65536), ("a2a_direct", 262144),
                                                               ("memcpy", 65536), ("memcpy", 262144)]
    for r in recs:
        assert len(r["runs_us"]) == 3, r
        assert r["time_us_min"] == min(r["runs_us"]) and r["time_us_max"] == max(r["runs_us"]), r
        assert sorted(r["runs_us"])[1] == r["time_us"], r  # the median of three
    m = d["meta"]
    assert m["repeats"] == 3 and m["cores"] == os.cpu_count()
    assert m["commit"] is None or (len(m["commit"]) == 40 and int(m["commit"], 16) >= 0), m
    assert len(m["loadavg_start"]) == 3 and len(m["loadavg_end"]) == 3
    assert "64 KiB" in p.stdout and "256 KiB" in p.stdout, p.stdout  # sizes as sizes, not 2^16


def test_repeats_must_be_positive(tmp_path):
    p = subprocess.run([sys.executable, str(REPO / "tools" / "tdist-bench"), "--repeats", "0",
                        "--out", str(tmp_path / "r.json")], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "--repeats must be >= 1 (got 0)" in p.stderr, p.stderr
