"""scripts/gpu-run without a GPU: its syntax, and the commands of a dry run (what it would build and
run on the GPU machine, with the environment every step keeps)."""
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gpu-run"


def dry(*args):
    r = subprocess.run(["bash", str(SCRIPT), "--dry-run", *args], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def test_syntax():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)
    if shutil.which("shellcheck"):
        subprocess.run(["shellcheck", str(SCRIPT)], check=True)


def test_prepare_fills_the_carry_folder():
    rc, out, err = dry("prepare")
    assert rc == 0, err
    assert "clang-19 -x cuda --cuda-device-only --cuda-gpu-arch=sm_90" in out
    assert "-o .carry/libtdist_device.bc" in out
    assert "cp -r /usr/src/googletest .carry/googletest" in out


def test_every_suite_at_its_rank_counts():
    rc, out, err = dry("--tag", "t", "--reps", "3", "--bench-args", "--graph --inner 10", "gpu:2,4", "frontend:2,8",
                       "kernels:4", "bench:2", "pingpong")
    assert rc == 0, err
    for var in ("NCCL_NVLS_ENABLE=0", "TORCH_SYMM_MEM_DISABLE_MULTICAST=1", "NVSHMEM_DISABLE_NVLS=1",
                "PYTHONUNBUFFERED=1", "TDIST_DEVICE_BITCODE="):
        assert f"+ export {var}" in out, var
    lines = out.splitlines()
    configure = next(ln for ln in lines if ln.startswith("+ [configure"))
    for flag in ("-G Ninja", "-DTDIST_ENABLE_MLIR=OFF", "-DTDIST_DEVICE_BC=", "/.carry/libtdist_device.bc",
                 "-DTDIST_BUILD_TESTS=ON", "-DTDIST_BUILD_PYTHON=ON", "gtest-install"):
        assert flag in configure, flag
    assert any(ln.startswith("+ [gtest") and ".carry/googletest" in ln for ln in lines)
    build = next(ln for ln in lines if ln.startswith("+ [build"))
    for target in ("tdist_gpu_tests", "tdist_python_ext", "tdist_gpu_bench", "tdist_device_bc"):
        assert target in build, target
    steps = [ln.split("]")[0][3:].split(",")[0] for ln in lines if ln.startswith("+ [")]
    assert steps == ["gtest", "configure", "build", "gpu-2", "gpu-4", "frontend", "kernels-4", "bench-2",
                     "bench-signal-2", "pingpong-tdist_gpu_bench-2", "pingpong-tdist_gpu_bench_noprintf-2"]
    assert any("TDIST_TEST_RANKS=2\\,8" in ln and "tests/python/test_gpu.py" in ln for ln in lines)
    assert any("tests/gpu_kernels/gpu_worker.py" in ln and "-n 4" in ln for ln in lines)
    assert any("bench.py --reps 3" in ln and ln.rstrip().endswith("--graph --inner 10 > " + ln.split(" > ")[-1])
               for ln in lines if "bench.py" in ln)
    assert "gpu-run-t.tar.gz" in out  # one tarball


def test_without_gpu_suite_no_googletest():
    rc, out, err = dry("kernels:2")
    assert rc == 0, err
    assert "[gtest" not in out and "-DTDIST_BUILD_TESTS=OFF" in out and "tdist_gpu_tests" not in out


def test_python_suite_builds_the_extension_and_runs_nothing():
    rc, out, err = dry("python")
    assert rc == 0, err
    assert "tdist_python_ext" in out and "-DTDIST_BUILD_PYTHON=ON" in out
    assert "tdist-run" not in out  # no step runs a program


def test_prepare_rev_carries_the_whole_baseline_tree():
    rc, out, err = dry("prepare", "--rev", "HEAD")
    assert rc == 0, err
    assert "git archive HEAD | tar -x -C .carry/rev" in out
    assert "cp .carry/libtdist_device.bc .carry/libtdist_device_nvshmem.bc .carry/rev/.carry/" in out
    assert "cp -r .carry/googletest .carry/rev/.carry/googletest" in out


@pytest.mark.parametrize("args,msg", [(("bogus",), "unknown suite"), (("kernels:2,x",), "not a comma-separated"),
                                      (("--nope", "gpu"), "unknown option"), ((), "usage"),
                                      (("prepare", "--rev", "no-such-commit-xyz"), "is not a commit"),
                                      (("--rev", "HEAD", "kernels:2"), "belongs to prepare")])
def test_usage_errors(args, msg):
    rc, out, err = dry(*args)
    assert rc == 2
    assert msg in (out + err).lower() or msg in out + err
