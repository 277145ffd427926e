"""Launch shapes that depend on placement and size (no GPU needed): the direct all-to-alls' tiles
and programs per SM, the LL all-reduce's program shape, and the overlap ops' form choice. The values
are the ones benchmarks/NOTES.md ("GPU, fourth round") measured; these tests pin the rules."""
import pytest

from tdist_kernels import _common as c
from tdist_kernels import all_reduce as ar
from tdist_kernels import all_to_all as a2a
from tdist_kernels import ops


def test_pow2():
    assert [c.pow2(n) for n in (0, 1, 2, 3, 4, 5, 8, 9)] == [1, 1, 2, 4, 4, 8, 8, 16]


@pytest.mark.parametrize("D,elem", [(1024, 2), (1024, 4), (96, 2), (7, 2), (4096, 4)])
def test_direct_tiles_by_placement(D, elem):
    for shared, cols, limit in ((True, 256, 16384), (False, 512, 32768)):
        bs, bd = ops.direct_tiles(D, elem, shared)
        assert bd == min(c.pow2(D), cols) and 1 <= bs <= 64
        assert bs * bd * elem <= limit or bs == 1
    assert ops.direct_tiles(1024, 2, False) == (32, 512)  # the 4-GPU sweep's choice
    assert ops.direct_tiles(1024, 2, True) == (32, 256)


def test_direct_grid_by_placement():
    tiles = a2a.direct_tile_count(4, 4096, 8, 1024, 32, 256)
    assert a2a.direct_grid(4, 4096, 8, 1024, 32, 256, 132, shared_gpu=True) == min(tiles, 8 * 132)
    assert a2a.direct_grid(4, 4096, 8, 1024, 32, 512, 132, shared_gpu=False) == 2 * 132
    assert a2a.direct_grid(2, 1, 1, 8, 1, 8, 132, shared_gpu=False) == 2  # never more programs than tiles


@pytest.mark.parametrize("world", [1, 2, 3, 4, 5, 8])
@pytest.mark.parametrize("warps", [1, 2, 4])
def test_ll_block_holds_16_packets_per_thread(world, warps):
    block = ar.ll_block(world, warps)
    assert block * c.pow2(world) == 512 * warps  # [WP, BLOCK] int64 packets = 16 per thread
    assert block & (block - 1) == 0  # a power of two (tl.arange)


def test_ll_warps_by_size(monkeypatch):
    assert ar._ll_warps(4096) == 1 and ar._ll_warps(64 << 10) == 1
    assert ar._ll_warps((64 << 10) + 4) == 4 and ar._ll_warps(1 << 20) == 4
    monkeypatch.setattr(ar, "LL_WARPS", 2)
    assert ar._ll_warps(4096) == 2 and ar._ll_warps(1 << 20) == 2


@pytest.mark.parametrize("shared,ag,rs", [(True, ("cublas_whole", 1), ("cublas_whole", 1)),
                                          (False, ("cublas", 2), ("cublas_ce", 1))])
def test_auto_overlap_form_by_placement(monkeypatch, shared, ag, rs):
    monkeypatch.setattr(ops, "shared_gpu", lambda: shared)
    assert ops._auto_overlap("ag_gemm") == ag
    assert ops._auto_overlap("gemm_rs") == rs
    for impl, _ in (ag, rs):
        assert impl in ops.AG_GEMM_IMPLS + ops.GEMM_RS_IMPLS


def test_gemm_streams_checked():
    ops._check_gemm_streams("gemm_rs", 1)
    ops._check_gemm_streams("gemm_rs", 2)
    for bad in (0, 3, "2", None):
        with pytest.raises(ops.KernelArgError, match="gemm_rs: gemm_streams must be 1 or 2"):
            ops._check_gemm_streams("gemm_rs", bad)


def test_auto_allreduce_by_size(monkeypatch):
    assert ops._auto_allreduce(4096) == "one_shot_ll"
    assert ops._auto_allreduce(1 << 20) == "one_shot_ll"
    assert ops._auto_allreduce((1 << 20) + 2) == "two_shot"
    assert ops._auto_allreduce(64 << 20) == "two_shot"
    monkeypatch.setattr(ops, "AUTO_LL_MAX_BYTES", 0)
    assert ops._auto_allreduce(4) == "two_shot"


def test_variant_names_and_deprecated_alias():
    assert ops.REVERSE_A2A_VARIANTS == ("pipeline", "bulk", "wait_notify", "direct")
    assert ops.DISPATCH_A2A_VARIANTS == ("staged", "direct")
    ops._warned.clear()
    with pytest.warns(DeprecationWarning, match="variant='mte' is deprecated, use 'pipeline'"):
        assert ops._variant("reverse_all_to_all", "mte", ops.REVERSE_A2A_VARIANTS) == "pipeline"
    assert ops._variant("reverse_all_to_all", "bulk", ops.REVERSE_A2A_VARIANTS) == "bulk"
    # the alias is only for the op that took it
    with pytest.raises(ops.KernelArgError, match="variant='mte' is not one of 'staged', 'direct'"):
        ops._variant("dispatch_all_to_all", "mte", ops.DISPATCH_A2A_VARIANTS)
