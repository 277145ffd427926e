"""The eager launch path (tdist._C.CudaLaunch and tdist_kernels._launch._direct) without a GPU: the
parameter slots a compiled kernel's signature gives, the kernels it leaves to Triton's launcher,
and the refusals of bad arguments, which come before any launch."""
import ctypes
from types import SimpleNamespace

import pytest

pytest.importorskip("tdist._C", reason="tdist._C not built (cmake -DTDIST_BUILD_PYTHON=ON)")
pytest.importorskip("torch", reason="the direct path reads the current stream from torch")

from tdist import TdistError  # noqa: E402
from tdist._bindings import _C  # noqa: E402

if not _C.cuda_launch_available():
    pytest.skip("this libtdist was built without the NVIDIA backend", allow_module_level=True)

from tdist_kernels import _launch  # noqa: E402


def fake_kernel(signature, **metadata):
    md = dict(num_warps=4, shared=1024, global_scratch_size=0, profile_scratch_size=0, num_ctas=1,
              launch_cooperative_grid=False, launch_pdl=False)
    md.update(metadata)
    return SimpleNamespace(metadata=SimpleNamespace(**md), src=SimpleNamespace(signature=signature), function=0x1234)


def fake_fn(names, constexprs=()):
    return SimpleNamespace(params=[SimpleNamespace(name=n, is_constexpr=n in constexprs) for n in names])


def _driver_loads():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def test_slots_skip_constexprs_and_specialised_ints(monkeypatch):
    import torch
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: 0)  # the device the first call ran on
    names = ["x", "out", "rank", "pes", "n", "BLOCK"]
    fn = fake_fn(names, constexprs=("BLOCK",))
    # pes was 1 at the first call: Triton made it a constant, the kernel has no parameter for it
    sig = {"x": "*i32", "out": "*i32", "rank": "i32", "pes": "constexpr", "n": "i64", "BLOCK": "constexpr"}
    runtime_pos = [i for i, n in enumerate(names) if n != "BLOCK"]
    c, dev = _launch._direct(fake_kernel(sig), fn, runtime_pos, (3, 1, 1))
    assert c is not None and dev == 0
    assert list(c.slots) == [0, 1, 2, -1, 3]
    assert c.n_params == 4 + 2  # and Triton's two scratch pointers


@pytest.mark.parametrize("sig,md", [
    ({"x": "*fp32", "a": "fp32"}, {}),  # a float parameter
    ({"x": "*fp32", "a": "i32"}, {"global_scratch_size": 64}),
    ({"x": "*fp32", "a": "i32"}, {"profile_scratch_size": 8}),
    ({"x": "*fp32", "a": "i32"}, {"num_ctas": 2}),
    ({"x": "*fp32", "a": "i32"}, {"launch_cooperative_grid": True}),
    ({"x": "*fp32", "a": "i32"}, {"launch_pdl": True}),
    ({"x": "*fp32", "a": ("i32", "i32")}, {}),  # a tuple parameter
    ({"x": "*fp32"}, {}),  # the signature does not cover every parameter
])
def test_kernels_left_to_tritons_launcher(sig, md):
    c, dev = _launch._direct(fake_kernel(sig, **md), fake_fn(["x", "a"]), [0, 1], (1, 1, 1))
    assert c is None and dev is None


def test_bad_construction_is_refused():
    with pytest.raises(ValueError, match="function is 0"):
        _C.CudaLaunch(0, (1, 1, 1), 128, 0, 2, [0, 1])
    with pytest.raises(ValueError, match="argument slot 5 is not one of the 2 parameters"):
        _C.CudaLaunch(0x10, (1, 1, 1), 128, 0, 2, [0, 5])


def test_bad_arguments_are_refused_before_any_launch():
    c = _C.CudaLaunch(0x10, (1, 1, 1), 128, 0, 4, [0, -1, 1])
    with pytest.raises(TypeError, match="3 arguments expected, got 2"):
        c(0, 1, 2)
    with pytest.raises(TypeError, match="argument 1 must be an int .* got NoneType"):
        c(0, 1, None, 3)
    with pytest.raises(TypeError, match="argument 2 must be an int .* got float"):
        c(0, 1, 2, 3.0)
    with pytest.raises(ValueError, match="argument 0 does not fit 64 bits"):
        c(0, 2**64, 2, 3)
    with pytest.raises(ValueError, match="argument 2 does not fit 64 bits"):
        c(0, 1, 2, -2**63 - 1)


@pytest.mark.skipif(_driver_loads(), reason="a CUDA driver is installed here")
def test_a_launch_without_a_driver_names_it():
    c = _C.CudaLaunch(0x10, (1, 1, 1), 128, 0, 3, [0, 1, 2])
    with pytest.raises(TdistError, match="tdist_cuda_launch: CUDA unavailable"):
        c(0, 2**63 + 5, -1, 7)  # an address above 2^63 and a negative int32 both fit a cell

    class Tensorish:  # what Triton's launcher takes for a pointer too: an object with data_ptr()
        def data_ptr(self):
            return 0x7000

    class BadTensorish:
        def data_ptr(self):
            return "not an address"

    with pytest.raises(TdistError, match="tdist_cuda_launch: CUDA unavailable"):
        c(0, Tensorish(), 1, 2)  # the arguments were taken; only the launch itself failed
    with pytest.raises(TypeError, match="argument 0 must be an int .* got BadTensorish"):
        c(0, BadTensorish(), 1, 2)
