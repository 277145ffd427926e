"""torch-callable layers over the tdist Triton kernels.

    import shmem as ash, tdist_kernels.ops as ops
    ash.init_from_env(local_mem_size=1 << 30, backend=tdist.BACKEND_CUDA)
    c = ops.reverse_all_to_all(a)                 # (S * W, H, D) -> (S, H * W, D)
    sym = ash.aclshmem_create_tensor(c.shape, c.dtype)
    ops.reverse_all_to_all(a, variant="direct", out=sym)   # one pass into the peers' outputs
    x = ops.dispatch_all_to_all(c)                # the inverse
    y = ops.all_reduce(x)                         # sum over ranks ("auto": LL packets up to 1 MiB)
    c = ops.ag_gemm(a, b)                          # all_gather(a) @ b
    c = ops.gemm_rs(a, b)                          # reduce_scatter(a @ b)

Every call is collective: all ranks call the same op with the same shapes and dtypes in the same
order (the layers allocate their symmetric buffers on first use with ``aclshmem_create_tensor``,
which is collective and fails on every rank with CollectiveMismatch if the shapes differ). The
buffers are cached per (op, shape, dtype, variant) and freed by ``release()``. Every op is
enqueued on the current stream (no host synchronisation) and can be captured in a CUDA graph,
except the Triton forms of the overlap GEMMs, which refuse capture.

Protocols, per form:

* seed 002's host protocol (the seed's a2a variants, staged dispatch, one/two-shot and ring
  all-reduce, the Triton overlap forms): zero the op's signals, barrier over all PEs, launch,
  barrier. The first barrier keeps a rank's clear from erasing a faster peer's signals of this
  round; the second keeps the next round's clear (and pushes into a peer's buffers) behind every
  rank's end of this round.
* direct all-to-alls: one launch; epoch flags that only grow (``_common.epoch_begin``/``epoch_end``)
  replace the barriers and the reset.
* cuBLAS overlap forms, pieces: barrier, copy-engine puts and stream signals on a side stream (AG),
  matmuls written into the owners' buffers (RS "cublas") or into staging buffers pushed by the copy
  engine (RS "cublas_ce"), bounded stream waits, barrier.
* cuBLAS whole forms (ranks sharing a GPU): the own rows copied into a symmetric buffer, barrier,
  one batched GEMM over every rank's rows in place (AG); or one GEMM into a symmetric buffer,
  barrier, every owner pulls and sums its block (RS); barrier.
* one_shot_ll: one launch; LL packets (payload and epoch in one 8-byte store, epochs kept on the
  device) replace the barriers, the fences and the resets.

Grids of kernels whose programs wait for each other are sized from the SMs this rank may use
(``sm_budget``: the count this process sees, which under MPS is already its share) and capped at
half of the programs that share can hold at once (``_common.resident_grid``), because all of them
must be resident together; the one-pass all-to-alls use a few programs per SM looping over
tiles (``reverse_a2a.direct_grid``; none waits on another of its launch), and AG+GEMM's
persistent Triton grid leaves a few SMs free (``ag_gemm_grid``). Tile shapes and programs per SM
of the one-pass all-to-alls, and the overlap GEMMs' default forms, depend on the placement
(``shared_gpu``: whether ranks share a GPU), as measured in benchmarks/NOTES.md.
"""
import os

from . import collectives as col
from . import overlap as ov
from . import reverse_a2a as ra
from . import _validate as v
from ._common import SIG_ELEMS, KernelArgError, cdiv, pow2, resident_grid
from ._common import bar_slots, epoch_slots

ALLREDUCE_VARIANTS = col.ALLREDUCE_VARIANTS

__all__ = ["reverse_all_to_all", "dispatch_all_to_all", "all_reduce", "ag_gemm", "gemm_rs", "release",
           "KernelArgError", "sm_budget", "sm_info", "shared_gpu", "ALLREDUCE_VARIANTS", "AG_GEMM_IMPLS",
           "GEMM_RS_IMPLS"]

_cache = {}
_local = {}
_views = {}  # id of a cached symmetric tensor -> its views on every PE (shmem.peer_tensor)


def _rt():
    import torch
    import shmem as ash
    import tdist
    if not tdist.initialized():
        raise KernelArgError("tdist_kernels.ops: tdist is not initialised; call shmem.init_from_env(...) or "
                             "shmem.aclshmem_init(attr) with the CUDA backend first")
    if tdist.cuda_device() < 0:
        raise KernelArgError("tdist_kernels.ops: tdist runs on the CPU backend; these ops need the CUDA backend")
    return torch, ash, tdist


_sm_info = {}


def sm_info():
    """How ``sm_budget`` was derived for this process's current device: ``reported`` (the
    multiprocessor count CUDA reports to this process), ``mps_pct`` (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
    or None) and ``budget``."""
    import torch
    dev = torch.cuda.current_device()
    if dev not in _sm_info:
        reported = torch.cuda.get_device_properties(dev).multi_processor_count
        pct = os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE") or None
        _sm_info[dev] = {"reported": reported, "mps_pct": pct, "budget": reported}
    return dict(_sm_info[dev])


