"""Shared fixtures. The package is imported from python/ (and tdist._C from build*/python when not
installed). Compile-only tests target CUDA sm_90 ahead of time, so TDIST_PLATFORM defaults to cuda
here: libshmem_device then selects its CUDA backend on machines without nvidia-smi."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
os.environ.setdefault("TDIST_PLATFORM", "cuda")
# dl.* are builtins, which Triton does not hash into its cache key: recompile so edits are seen.
os.environ["TRITON_ALWAYS_COMPILE"] = "1"


def _real_bitcode():
    try:
        from triton_dist import _bitcode
        return _bitcode.find_bitcode()
    except Exception:
        return None


@pytest.fixture(scope="session")
def real_bitcode():
    """The real libtdist_device.bc (device/NVIDIA build), or skip."""
    real = _real_bitcode()
    if not real:
        pytest.skip("libtdist_device.bc not built (device/NVIDIA) and TDIST_DEVICE_BITCODE unset")
    return real


@pytest.fixture(scope="session")
def device_bitcode(tmp_path_factory):
    """The device bitcode built from the current sources (device/NVIDIA/tdist_device.cu, clang-19, the
    flags of device/NVIDIA/CMakeLists.txt): the compile tests do not depend on whether, or how
    recently, the NVIDIA backend was built."""
    clang = shutil.which("clang-19")
    if clang is None:
        pytest.skip("no libtdist_device.bc built and no clang-19 to build the test copy")
    out = tmp_path_factory.mktemp("bc") / "libtdist_device.bc"
    subprocess.run([clang, "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_90", "-nocudainc", "-nocudalib",
                    "-fgpu-flush-denormals-to-zero", "-O2", "-emit-llvm", "-Wno-unknown-cuda-version", "-c",
                    f"-I{REPO / 'include'}", str(REPO / "device" / "NVIDIA" / "tdist_device.cu"), "-o", str(out)],
                   check=True,
                   capture_output=True)
    return str(out)


def _compiler(bitcode, monkeypatch, stage="ptx"):
    """compile(fn, signature, constexprs=None, **options) -> the ``stage`` text ("ptx", "ttir", ...)
    of ``fn`` for sm_90 against ``bitcode`` (no GPU needed)."""
    monkeypatch.setenv("TDIST_DEVICE_BITCODE", bitcode)
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    def run(fn, signature, constexprs=None, **options):
        constexprs = dict(constexprs or {})
        sig = dict(signature)
        for k in constexprs:
            sig[k] = "constexpr"
        return triton.compile(ASTSource(fn, sig, constexprs), target=GPUTarget("cuda", 90, 32),
                              options=options or None).asm[stage]

    return run


@pytest.fixture
def compile_ptx_real(real_bitcode, monkeypatch):
    return _compiler(real_bitcode, monkeypatch)


@pytest.fixture
def compile_ptx(device_bitcode, monkeypatch):
    """compile_ptx(fn, signature, constexprs=None, **options) -> PTX text for sm_90 (no GPU needed)."""
    return _compiler(device_bitcode, monkeypatch)


@pytest.fixture
def compile_ttir(device_bitcode, monkeypatch):
    """Like compile_ptx, but returns Triton's TTIR (where the extern calls still stand as ops)."""
    return _compiler(device_bitcode, monkeypatch, "ttir")


def body(ptx):
    """The instructions of the PTX entry (debug info and comments dropped)."""
    start = ptx.index(".entry")
    end = ptx.index(".section", start) if ".section" in ptx[start:] else len(ptx)
    lines = [ln.strip() for ln in ptx[start:end].splitlines()]
    return "\n".join(ln for ln in lines if ln and not ln.startswith("//") and not ln.startswith(".loc"))
