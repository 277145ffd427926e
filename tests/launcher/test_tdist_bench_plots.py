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


def test_moe_against_the_all_to_all_single_path(tmp_path):
    """--moe: both tdist modes and the Open MPI all_to_all_single path over the same routing, every
    run checked, the median and spread of dispatch and combine per case, a speed-up summary and a
    plot per (ranks, routing)."""
    import json
    import shutil
    build = _default_build()
    if build is None or not list((build / "benchmarks" / "cpu").glob("tdist-moe-bench-cpu*")):
        pytest.skip("tdist-moe-bench-cpu is not built (scripts/build.sh)")
    if not shutil.which("mpirun") or not list((build / "benchmarks" / "cpu").glob("tdist-moe-mpi-baseline*")):
        pytest.skip("no mpirun or tdist-moe-mpi-baseline")
    pytest.importorskip("matplotlib")
    out = tmp_path / "moe.json"
    p = subprocess.run([sys.executable, str(REPO / "tools" / "tdist-bench"), "--moe", "--ranks", "2",
                        "--moe-tokens", "32,96", "--moe-shape", "256x2x8", "--routing", "random,skewed",
                        "--repeats", "2", "--iters", "3", "--build-dir", str(build), "--out", str(out),
                        "--plots", str(tmp_path / "plots")], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    recs = json.loads(out.read_text())["results"]
    cases = sorted((r["kernel"], r["routing"], r["tokens"]) for r in recs)
    assert cases == sorted((k, rt, t) for k in ("moe_ht", "moe_ll", "moe_alltoallv") for rt in ("random", "skewed")
                           for t in (32, 96)), cases
    for r in recs:
        assert r["check"] == "ok" and r["hidden"] == 256 and r["topk"] == 2 and r["experts"] == 8, r
        for f in ("dispatch", "combine"):
            runs = r[f + "_runs_us"]
            assert len(runs) == 2 and r[f + "_us_min"] == min(runs) and r[f + "_us_max"] == max(runs), r
            assert min(runs) <= r[f + "_us"] <= max(runs), r
    assert p.stdout.count("vs MPI") == 2 * 8, p.stdout  # 2 modes x 2 routings x 2 sizes, dispatch and combine
    made = sorted(f.name for f in (tmp_path / "plots").glob("*.png"))
    assert made == ["moe-n2-bf16-random-H256-K2-E8.png", "moe-n2-bf16-skewed-H256-K2-E8.png"], made


def test_moe_bad_arguments_are_named(tmp_path):
    build = _default_build()
    binary = next(iter((build / "benchmarks" / "cpu").glob("tdist-moe-bench-cpu*")), None) if build else None
    if binary is None:
        pytest.skip("tdist-moe-bench-cpu is not built (scripts/build.sh)")
    for args, says in ((["--tokens", "12x"], "--tokens 12x: not a list of token counts"),
                       (["--topk", "9", "--experts", "4"], "--topk must not exceed --experts"),
                       (["--routing", "zipf"], "--routing zipf: random or skewed"),
                       (["--hidden"], "--hidden needs a value")):
        r = subprocess.run([str(binary)] + args, capture_output=True, text=True, timeout=30)
        assert r.returncode == 2 and says in r.stderr, (args, r.stderr)
    p = subprocess.run([sys.executable, str(REPO / "tools" / "tdist-bench"), "--moe", "--moe-shape", "7168x8",
                        "--out", str(tmp_path / "m.json")], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "--moe-shape must be HIDDENxTOPKxEXPERTS" in p.stderr, p.stderr


def test_cpu_alltoall_in_mpi_layout(tmp_path):
    """--layout mpi gives every peer one contiguous block (S = H = 1, D = bytes / (W x elem)), the layout
    of MPI_Alltoall; every variant that takes it is checked exactly against the reference, and a
    layout of another name is refused."""
    import json
    build = _default_build()
    if build is None or not list((build / "benchmarks" / "cpu").glob("tdist-bench-cpu*")):
        pytest.skip("tdist-bench-cpu is not built (scripts/build.sh)")
    bench = str(build / "benchmarks" / "cpu" / "tdist-bench-cpu")
    for kernel in ("a2a_direct", "a2a_wait_notify", "a2a_bulk", "a2a_pipeline"):
        p = subprocess.run([sys.executable, str(REPO / "tools" / "tdist-run"), "-n", "2", "--timeout", "120", "--",
                            bench, "--kernel", kernel, "--dtype", "f32", "--bytes", "64K,96K", "--layout", "mpi",
                            "--iters", "5"], capture_output=True, text=True, timeout=180)
        assert p.returncode == 0, (kernel, p.stdout[-2000:], p.stderr[-2000:])
        recs = [json.loads(line.split("] ", 1)[-1]) for line in p.stdout.splitlines()
                if line.split("] ", 1)[-1].startswith("{")]
        assert sorted(r["bytes"] for r in recs) == [65536, 98304], (kernel, recs)
        for r in recs:
            assert r["check"] == "ok" and r["S"] == 1 and r["H"] == 1 and r["D"] == r["bytes"] // (2 * 4), r
    p = subprocess.run([bench, "--kernel", "a2a_direct", "--layout", "rows"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and "--layout is mpi or seed" in p.stderr, p.stderr