def sm_budget():
    """SMs this rank may keep busy: the multiprocessor count this process sees, which under MPS is
    already its share. Measured on the H200 (2026-11-29): an MPS client with
    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 is reported 66 of 132 SMs, at 25 % 32 (torch's
    multi_processor_count, cudaDevAttrMultiProcessorCount in tdist-bench, and even the ``%nsmid``
    register read in a kernel: MPS virtualises all three). So the percentage must not be applied
    again (that gave 33 at 2 ranks, 8 at 4 and 1 at 8). Persistent grids are capped further by
    ``_common.resident_grid`` (co-residency with the other ranks)."""
    return sm_info()["budget"]


def _cached(store, key, make):
    if key not in store:
        store[key] = make()
    return store[key]


def _buffers(key, make):
    """Symmetric buffers made once per key; release() frees them (collective)."""
    return _cached(_cache, key, make)


def _local_buffer(key, make):
    """A cached local object, a staging buffer or a view of a symmetric buffer: release() drops it
    without freeing anything through shmem."""
    return _cached(_local, key, make)


def release():
    """Free every cached symmetric buffer (collective) and drop the local ones."""
    _, ash, _ = _rt()
    _views.clear()
    _local.clear()
    for bufs in _cache.values():
        for t in bufs:
            ash.aclshmem_free_tensor(t)
    _cache.clear()


def _peer_views(ash, t, W):
    """``shmem.peer_tensor(t, pe)`` for every PE, made once per cached buffer (not per call)."""
    return _cached(_views, id(t), lambda: [ash.peer_tensor(t, pe) for pe in range(W)])


def _protocol(ash, sig, launch):
    sig.zero_()
    ash.barrier_all_on_stream()
    launch()
    ash.barrier_all_on_stream()


# ---------------------------------------------------------------------------------------------


# Grid sizes (pure functions of this rank's SM budget, so the co-residency arithmetic is testable
# without a GPU: tests/gpu_kernels/test_residency.py).

A2A_WARPS = 4


