"""Tile-order helpers of Triton-distributed's Ascend kernels (``from
triton_dist.language.extra.ascend.algorithm import dist_swizzle2d_Nz, gemm_swizzle2d_Nz``).

Plain ``@triton.jit`` integer arithmetic, so they compile on every platform (under triton-ascend
for Ascend and CPU ranks, and under stock Triton). The tile grid of a ``rows x cols`` matrix cut
into ``tile_rows x tile_cols`` tiles has ``R = cdiv(rows, tile_rows)`` by ``C = cdiv(cols,
tile_cols)`` tiles; ``iter_id`` enumerates a visiting order of them.
"""
import triton
import triton.language as tl


@triton.jit
def gemm_swizzle2d_Nz(iter_id, data_row_shape, data_col_shape, tile_row_shape, tile_col_shape, swizzle_offset=7):
    """Tile ``(row, col)`` number ``iter_id`` of the GEMM's visiting order: bands of ``swizzle_offset``
    tile columns (the last band narrower when C is not a multiple), visited band after band; inside a
    band row after row, the band's columns in order; odd bands walk their rows bottom up, so
    consecutive bands meet at the same rows."""
    rows = tl.cdiv(data_row_shape, tile_row_shape)
    cols = tl.cdiv(data_col_shape, tile_col_shape)
    band_tiles = swizzle_offset * rows
    band = iter_id // band_tiles
    in_band = iter_id - band * band_tiles
    width = tl.minimum(cols - band * swizzle_offset, swizzle_offset)
    row = in_band // width
    col = band * swizzle_offset + (in_band - row * width)
    row = tl.where(band % 2 == 1, rows - 1 - row, row)
    return row, col


@triton.jit
def dist_swizzle2d_Nz(iter_id, rank_size, data_row_shape, data_col_shape, tile_row_shape, tile_col_shape,
                      comm_npu_split=1):
    """Communication step ``iter_id`` over ``rank_size`` ranks' copies of the tile grid: returns
    ``(row, col, rank, rows_in_tile, cols_in_tile)``, the tile, the rank whose copy it is, and the
    tile's extent (smaller at the bottom and right edges).

    Steps come in groups of ``comm_npu_split`` ranks (the last group smaller when it does not divide
    ``rank_size``); within a group the rank cycles fastest, then the tile number ``t`` advances. A
    group's rank ``r`` maps to ``(r * (rank_size // comm_npu_split)) // rank_size``, then the ranks
    rotate with the tile: ``(that + t) % rank_size``, so the steps of one tile go to different ranks.
    With ``comm_npu_split=1`` (the default) step ``i`` is tile ``i % (R * C)`` of rank
    ``(i // (R * C) + i % (R * C)) % rank_size``. The arithmetic is Triton-distributed's, so a ported
    kernel visits the same tiles in the same order."""
    rows = tl.cdiv(data_row_shape, tile_row_shape)
    cols = tl.cdiv(data_col_shape, tile_col_shape)
    tiles = rows * cols
    rank_stride = rank_size // comm_npu_split
    group_steps = comm_npu_split * tiles
    group = iter_id // group_steps
    in_group = iter_id - group * group_steps
    group_size = tl.minimum(rank_size - group * comm_npu_split, comm_npu_split)
    tile = in_group // group_size
    rank = group * comm_npu_split + (in_group - tile * group_size)
    rank = (rank * rank_stride) // rank_size
    rank = (rank + tile) % rank_size
    row = tile // cols
    col = tile - row * cols
    rows_in_tile = tl.minimum(data_row_shape - row * tile_row_shape, tile_row_shape)
    cols_in_tile = tl.minimum(data_col_shape - col * tile_col_shape, tile_col_shape)
    return row, col, rank, rows_in_tile, cols_in_tile
