"""Co-residency arithmetic of the persistent kernels (no GPU needed).

Every program of a launch, on every rank sharing the GPU, must be resident at once (grid barriers,
producer/consumer credits). On 2026-11-29 the a2a grid was 2 programs per SM of the rank's MPS share,
with 255-register 4-warp programs that fit exactly 2 per SM: the ranks together needed every slot of
the GPU, and the first grid-barrier kernel (bulk a2a) trapped at 2 and 4 ranks. These tests pin the
rule that replaced it: at most half of the slots of the rank's share, with the programs-per-SM figure
checked against what the compiler actually produces."""
import pytest

from tdist_kernels import _common as c
from tdist_kernels import ops

H200_SMS = 132


def _share(world):
    # tools/tdist_mps.py's percentage; MPS reports that share of the SMs to the client (H200: 66 at 50 %)
    pct = max(100 // world, 1)
    return H200_SMS * pct // 100


def test_programs_per_sm_worst_case_registers():
    assert c.programs_per_sm(4) == 2  # 4 warps x 32 threads x 256 registers = half the register file
    assert c.programs_per_sm(8) == 1
    assert c.programs_per_sm(4, regs_per_thread=128) == 4
    assert c.programs_per_sm(4, smem_bytes=100 * 1024) == 2
    assert c.programs_per_sm(4, smem_bytes=150 * 1024) == 1  # shared memory limits
    assert c.programs_per_sm(1, regs_per_thread=32) == 32  # program count limits


def test_resident_grid_is_half_the_slots():
    assert c.resident_grid(66, 4) == 66
    assert c.resident_grid(66, 8) == 33
    assert c.resident_grid(1, 8) == 1


@pytest.mark.parametrize("world", [2, 4, 8])
def test_all_ranks_together_fill_at_most_half_the_gpu(world):
    nsm = _share(world)
    per4 = c.programs_per_sm(4)
    # slots of the whole GPU each launch kind takes, summed over the ranks
    assert world * ops.a2a_grid(nsm) / per4 <= H200_SMS / 2
    assert world * ops.dispatch_grid(nsm) / per4 <= H200_SMS / 2
    assert world * ops.allreduce_grid(nsm) / per4 <= H200_SMS / 2


def test_ag_gemm_grid_leaves_sms_free():
    assert ops.ag_gemm_grid(66, 512) == 66 - ops.AG_FREE_SMS
    assert ops.ag_gemm_grid(132, 10) == 10
    assert ops.ag_gemm_grid(3, 100) == 1


def test_a2a_grid_keeps_roles():
    for nsm in (1, 2, 3, 7, 15, 33, 66, 132):
        g = ops.a2a_grid(nsm)
        assert g % 2 == 0 and g >= 4


# --- the programs-per-SM figures above hold for the kernels as compiled ---------------------------

triton = pytest.importorskip("triton")
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import tdist_kernels  # noqa: E402


@pytest.fixture(scope="module")
def bitcode():
    from triton_dist import _bitcode
    try:
        return _bitcode.find_bitcode()
    except _bitcode.BitcodeNotFound as e:
        pytest.skip(f"needs the NVIDIA device bitcode: {e}")


def _compile(fn, sig, cst, num_warps, num_stages=3):
    sig = dict(sig)
    for k in cst:
        sig[k] = "constexpr"
    return triton.compile(ASTSource(fn, sig, dict(cst)), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": num_warps, "num_stages": num_stages})


@pytest.mark.parametrize("dtype,elem,tdt", [("fp16", 2, "float16"), ("fp32", 4, "float32")])
def test_shared_memory_never_limits_residency(bitcode, monkeypatch, dtype, elem, tdt):
    """With the tiles and configs ops uses, shared memory allows at least as many programs per SM as
    the worst-case register count does, so programs_per_sm(num_warps) is a true lower bound."""
    monkeypatch.setenv("TDIST_DEVICE_BITCODE", bitcode)
    bs, bd = ops.a2a_tiles(256, elem)
    for name, fn, sig, cst, opts in tdist_kernels.all_compile_cases(dtype):
        cst = dict(cst)
        if name in tdist_kernels.OWN_GRID_RULE:
            continue  # not sized by resident_grid (see OWN_GRID_RULE)
        nw, ns = ops.A2A_WARPS, 3
        if "BLOCK_S" in cst:
            cst["BLOCK_S"], cst["BLOCK_D"] = bs, bd
        if "VEC_BLOCK" in cst and name.startswith("reverse"):
            cst["VEC_BLOCK"] = 2048
        k = _compile(fn, sig, cst, nw, ns)
        smem = k.metadata.shared
        assert c.programs_per_sm(nw, smem) >= c.programs_per_sm(nw) >= 1, (name, smem)
