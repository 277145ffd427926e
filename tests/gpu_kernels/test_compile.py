"""Every tdist_kernels kernel compiles ahead of time to PTX for sm_90 (no GPU needed), linked
against the real device bitcode, and the PTX carries the synchronisation the design relies on."""
import inspect
import os
import re

import pytest

triton = pytest.importorskip("triton")
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import tdist_kernels  # noqa: E402
import tdist_kernels._common  # noqa: E402
from ptxas_info import spill_stores  # noqa: E402


def _bitcode():
    from triton_dist import _bitcode
    try:
        return _bitcode.find_bitcode()
    except _bitcode.BitcodeNotFound as e:
        return None, str(e)


@pytest.fixture(scope="module")
def bitcode():
    bc = _bitcode()
    if isinstance(bc, tuple):
        pytest.skip(f"needs the NVIDIA device bitcode: {bc[1]}")
    return bc


def _compile(fn, sig, cst, opts=None):
    sig = dict(sig)
    attrs = tdist_kernels.runtime_attrs(fn, sig, cst)
    for k in cst:
        sig[k] = "constexpr"
    return triton.compile(ASTSource(fn, sig, dict(cst), attrs), target=GPUTarget("cuda", 90, 32), options=opts or {})


CASES = [(dt, c[0]) for dt in ("fp16", "bf16", "fp32") for c in tdist_kernels.all_compile_cases(dt)]


@pytest.mark.parametrize("dtype,name", CASES, ids=[f"{n}-{d}" for d, n in CASES])
def test_kernel_compiles_for_sm90(bitcode, monkeypatch, dtype, name):
    monkeypatch.setenv("TDIST_DEVICE_BITCODE", bitcode)
    case = {c[0]: c for c in tdist_kernels.all_compile_cases(dtype)}[name]
    k = _compile(*case[1:])
    ptx = k.asm["ptx"]
    assert ".entry" in ptx
    # every dl.* call was resolved by the linked bitcode: no call into tdist is left
    assert not re.search(r"call\.uni[^;]*tdist", ptx)
    assert "cubin" in k.asm and len(k.asm["cubin"]) > 0
    # built as the launcher sees the operands (aligned), no kernel spills more than a few values (the
    # largest, 164 bytes a thread, is the bulk all-to-all's): a tile in local memory fails here
    assert spill_stores(ptx) <= 256, name


def _ptx(bitcode, monkeypatch, name, dtype="bf16"):
    monkeypatch.setenv("TDIST_DEVICE_BITCODE", bitcode)
    case = {c[0]: c for c in tdist_kernels.all_compile_cases(dtype)}[name]
    return _compile(*case[1:]).asm["ptx"]


def test_mte_pipeline_has_bounded_waits_and_release_notifies(bitcode, monkeypatch):
    ptx = _ptx(bitcode, monkeypatch, "reverse_a2a_mte")
    assert "ld.acquire.sys.global.u64" in ptx  # producer credit wait + consumer data wait
    assert "%globaltimer" in ptx and "trap;" in ptx  # bounded
    assert ptx.count("st.release.sys.global.u64") >= 2  # data notify + credit return
    assert "fence.acq_rel.sys" in ptx


def test_grid_barrier_arrives_once_per_program(bitcode, monkeypatch):
    ptx = _ptx(bitcode, monkeypatch, "reverse_a2a_bulk")
    # the arrive counter is one predicated acq_rel atomic per program, not one per thread
    assert re.search(r"@%p\d+ atom\.global\.sys\.acq_rel\.add\.u64", ptx), "arrive atomic not predicated"
    # the >= waits: the ABI's int64 wait_until, an acquire poll with a signed comparison
    assert "ld.acquire.sys.global.u64" in ptx and re.search(r"setp\.(ge|lt)\.s64", ptx)


def test_gemm_kernels_use_tensor_cores(bitcode, monkeypatch):
    for name in ("ag_gemm", "gemm_rs"):
        ptx = _ptx(bitcode, monkeypatch, name)
        assert "wgmma" in ptx or "mma.sync" in ptx, name
        # operands stream through a multi-stage 16-byte cp.async pipeline, no scalar 2-byte loads
        assert re.search(r"cp\.async\.cg\.shared\.global[^;]*0x10", ptx), name
        assert not re.search(r"ld\.global(\.[a-z]+)*\.b16", ptx), name


