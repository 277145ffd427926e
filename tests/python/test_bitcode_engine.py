"""Which device bitcode a kernel links: the plain library, or in a job that runs the NVIDIA backend's
NVSHMEM engine the engine's build of it followed by NVSHMEM's libnvshmem_device.bc (no GPU needed: the
runtime's answer, tdist._C.cuda_engine_bitcode, is stood in for)."""
import pytest

from triton_dist import _bitcode


@pytest.fixture
def libs(tmp_path, monkeypatch):
    plain = tmp_path / "libtdist_device.bc"
    engine = tmp_path / "libtdist_device_nvshmem.bc"
    nv = tmp_path / "libnvshmem_device.bc"
    for f in (plain, engine, nv):
        f.write_bytes(b"BC")
    monkeypatch.setenv("TDIST_DEVICE_BITCODE", str(plain))
    monkeypatch.delenv("TDIST_DEVICE_BITCODE_NVSHMEM", raising=False)
    _bitcode._CACHE.clear()
    yield plain, engine, nv
    _bitcode._CACHE.clear()


def test_plain_job_links_the_plain_library(libs, monkeypatch):
    plain, _, _ = libs
    monkeypatch.setattr(_bitcode, "engine_bitcode", lambda: None)
    assert _bitcode.extern_libs() == {_bitcode.LIB_NAME: str(plain.resolve())}
    assert _bitcode.find_bitcode() == str(plain.resolve())


def test_engine_job_links_both_in_order(libs, monkeypatch):
    plain, engine, nv = libs
    monkeypatch.setattr(_bitcode, "engine_bitcode", lambda: str(nv))
    got = _bitcode.extern_libs()
    # ours first: Triton links them in order, each pulling only what is still undefined
    assert list(got.items()) == [(_bitcode.LIB_NAME, str(engine.resolve())), (_bitcode.NVSHMEM_LIB_NAME, str(nv))]
    # the answer follows the engine's state (the cache is keyed on it)
    monkeypatch.setattr(_bitcode, "engine_bitcode", lambda: None)
    assert _bitcode.extern_libs() == {_bitcode.LIB_NAME: str(plain.resolve())}


def test_engine_build_missing_is_named(libs, monkeypatch):
    _, engine, nv = libs
    engine.unlink()
    monkeypatch.setattr(_bitcode, "engine_bitcode", lambda: str(nv))
    with pytest.raises(_bitcode.BitcodeNotFound, match="libtdist_device_nvshmem.bc"):
        _bitcode.extern_libs()


def test_engine_build_named_by_the_variable(libs, tmp_path, monkeypatch):
    _, _, nv = libs
    other = tmp_path / "elsewhere.bc"
    other.write_bytes(b"BC")
    monkeypatch.setenv("TDIST_DEVICE_BITCODE_NVSHMEM", str(other))
    assert _bitcode.find_bitcode(engine=True) == str(other.resolve())
    monkeypatch.setenv("TDIST_DEVICE_BITCODE_NVSHMEM", str(tmp_path / "typo.bc"))
    with pytest.raises(_bitcode.BitcodeNotFound, match="TDIST_DEVICE_BITCODE_NVSHMEM"):
        _bitcode.find_bitcode(engine=True)


def test_runtime_reports_no_engine_without_one():
    tdist = pytest.importorskip("tdist")
    if not hasattr(tdist, "_C"):
        pytest.skip("no tdist extension")
    # no CUDA backend initialised in this process: no engine, kernels link the plain library
    assert tdist._C.cuda_engine_bitcode() is None
    assert _bitcode.engine_bitcode() is None
