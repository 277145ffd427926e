"""The MoE kernels (tdist_kernels.moe) compile ahead of time to PTX for sm_90 (no GPU needed), linked
against the real device bitcode, with the synchronisation the protocol relies on (docs/MOE.md)."""
import re

import pytest

triton = pytest.importorskip("triton")
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import tdist_kernels  # noqa: E402
from ptxas_info import spill_stores  # noqa: E402
from tdist_kernels import moe  # noqa: E402


@pytest.fixture(scope="module")
def bitcode():
    from triton_dist import _bitcode
    try:
        return _bitcode.find_bitcode()
    except _bitcode.BitcodeNotFound as e:
        pytest.skip(f"needs the NVIDIA device bitcode: {e}")


_cache = {}


def _ptx(bitcode, monkeypatch, name, dtype):
    monkeypatch.setenv("TDIST_DEVICE_BITCODE", bitcode)
    if (name, dtype) not in _cache:
        case = {c[0]: c for c in moe.compile_cases(dtype)}[name]
        fn, sig, cst, opts = case[1], dict(case[2]), case[3], case[4]
        attrs = tdist_kernels.runtime_attrs(fn, sig, cst)
        for k in cst:
            sig[k] = "constexpr"
        k = triton.compile(ASTSource(fn, sig, dict(cst), attrs), target=GPUTarget("cuda", 90, 32), options=opts)
        assert "cubin" in k.asm and len(k.asm["cubin"]) > 0
        _cache[name, dtype] = k.asm["ptx"]
    return _cache[name, dtype]


CASES = [(dt, c[0]) for dt in ("bf16", "fp16", "fp32") for c in moe.compile_cases(dt)]


@pytest.mark.parametrize("dtype,name", CASES, ids=[f"{n}-{d}" for d, n in CASES])
def test_moe_kernel_compiles_for_sm90(bitcode, monkeypatch, dtype, name):
    ptx = _ptx(bitcode, monkeypatch, name, dtype)
    assert ".entry" in ptx
    assert not re.search(r"call\.uni[^;]*tdist", ptx)  # every dl.* call resolved by the bitcode


@pytest.mark.parametrize("name", ["moe_counts", "moe_ht_dispatch", "moe_ht_combine", "moe_ll_dispatch",
                                  "moe_ll_combine"])
def test_moe_waits_are_bounded_and_notifies_release(bitcode, monkeypatch, name):
    ptx = _ptx(bitcode, monkeypatch, name, "bf16")
    assert "ld.acquire.sys" in ptx  # the ABI's wait
    assert "%globaltimer" in ptx and "trap;" in ptx  # bounded, stops the program on expiry
    assert "st.release.sys" in ptx or "red.release.sys" in ptx  # the ABI's notify
    if name != "moe_counts":
        assert "fence.acq_rel.sys" in ptx or name == "moe_ll_dispatch"


@pytest.mark.parametrize("name", ["moe_ht_dispatch", "moe_ll_dispatch"])
def test_moe_payload_moves_in_16_byte_vectors(bitcode, monkeypatch, name):
    ptx = _ptx(bitcode, monkeypatch, name, "bf16")
    assert re.search(r"ld\.global[^;]*\.v4", ptx) and re.search(r"st\.global[^;]*\.v4", ptx)


def test_high_throughput_slices_take_one_tile_each():
    """ht_slices: as many slices as column tiles where they fit (a chunk waits for its slowest slice,
    so two tiles on one slice doubled the fp8 dispatch's time), capped at 32 and by residency."""
    from tdist_kernels.moe import fp8_row_words, ht_slices
    # DeepSeek-V3's hidden size: bf16 dispatch and combine 28 tiles of 256; fp8 29 tiles of 64 words
    assert ht_slices(7168, 7168, 256, 64) == 28
    assert ht_slices(7168, fp8_row_words(7168), 64, 64) == 29
    for hidden in (2048, 4096, 7168, 1024 + 128):
        words = fp8_row_words(hidden)
        s = ht_slices(hidden, words, 64, 64)
        assert -(-words // 64) <= s or s == 32, (hidden, s)  # every dispatch tile has its own slice
        assert -(-hidden // 256) <= s or s == 32
    assert ht_slices(16384, 16384, 256, 64) == 32  # 64 tiles: capped at 32
    assert ht_slices(7168, 7168, 256, 10) == 10  # capped by what stays co-resident
    assert ht_slices(64, 64, 64, 64) == 1


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
@pytest.mark.parametrize("name", ["moe_ht_dispatch", "moe_ht_combine"])
def test_high_throughput_tiles_stay_out_of_local_memory(bitcode, monkeypatch, dtype, name):
    """At the tile rows MoeBuffer uses (moe.ht_tile_rows, compile_cases' constexprs) the
    high-throughput kernels keep their tiles in registers (aligned operands, as at run time): at 64
    rows the bf16 combine spilled 0.9 KB a thread, the fp32 combine 2.7 KB and the fp32 dispatch
    0.7 KB; at the rows chosen none. The bound leaves room for a few values outside the tile loops."""
    assert spill_stores(_ptx(bitcode, monkeypatch, name, dtype)) <= 256