def test_tma_gemm_kernels_wait_fence_then_bulk_copy(bitcode, monkeypatch):
    """The TMA forms: tiles arrive by bulk tensor copies into wgmma; AG+GEMM's tiles of other ranks'
    rows wait (an acquire poll, bounded) and then fence the async proxy before their copies; GEMM+RS
    still notifies each tile's owner with a release."""
    ptx = _ptx(bitcode, monkeypatch, "ag_gemm_tma")
    assert "cp.async.bulk.tensor" in ptx and "wgmma" in ptx
    assert "ld.acquire" in ptx and "%globaltimer" in ptx and "trap;" in ptx
    fence = ptx.find("fence.proxy.async.global")
    assert fence > ptx.find("ld.acquire") > 0, "no proxy fence after the wait"
    ptx = _ptx(bitcode, monkeypatch, "gemm_rs_tma")
    assert "cp.async.bulk.tensor" in ptx and "wgmma" in ptx and "st.release" in ptx


@pytest.mark.parametrize("name", ["ag_gemm", "gemm_rs", "ag_gemm_tma", "gemm_rs_tma"])
def test_gemm_kernels_fit_in_shared_memory(bitcode, monkeypatch, name):
    """With the block configuration ops launches, a GEMM program's shared memory fits in one SM's
    227 KB (a launch past it fails with "out of resources" on the GPU only)."""
    monkeypatch.setenv("TDIST_DEVICE_BITCODE", bitcode)
    case = {c[0]: c for c in tdist_kernels.all_compile_cases("bf16")}[name]
    assert _compile(*case[1:]).metadata.shared <= 227 * 1024


# Data-moving kernels: with 16-byte-aligned arguments, every tile load and store is a 16-byte vector,
# including the remote ones through dl.symm_at and the ones after dl.consume_token (both keep the
# alignment of the pointer they are given). 2-byte scalar accesses cost a 4-8x slowdown on the GPU.
@pytest.mark.parametrize("name", ["reverse_a2a_direct", "reverse_a2a_mte", "reverse_a2a_bulk",
                                  "reverse_a2a_wait_notify", "dispatch_a2a", "dispatch_a2a_direct",
                                  "allreduce_one_shot"])
def test_data_movement_is_vectorised(bitcode, monkeypatch, name):
    ptx = _ptx(bitcode, monkeypatch, name)
    assert re.search(r"ld\.global[^;]*\.v4", ptx) and re.search(r"st\.global[^;]*\.v4", ptx), name
    # bulk_putmem's copy of a segment that is not 16-byte aligned moves bytes by design (Triton 3.9
    # pairs them into 2-byte accesses); the tiles are what must not go 2 bytes at a time
    tiles = _without(ptx, tdist_kernels._common.bulk_putmem)
    assert not re.search(r"(ld|st)\.global(\.[a-z]+)*\.b16", tiles), name


def _without(ptx, jit_fn):
    """The PTX minus the instructions that its line table (``.loc``) attributes to ``jit_fn``'s source
    lines (inlined there or not)."""
    lines, first = inspect.getsourcelines(jit_fn.fn)
    path = os.path.realpath(inspect.getsourcefile(jit_fn.fn))
    files = {i for i, p in re.findall(r'^\s*\.file\s+(\d+)\s+"([^"]+)"', ptx, re.M) if os.path.realpath(p) == path}
    kept, inside = [], False
    for line in ptx.splitlines():
        loc = re.match(r"\s*\.loc\s+(\d+)\s+(\d+)", line)
        if loc:
            inside = loc.group(1) in files and first <= int(loc.group(2)) < first + len(lines)
        elif not inside:
            kept.append(line)
    return "\n".join(kept)


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_ll_allreduce_moves_8_byte_packets_without_fences(bitcode, monkeypatch, dtype):
    ptx = _ptx(bitcode, monkeypatch, "allreduce_ll", dtype)
    # packets go out and come in as whole 8-byte elements (16-byte vectors of two packets); a load of
    # 4-byte elements could pair the payload of one store with the epoch of another
    assert re.search(r"st\.global[^;]*\.v2\.b64", ptx)
    vol = re.findall(r"ld\.volatile\.global[.a-z0-9]*", ptx)
    # (the one 4-byte volatile load is the wait check's read of the fault word, not a packet)
    packets = [v for v in vol if v != "ld.volatile.global.s32"]
    assert packets and all(v.endswith(("64",)) for v in packets), vol
    # the protocol needs no fence and no flag: the only sys-scope fences are on the fault paths
    # (symm_at's out-of-range PE, the wait check's expiry), which record the fault before they trap
    assert ptx.count("fence.") <= 2 and "fence.acq_rel.sys" not in ptx and "membar" not in ptx
    assert "%globaltimer" in ptx and "trap;" in ptx  # the waits are bounded