def a2a_grid(nsm):
    """Reverse all-to-all: producer/consumer pairs (even), >= 2 producers so the bulk variants have a
    self copier, and every program resident (credits, grid barrier): half of the share's slots."""
    return max(4, resident_grid(nsm, A2A_WARPS) // 2 * 2)


def dispatch_grid(nsm):
    return max(2, resident_grid(nsm, A2A_WARPS))


def allreduce_grid(nsm):
    return resident_grid(nsm, 4)


AG_FREE_SMS = 4


def ag_gemm_grid(nsm, tiles):
    """Persistent AG + GEMM programs: one per SM of the share but ``AG_FREE_SMS``, so the gather's
    copies find SMs even if the driver runs them as a kernel while GEMM programs wait for them."""
    return max(1, min(tiles, nsm - AG_FREE_SMS))


def rs_reduce_grid(nsm):
    """Programs of GEMM + RS's reduce kernel, which runs beside the GEMM: an eighth of the SMs."""
    return max(1, nsm // 8)


def a2a_tiles(D, elem):
    """~16 KB tiles, tall in S: the pipelines synchronise once per S block, so fewer, taller blocks
    cost fewer rounds (the first GPU run used 8 x 1024 tiles: 256 rounds for S = 2048, and the
    per-round signalling dominated)."""
    block_d = min(pow2(D), 128)
    block_s = max(1, min(128, 16384 // (block_d * elem)))
    return block_s, block_d


def direct_tiles(D, elem, shared_gpu=True):
    """Tiles of the one-pass kernels. Ranks sharing a GPU: 16 KB, up to 256 columns wide (16-byte
    vectors, 8 per thread). One rank per GPU: 32 KB, up to 512 columns wide, fewer and larger NVLink
    bursts per program (the 4-GPU sweep's best at 1 and 64 MiB per rank)."""
    cols, tile = (256, 16384) if shared_gpu else (512, 32768)
    block_d = min(pow2(D), cols)
    block_s = max(1, min(64, tile // (block_d * elem)))
    return block_s, block_d


_placement = {}


def shared_gpu():
    """Whether some ranks share a GPU (MPS) rather than each having its own: the device UUIDs of all
    ranks, gathered once at the first call (collective, host only)."""
    import torch
    dev = torch.cuda.current_device()
    if dev not in _placement:
        _, _, tdist = _rt()
        uid = str(torch.cuda.get_device_properties(dev).uuid).encode()[:48].ljust(48)
        got = bytes(tdist.ctrl_allgather(uid))
        uids = [got[i:i + 48] for i in range(0, len(got), 48)]
        _placement[dev] = len(set(uids)) < len(uids)
    return _placement[dev]


def _check_symmetric_out(what, ash, out):
    if out is None:
        raise KernelArgError(f"{what}: the direct variant writes into the peers' outputs, so out= must be given: "
                             "a symmetric tensor from shmem.aclshmem_create_tensor, the same shape on every rank")
    try:
        ash.check_symmetric(out)
    except Exception as e:  # noqa: BLE001 - re-raised with the op's name
        raise KernelArgError(f"{what}: the direct variant needs out on the symmetric heap: {e}") from None


def _epoch_buffers(torch, ash, key, what, make):
    """Buffers of an epoch-protocol op (flags that only grow, no reset per call), created at its first
    call with ``key``: ``make()`` returns them with the flag area last, which is zeroed once on every
    rank before any peer can signal into it (a barrier follows the clear)."""
    def build():
        bufs = make()
        bufs[-1].zero_()
        torch.cuda.synchronize()
        ash.barrier_all()
        return bufs

    if key not in _cache and torch.cuda.is_current_stream_capturing():
        raise KernelArgError(f"{what}: its buffers are created at the first call with these shapes, which cannot "
                             "happen inside CUDA-graph capture: call it once eagerly first")
    return _buffers(key, build)


def _epoch_area(torch, ash, key, world, what):
    """The control area of a one-pass all-to-all (``_common.epoch_slots``), one per (op, shape, grid)."""
    return _epoch_buffers(torch, ash, key, what, lambda: (
        ash.aclshmem_create_tensor([epoch_slots(world) * SIG_ELEMS], torch.int64),))[0]


def reverse_all_to_all(a, variant="mte", out=None, buffer_num=2, block_s=None, block_d=None):
    """(S * W, H, D) -> (S, H * W, D): ``out[s, r * H + h] = a_r[me * S + s, h]`` (seed 002).

    ``variant``: "mte" (producer/consumer pipeline, per-task signals, ``buffer_num`` buffers),
    "bulk" (bulk put per peer + tiled self copy + barrier per S block), "wait_notify" (bulk puts
    per S block with two signal regions, no barrier) or "direct" (one pass straight into the peers'
    outputs: ``out`` must then be a symmetric tensor, e.g. from ``shmem.aclshmem_create_tensor``,
    of the same shape on every rank).
    """
    torch, ash, tdist = _rt()
    what = "reverse_all_to_all"
    v.check_variant(what, variant, ra.VARIANTS)
    dt = v.check_tensor(what, "a", a.shape, a.dtype, a.is_cuda, 3)
    v.check_buffer_num(buffer_num)
    W, me = tdist.n_pes(), tdist.my_pe()
    S, H, D = v.check_reverse_a2a(tuple(a.shape), W)
    if variant != "mte" and not a.is_contiguous():
        a = a.contiguous()  # the bulk variants move whole contiguous segments
    if out is None:
        out = torch.empty((S, H * W, D), dtype=a.dtype, device=a.device)
    elif tuple(out.shape) != (S, H * W, D) or out.dtype != a.dtype:
        raise KernelArgError(f"{what}: out must be {(S, H * W, D)} {a.dtype}, got {tuple(out.shape)} {out.dtype}")
    if variant == "direct":
        _check_symmetric_out(what, ash, out)
        shared = shared_gpu()
        bs0, bd0 = direct_tiles(D, a.element_size(), shared)
        bs, bd = block_s or bs0, block_d or bd0
        grid = ra.direct_grid(W, S, H, D, bs, bd, sm_budget(), shared)
        ctl = _epoch_area(torch, ash, (what, variant, S, H, D, dt, W, bs, bd, grid), W, what)
        ra.reverse_a2a_direct_kernel[(grid,)](a, out, ctl, me, W, S, H, D, *a.stride(), *out.stride(), BLOCK_S=bs,
                                              BLOCK_D=bd, num_warps=4)
        return out
    bs0, bd0 = a2a_tiles(D, a.element_size())
    bs, bd = block_s or bs0, block_d or bd0
    nsm = sm_budget()
    grid = a2a_grid(nsm)
    elem = a.element_size()
    key = (what, variant, S, H, D, dt, W, bs, bd, buffer_num)
    if variant == "mte":
        peer, sig = _buffers(key, lambda: (
            ash.aclshmem_create_tensor([ra.mte_buffer_elems(W, S, H, D, bs, buffer_num)], a.dtype),
            ash.aclshmem_create_tensor([ra.mte_signal_slots(W, S, H, D, bd, buffer_num) * SIG_ELEMS], torch.int64)))
        launch = lambda: ra.reverse_a2a_mte_kernel[(grid,)](  # noqa: E731
            a, out, peer, sig, me, W, buffer_num, S, H, D, *a.stride(), *out.stride(),
            BLOCK_S=bs, BLOCK_D=bd, num_warps=4)
    elif variant == "bulk":
        peer, sig = _buffers(key, lambda: (
            ash.aclshmem_create_tensor([ra.bulk_buffer_elems(W, S, H, D)], a.dtype),
            ash.aclshmem_create_tensor([ra.bulk_signal_slots(W) * SIG_ELEMS], torch.int64)))
        nrole = grid // 2
        # about 3/4 of the producers send; at least one producer is left for the self copy when it can be
        split = max(1, (nrole * 3 // 4) // max(W - 1, 1)) if W > 1 else 1
        launch = lambda: ra.reverse_a2a_bulk_kernel[(grid,)](  # noqa: E731
            a, out, peer, sig, me, W, buffer_num, split, S, H, D, *out.stride(),
            BLOCK_S=bs, BLOCK_D=bd, ELEM_BYTES=elem, VEC_BLOCK=2048, num_warps=4)
    else:
        peer, sig = _buffers(key, lambda: (
            ash.aclshmem_create_tensor([ra.bulk_buffer_elems(W, S, H, D)], a.dtype),
            ash.aclshmem_create_tensor([ra.wait_notify_signal_slots(W, S, H, D, bs, bd, buffer_num) * SIG_ELEMS],
                                       torch.int64)))
        nrole = grid // 2
        n_send = min(max(1, nrole * 3 // 4), nrole - 1) if W > 1 else 0  # >= 1 self-loop producer
        launch = lambda: ra.reverse_a2a_wait_notify_kernel[(grid,)](  # noqa: E731
            a, out, peer, sig, me, W, buffer_num, n_send, S, H, D, *out.stride(),
            BLOCK_S=bs, BLOCK_D=bd, ELEM_BYTES=elem, VEC_BLOCK=2048, num_warps=4)
    _protocol(ash, sig, launch)
    return out


def dispatch_all_to_all(x, out=None, variant="staged"):
    """(S, H * W, D) -> (S * W, H, D): ``out[r * S + s, h] = x_r[s, me * H + h]`` (inverse of the reverse).

    ``variant``: "staged" (into a symmetric receive buffer, grid barrier, copy out) or "direct" (one
    pass into the peers' outputs; ``out`` must be a symmetric tensor)."""
    torch, ash, tdist = _rt()
    what = "dispatch_all_to_all"
    dt = v.check_tensor(what, "x", x.shape, x.dtype, x.is_cuda, 3)
    W, me = tdist.n_pes(), tdist.my_pe()
    S, H, D = v.check_dispatch_a2a(tuple(x.shape), W)
    if out is None:
        out = torch.empty((S * W, H, D), dtype=x.dtype, device=x.device)
    elif tuple(out.shape) != (S * W, H, D) or out.dtype != x.dtype or not out.is_contiguous():
        raise KernelArgError(f"{what}: out must be a contiguous {(S * W, H, D)} {x.dtype}, got "
                             f"{tuple(out.shape)} {out.dtype}")
    v.check_variant(what, variant, ("staged", "direct"))
    if variant == "direct":
        _check_symmetric_out(what, ash, out)
        shared = shared_gpu()
        bs, bd = direct_tiles(D, x.element_size(), shared)
        grid = ra.direct_grid(W, S, H, D, bs, bd, sm_budget(), shared)
        ctl = _epoch_area(torch, ash, (what, variant, S, H, D, dt, W, bs, bd, grid), W, what)
        col.dispatch_a2a_direct_kernel[(grid,)](x, out, ctl, me, W, S, H, D, *x.stride(), *out.stride(), BLOCK_S=bs,
                                                BLOCK_D=bd, num_warps=4)
        return out
    bs, bd = a2a_tiles(D, x.element_size())
    recv, sig = _buffers((what, S, H, D, dt, W), lambda: (
        ash.aclshmem_create_tensor([W * S * H * D], x.dtype),
        ash.aclshmem_create_tensor([bar_slots(W) * SIG_ELEMS], torch.int64)))
    grid = dispatch_grid(sm_budget())
    _protocol(ash, sig, lambda: col.dispatch_a2a_kernel[(grid,)](
        x, out, recv, sig, me, W, S, H, D, *x.stride(), BLOCK_S=bs, BLOCK_D=bd, num_warps=4))
    return out


# all_reduce(variant="auto"): LL packets up to this many bytes, two_shot above. On 2 and 4 GPUs the
# LL form was the fastest variant up to 1 MiB (30.6 us against 54-56 us for the others on 4 GPUs;
# 13.0 against 34-41 us on 2) and two_shot at 64 MiB (benchmarks/NOTES.md, "GPU, fourth round").
AUTO_LL_MAX_BYTES = 1 << 20


def _auto_allreduce(nbytes):
    return "one_shot_ll" if nbytes <= AUTO_LL_MAX_BYTES else "two_shot"


def all_reduce(x, variant="auto", out=None):
    """Sum of ``x`` over all ranks (any shape; reduced as a flat array). Bitwise equal on every rank.

    ``variant``: "one_shot", "two_shot", "ring" (seed 003's protocol: signal reset and two stream
    barriers around each launch), "one_shot_ll" (one launch of LL packets: every 4 bytes travel
    with the epoch in one 8-byte store, so there is no barrier, fence or reset; the small-message
    latency form; its buffer holds 4 x W times the bytes of ``x``), or "auto" (default): one_shot_ll
    up to ``AUTO_LL_MAX_BYTES``, two_shot above."""
    torch, ash, tdist = _rt()
    what = "all_reduce"
    v.check_variant(what, variant, col.ALLREDUCE_VARIANTS + ("auto",))
    if x.dim() == 0:
        raise KernelArgError(f"{what}: x must have at least one dimension")
    dt = v.check_tensor(what, "x", x.shape, x.dtype, x.is_cuda, x.dim())
    xf = x.contiguous().view(-1)
    N = xf.numel()
    W, me = tdist.n_pes(), tdist.my_pe()
    if out is None:
        out = torch.empty_like(xf)
    elif out.numel() != N or out.dtype != x.dtype or not out.is_contiguous():
        raise KernelArgError(f"{what}: out must be a contiguous tensor of {N} {x.dtype}, got {tuple(out.shape)} "
                             f"{out.dtype}")
    BLOCK = 2048
    nsm = sm_budget()
    if variant == "auto":
        variant = _auto_allreduce(N * xf.element_size())
    if variant == "one_shot_ll":
        return _all_reduce_ll(torch, ash, x, xf, out, W, me, dt, nsm)
    if variant == "ring":
        recv, sig = _buffers((what, variant, N, dt, W), lambda: (
            ash.aclshmem_create_tensor([col.ring_buffer_elems(W, N)], x.dtype),
            ash.aclshmem_create_tensor([col.ring_signal_slots(W, N, BLOCK) * SIG_ELEMS], torch.int64)))
        grid = max(1, min(allreduce_grid(nsm), cdiv(cdiv(N, W), BLOCK)))
        launch = lambda: col.allreduce_ring_kernel[(grid,)](  # noqa: E731
            xf, recv, out, sig, me, W, N, BLOCK=BLOCK, num_warps=4)
    else:
        buf, sig = _buffers((what, "shot", N, dt, W), lambda: (
            ash.aclshmem_create_tensor([N], x.dtype),
            ash.aclshmem_create_tensor([bar_slots(W) * SIG_ELEMS], torch.int64)))
        kern = col.allreduce_one_shot_kernel if variant == "one_shot" else col.allreduce_two_shot_kernel
        grid = max(1, min(allreduce_grid(nsm), cdiv(N, BLOCK)))
        launch = lambda: kern[(grid,)](xf, buf, out, sig, me, W, N, BLOCK=BLOCK, num_warps=4)  # noqa: E731
    _protocol(ash, sig, launch)
    return out.view(x.shape)


LL_KIND = {"float32": 0, "float16": 1, "bfloat16": 2}
# Warps per LL program (benchmarks/gpu_kernels/sweep_ll.py, 2 and 4 GPUs and MPS): up to 64 KiB one
# warp per program (more, smaller programs; 6.0 against 6.7 us at 4 KiB on 4 GPUs), above it four.
LL_WARPS = None  # None: by size as above; an int fixes it


def _ll_warps(nbytes):
    return LL_WARPS or (1 if nbytes <= 64 << 10 else 4)


def _all_reduce_ll(torch, ash, x, xf, out, W, me, dt, nsm):
    """one_shot_ll: the payload moves as int32 words (two 16-bit elements or one fp32 per word); an
    odd count of 16-bit elements goes through a padded copy."""
    N = xf.numel()
    nbytes = N * xf.element_size()
    nw = cdiv(nbytes, 4)
    warps = _ll_warps(nbytes)
    block = col.ll_block(W, warps)
    grid = max(1, min(allreduce_grid(nsm), cdiv(nw, block)))
    area = _epoch_buffers(torch, ash, ("all_reduce", "one_shot_ll", nw, W, grid), "all_reduce", lambda: (
        ash.aclshmem_create_tensor([col.ll_buffer_words(W, nw) + grid * SIG_ELEMS], torch.int64),))[0]
    flat = out.view(-1)
    if nbytes % 4:
        xin = torch.zeros(2 * nw, dtype=xf.dtype, device=xf.device)
        xin[:N] = xf
        o = torch.empty_like(xin)
    else:
        xin, o = xf, flat
    col.allreduce_ll_kernel[(grid,)](xin.view(torch.int32), area, o.view(torch.int32),
                                     area[col.ll_buffer_words(W, nw):], me, W, nw, KIND=LL_KIND[dt],
                                     BLOCK=block, WP=pow2(W), num_warps=warps)
    if o is not flat:
        flat.copy_(o[:N])
    return out.view(x.shape)


def _gemm_cfg(dt):
    if dt == "float32":
        return dict(BLOCK_M=128, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=3)
    return dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3)


_streams = {}


def _side_stream(torch, role):
    """One side stream per (device, role): "comm" for copies and signals, "gemm" for the second
    GEMM stream."""
    key = (torch.cuda.current_device(), role)
    if key not in _streams:
        _streams[key] = torch.cuda.Stream(device=key[0])
    return _streams[key]


def _comm_stream(torch):
    return _side_stream(torch, "comm")


AG_GEMM_IMPLS = ("auto", "cublas", "cublas_whole", "triton")
GEMM_RS_IMPLS = ("auto", "cublas", "cublas_ce", "cublas_whole", "triton")


def _auto_overlap(what):
    """impl="auto": the cuBLAS form measured fastest for this placement (benchmarks/NOTES.md, "GPU,
    fourth round"). Ranks sharing a GPU: the whole GEMM with the communication before (AG) or after
    (RS) it, since the pieces' overlap buys nothing when compute and copies share the SMs and the
    split GEMMs cost more than the copies. One rank per GPU: AG+GEMM's pieces on two GEMM streams,
    GEMM+RS's pieces pushed by the copy engine."""
    if shared_gpu():
        return "cublas_whole", 1
    return ("cublas", 2) if what == "ag_gemm" else ("cublas_ce", 1)


def _check_gemm_streams(what, gemm_streams):
    if gemm_streams not in (1, 2):
        raise KernelArgError(f"{what}: gemm_streams must be 1 or 2, got {gemm_streams!r}")


class _GemmStreams:
    """The cuBLAS forms' piecewise GEMMs, issued round-robin on ``n`` streams (the current one and a
    side stream): a piece's last, partly filled wave of tiles then shares the GPU with the next
    piece's first wave instead of leaving SMs idle. ``stream(i)`` is piece i's stream; ``join()``
    makes the current stream wait for all of them."""

    def __init__(self, torch, n):
        self.main = torch.cuda.current_stream()
        self.list = [self.main] + ([_side_stream(torch, "gemm")] if n == 2 else [])
        for st in self.list[1:]:
            st.wait_stream(self.main)

    def stream(self, i):
        return self.list[i % len(self.list)]

    def join(self):
        for st in self.list[1:]:
            self.main.wait_stream(st)


def _check_gemm_operands(what, a, b):
    """2-D CUDA a (M, K) and b (K, N) of one supported dtype; returns the dtype's name."""
    dt = v.check_tensor(what, "a", a.shape, a.dtype, a.is_cuda, 2)
    v.check_tensor(what, "b", b.shape, b.dtype, b.is_cuda, 2)
    v.check_same_dtype(what, a=a.dtype, b=b.dtype)
    v.check_matmul(what, a.shape, b.shape)
    return dt


def _refuse_capture(torch, what):
    # The Triton forms have kernels that wait for work of other launches (copies, other ranks'
    # GEMMs). Captured in a CUDA graph at 4 ranks under MPS, AG+GEMM's Triton form trapped (a wait
    # expired, 2026-11-29; 2 ranks passed); until that is understood it is refused, not risked.
    if torch.cuda.is_current_stream_capturing():
        raise KernelArgError(f"{what}: impl='triton' cannot be captured in a CUDA graph (its GEMM waits for "
                             "copies and kernels outside the launch); use impl='cublas' in graphs")


def ag_gemm(a, b, out=None, impl="auto", chunk_m=None, gemm_streams=1):
    """``all_gather(a) @ b``: a (M, K) per rank, b (K, N) -> (W * M, N), AG overlapped with the GEMM.

    The gather runs on the copy engine (``shmem.putmem_on_stream`` + ``signal_op_on_stream`` on a
    side stream). ``impl="cublas"``: the own rows are multiplied at once (cuBLAS), each peer's rows
    as soon as a stream wait sees their signal, peers in the order their data arrives;
    ``gemm_streams=2`` issues those GEMMs alternately on two streams (``_GemmStreams``).
    ``impl="cublas_whole"``: one cuBLAS GEMM over all ``W * M`` rows: with ranks sharing a GPU a
    batched GEMM that reads every rank's rows in place (``shmem.peer_stack``), otherwise after the
    gather completes. ``impl="auto"`` (default) picks by placement (``_auto_overlap``).
    ``impl="triton"``: one Triton GEMM whose tiles of other ranks' rows wait for the signals of
    their chunks (``chunk_m`` rows) -- seed 003's per-tile form; it runs at the Triton GEMM's speed,
    which on Hopper is well below cuBLAS (benchmarks/NOTES.md)."""
    torch, ash, tdist = _rt()
    what = "ag_gemm"
    dt = _check_gemm_operands(what, a, b)
    a = a.contiguous()
    if a.data_ptr() % 16:
        # ag_gemm_kernel addresses the own rows from the gather buffer and assumes both 16-byte
        # aligned (vector loads); an offset view is copied once rather than read wrongly
        a = a.clone()
    M, K = a.shape
    N = b.shape[1]
    W, me = tdist.n_pes(), tdist.my_pe()
    if out is None:
        out = torch.empty((W * M, N), dtype=a.dtype, device=a.device)
    elif tuple(out.shape) != (W * M, N) or out.dtype != a.dtype:
        raise KernelArgError(f"{what}: out must be {(W * M, N)} {a.dtype}, got {tuple(out.shape)} {out.dtype}")
    v.check_variant(what, impl, AG_GEMM_IMPLS, argname="impl")
    _check_gemm_streams(what, gemm_streams)
    if impl == "auto":
        impl, gemm_streams = _auto_overlap(what)
    if impl == "cublas_whole" and shared_gpu():
        return _ag_gemm_in_place(torch, ash, a, b, out, W, dt)
    if impl in ("cublas", "cublas_whole"):
        return _ag_gemm_cublas(torch, ash, a, b, out, W, me, dt, gemm_streams, impl == "cublas_whole")
    _refuse_capture(torch, what)
    chunk = chunk_m or max(128, cdiv(M, 4))
    n_chunks = cdiv(M, chunk)
    gather, sig = _buffers((what, M, K, dt, W, chunk), lambda: (
        ash.aclshmem_create_tensor([W * M, K], a.dtype),
        ash.aclshmem_create_tensor([ov.ag_gemm_signal_slots(W, M, chunk) * SIG_ELEMS], torch.int64)))
    cfg = _gemm_cfg(dt)
    grid = ag_gemm_grid(sm_budget(), cdiv(W * M, cfg["BLOCK_M"]) * cdiv(N, cfg["BLOCK_N"]))
    main = torch.cuda.current_stream()
    comm = _comm_stream(torch)
    sig.zero_()
    ash.barrier_all_on_stream(main)
    comm.wait_stream(main)
    for c in range(n_chunks):  # the own rows first (tiles straddling two ranks read them), then rank + 1, ...
        r0 = c * chunk
        rows = min(chunk, M - r0)
        for j in range(W):
            target = (me + j) % W
            ash.putmem_on_stream(gather[me * M + r0:me * M + r0 + rows], a[r0:r0 + rows], target, stream=comm)
            ash.signal_op_on_stream(sig[(me * n_chunks + c) * SIG_ELEMS:], 1, target, stream=comm)
    ov.ag_gemm_kernel[(grid,)](a, b, out, gather, sig, me, W, M, N, K, *b.stride(), *out.stride(),
                               CHUNK_M=chunk, **cfg)
    main.wait_stream(comm)
    a.record_stream(comm)
    ash.barrier_all_on_stream(main)
    return out


def gemm_rs(a, b, out=None, impl="auto", reduce_programs=None, gemm_streams=1):
    """``reduce_scatter(a @ b)``: a (M, K) and b (K, N) per rank -> rows [me * M / W, (me + 1) * M / W) of
    the sum over ranks, (M / W, N).

    ``impl="cublas"``: each owner's block of the partial product is multiplied (cuBLAS) straight
    into the owner's receive buffer through the peer mapping (``shmem.peer_tensor``), other owners
    first, then signalled by a stream write; the own block last; one pass sums the W partials in
    fp32 once their signals are in. ``impl="cublas_ce"``: each owner's block is multiplied into a
    local staging buffer at full speed and pushed to the owner by the copy engine on a side stream
    (``shmem.putmem_on_stream``), overlapping the next block's GEMM, instead of the GEMM's epilogue
    storing over NVLink. ``gemm_streams=2``: the cuBLAS forms' GEMMs alternate between two streams.
    ``impl="cublas_whole"``: one cuBLAS GEMM of the whole product into a symmetric buffer, a barrier,
    then one pass pulls this rank's block from every PE and sums it. ``impl="auto"`` (default)
    picks by placement (``_auto_overlap``). ``impl="triton"``: one Triton GEMM whose epilogue
    stores each fp32 partial tile into its owner's buffer and signals it, with a small persistent reduce grid
    on a side stream overlapping it (seed 003's per-tile form)."""
    torch, ash, tdist = _rt()
    what = "gemm_rs"
    dt = _check_gemm_operands(what, a, b)
    W, me = tdist.n_pes(), tdist.my_pe()
    v.check_gemm_rs(a.shape, W)
    M, K = a.shape
    N = b.shape[1]
    if out is None:
        out = torch.empty((M // W, N), dtype=a.dtype, device=a.device)
    elif tuple(out.shape) != (M // W, N) or out.dtype != a.dtype:
        raise KernelArgError(f"{what}: out must be {(M // W, N)} {a.dtype}, got {tuple(out.shape)} {out.dtype}")
    v.check_variant(what, impl, GEMM_RS_IMPLS, argname="impl")
    _check_gemm_streams(what, gemm_streams)
    if impl == "auto":
        impl, gemm_streams = _auto_overlap(what)
    if impl == "cublas_whole":
        return _gemm_rs_whole(torch, ash, a, b, out, W, me, dt)
    if impl in ("cublas", "cublas_ce"):
        return _gemm_rs_cublas(torch, ash, a, b, out, W, me, dt, gemm_streams, impl == "cublas_ce")
    _refuse_capture(torch, what)
    cfg = _gemm_cfg(dt)
    BM, BN = cfg["BLOCK_M"], cfg["BLOCK_N"]
    recv, sig = _buffers((what, M, N, dt, W), lambda: (
        ash.aclshmem_create_tensor([W * (M // W) * N], torch.float32),
        ash.aclshmem_create_tensor([ov.gemm_rs_signal_slots(W, M, N, BM, BN) * SIG_ELEMS], torch.int64)))
    local_tiles = cdiv(M // W, BM) * cdiv(N, BN)
    nred = max(1, min(local_tiles, reduce_programs or rs_reduce_grid(sm_budget())))
    main = torch.cuda.current_stream()
    comm = _comm_stream(torch)
    sig.zero_()
    ash.barrier_all_on_stream(main)
    comm.wait_stream(main)
    ov.gemm_rs_kernel[(W * local_tiles,)](a, b, recv, sig, me, W, M, N, K, *a.stride(), *b.stride(), **cfg)
    with torch.cuda.stream(comm):
        ov.rs_reduce_kernel[(nred,)](recv, out, sig, me, W, M, N, *out.stride(), BLOCK_M=BM, BLOCK_N=BN, RED_M=16,
                                     num_warps=4)
    main.wait_stream(comm)
    out.record_stream(comm)
    ash.barrier_all_on_stream(main)
    return out


def _ag_gemm_cublas(torch, ash, a, b, out, W, me, dt, nstreams, whole):
    M, K = a.shape
    gather, sig = _buffers(("ag_gemm_cublas", M, K, dt, W), lambda: (
        ash.aclshmem_create_tensor([W * M, K], a.dtype),
        ash.aclshmem_create_tensor([W * SIG_ELEMS], torch.int64)))
    o = out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    main = torch.cuda.current_stream()
    comm = _comm_stream(torch)
    sig.zero_()
    ash.barrier_all_on_stream(main)
    comm.wait_stream(main)
    for j in range(1, W):  # rank me - j multiplies this rank's rows at its step j: feed it first
        target = (me - j) % W
        ash.putmem_on_stream(gather[me * M:(me + 1) * M], a, target, stream=comm)
        ash.signal_op_on_stream(sig[me * SIG_ELEMS:], 1, target, stream=comm)
    if whole:
        gather[me * M:(me + 1) * M].copy_(a)
        for j in range(1, W):
            ash.signal_wait_until_on_stream(sig[((me + j) % W) * SIG_ELEMS:], "eq", 1, stream=main)
        torch.matmul(gather, b, out=o)
    else:
        gs = _GemmStreams(torch, nstreams)
        torch.matmul(a, b, out=o[me * M:(me + 1) * M])
        for j in range(1, W):
            src = (me + j) % W
            st = gs.stream(j)
            ash.signal_wait_until_on_stream(sig[src * SIG_ELEMS:], "eq", 1, stream=st)
            with torch.cuda.stream(st):
                torch.matmul(gather[src * M:(src + 1) * M], b, out=o[src * M:(src + 1) * M])
        gs.join()
    main.wait_stream(comm)
    a.record_stream(comm)
    ash.barrier_all_on_stream(main)  # the next call's puts must not overwrite rows still being read
    if o is not out:
        out.copy_(o)
    return out


def _gemm_rs_cublas(torch, ash, a, b, out, W, me, dt, nstreams, copy_engine):
    M, K = a.shape
    N = b.shape[1]
    ml = M // W
    recv, sig = _buffers(("gemm_rs_cublas", M, N, dt, W), lambda: (
        ash.aclshmem_create_tensor([W, ml, N], a.dtype),
        ash.aclshmem_create_tensor([W * SIG_ELEMS], torch.int64)))
    stage = _local_buffer(("gemm_rs_stage", M, N, dt, W), lambda: torch.empty(
        (max(W - 1, 1), ml, N), dtype=a.dtype, device=a.device)) if copy_engine else None
    main = torch.cuda.current_stream()
    comm = _comm_stream(torch)
    sig.zero_()
    ash.barrier_all_on_stream(main)
    gs = _GemmStreams(torch, nstreams)
    for j in range(1, W):  # owner me + j next receives from this rank at its wait j
        owner = (me + j) % W
        st = gs.stream(j - 1)
        with torch.cuda.stream(st):
            if copy_engine:
                torch.matmul(a[owner * ml:(owner + 1) * ml], b, out=stage[j - 1])
                comm.wait_stream(st)
                ash.putmem_on_stream(recv[me], stage[j - 1], owner, stream=comm)
                ash.signal_op_on_stream(sig[me * SIG_ELEMS:], 1, owner, stream=comm)
            else:
                torch.matmul(a[owner * ml:(owner + 1) * ml], b, out=_peer_views(ash, recv, W)[owner][me])
                ash.signal_op_on_stream(sig[me * SIG_ELEMS:], 1, owner, stream=st)
    with torch.cuda.stream(gs.stream(W - 1)):
        torch.matmul(a[me * ml:(me + 1) * ml], b, out=recv[me])
    gs.join()
    if copy_engine:
        main.wait_stream(comm)  # the staging buffers are free again for the next call
    for j in range(1, W):
        ash.signal_wait_until_on_stream(sig[((me - j) % W) * SIG_ELEMS:], "eq", 1, stream=main)
    n = ml * N
    BLOCK = 2048
    o = out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    col.sum_partials_kernel[(cdiv(n, BLOCK),)](recv, o, W, n, BLOCK=BLOCK, num_warps=4)
    ash.barrier_all_on_stream(main)  # the next call's partials must not land before every sum is done
    if o is not out:
        out.copy_(o)
    return out


def _ag_gemm_in_place(torch, ash, a, b, out, W, dt):
    """AG+GEMM's whole form when the ranks share a GPU: each rank's rows go into its symmetric buffer
    (one local copy), and one batched cuBLAS GEMM reads every rank's rows in place through
    ``shmem.peer_stack`` (no gather copy at all)."""
    M, K = a.shape
    N = b.shape[1]
    key = ("ag_gemm_in_place", M, K, dt, W)
    rows = _buffers(key, lambda: (ash.aclshmem_create_tensor([M, K], a.dtype),))[0]
    stack = _local_buffer(key, lambda: ash.peer_stack(rows))  # a view: release() drops it, frees rows
    main = torch.cuda.current_stream()
    rows.copy_(a)  # the previous call's trailing barrier: no peer still reads the old rows
    ash.barrier_all_on_stream(main)  # every rank's rows are in place
    o = out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    torch.bmm(stack, b.expand(W, K, N), out=o.view(W, M, N))
    ash.barrier_all_on_stream(main)  # every rank has read this rank's rows
    if o is not out:
        out.copy_(o)
    return out


def _gemm_rs_whole(torch, ash, a, b, out, W, me, dt):
    M, K = a.shape
    N = b.shape[1]
    ml = M // W
    part = _buffers(("gemm_rs_whole", M, N, dt, W), lambda: (ash.aclshmem_create_tensor([M, N], a.dtype),))[0]
    main = torch.cuda.current_stream()
    # the previous call's trailing barrier keeps this GEMM from overwriting rows a peer still reads
    torch.matmul(a, b, out=part)
    ash.barrier_all_on_stream(main)  # every PE's product is complete
    n = ml * N
    BLOCK = 2048
    o = out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    col.sum_peer_rows_kernel[(cdiv(n, BLOCK),)](part, o, me, W, me * n, n, BLOCK=BLOCK, num_warps=4)
    ash.barrier_all_on_stream(main)  # every PE has read its block of this PE's product
    if o is not out:
        out.copy_(o)
    return out
