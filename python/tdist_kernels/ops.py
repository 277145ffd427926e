"""torch-callable layers over the tdist Triton kernels: argument checks and the choice of form; each
op's plan (buffers, grid, launch) lives beside its kernels in the op's module (``all_to_all``,
``all_reduce``, ``ag_gemm``, ``gemm_rs``), and the state kept between calls in
``_resources.RESOURCES``.

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

Protocols, per form (each written once, in ``_resources``):

* seed 002's host protocol (the seed's a2a variants, staged dispatch, one/two-shot and ring
  all-reduce, the overlap forms' pieces): zero the op's signals, barrier over all PEs, launch,
  barrier (``_resources.signal_round``).
* direct all-to-alls: one launch; epoch flags that only grow (``_common.epoch_begin``/``epoch_end``)
  replace the barriers and the reset.
* cuBLAS overlap forms, pieces: copy-engine puts and stream signals on a side stream (AG), matmuls
  written into the owners' buffers (RS "cublas") or into staging buffers pushed by the copy engine
  (RS "cublas_ce"), bounded stream waits, inside the host protocol.
* cuBLAS whole forms (ranks sharing a GPU): the own rows copied into a symmetric buffer, barrier,
  one batched GEMM over every rank's rows in place (AG); or one GEMM into a symmetric buffer,
  barrier, every owner pulls and sums its block (RS); barrier.
* one_shot_ll: one launch; LL packets (payload and epoch in one 8-byte store, epochs kept on the
  device) replace the barriers, the fences and the resets.

Grids of kernels whose programs wait for each other are sized from the SMs this rank may use
(``sm_budget``: the count this process sees, which under MPS is already its share) and capped at
half of the programs that share can hold at once (``_common.resident_grid``), because all of them
must be resident together; the one-pass all-to-alls use a few programs per SM looping over
tiles (``all_to_all.direct_grid``; none waits on another of its launch), and AG+GEMM's
persistent Triton grid leaves a few SMs free (``ag_gemm_grid``). Tile shapes and programs per SM
of the one-pass all-to-alls, and the overlap GEMMs' default forms, depend on the placement
(``shared_gpu``: whether ranks share a GPU), as measured in benchmarks/NOTES.md.

Variant names describe the algorithm and are the same in the CPU C++ kernels and tdist-bench
(``pipeline``, ``bulk``, ``wait_notify``, ``direct``); the former name ``mte`` of the pipeline is
accepted with a DeprecationWarning (``DEPRECATED_VARIANTS``).
"""
import functools
import warnings

from . import _validate as v
from . import ag_gemm as _ag
from . import all_reduce as _ar
from . import all_to_all as _a2a
from . import gemm_rs as _rs
from ._common import SIG_ELEMS, KernelArgError, bar_slots, cdiv, epoch_slots, pow2, resident_grid  # noqa: F401
from ._resources import RESOURCES
# the plans' tile and grid rules, re-exported (tests and benchmarks size launches with them)
from .ag_gemm import AG_FREE_SMS, ag_gemm_grid  # noqa: F401
from .all_reduce import LL_KIND, allreduce_grid  # noqa: F401
from .all_to_all import A2A_WARPS, a2a_grid, a2a_tiles, direct_tiles, dispatch_grid  # noqa: F401

try:  # torch is what the ops run on; without it (a compile-only machine) this module still imports
    import torch as _torch
    from torch.compiler import is_compiling as _compiling
except ImportError:
    _torch = None

    def _compiling():
        return False

REVERSE_A2A_VARIANTS = _a2a.REVERSE_VARIANTS
DISPATCH_A2A_VARIANTS = _a2a.DISPATCH_VARIANTS
ALLREDUCE_VARIANTS = _ar.VARIANTS
AG_GEMM_IMPLS = ("auto", "cublas", "cublas_whole", "triton")
GEMM_RS_IMPLS = ("auto", "cublas", "cublas_ce", "cublas_whole", "triton")
# former variant names (the engine the seed named them after) -> the algorithm's name
DEPRECATED_VARIANTS = {"mte": "pipeline"}

__all__ = ["reverse_all_to_all", "dispatch_all_to_all", "all_reduce", "ag_gemm", "gemm_rs", "release",
           "KernelArgError", "sm_budget", "sm_info", "shared_gpu", "ALLREDUCE_VARIANTS", "AG_GEMM_IMPLS",
           "GEMM_RS_IMPLS", "REVERSE_A2A_VARIANTS", "DISPATCH_A2A_VARIANTS", "DEPRECATED_VARIANTS", "moe_dispatch",
           "moe_combine", "MOE_MODES"]


def sm_info():
    """How ``sm_budget`` was derived for this process's current device: ``reported`` (the
    multiprocessor count CUDA reports to this process), ``mps_pct`` (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
    or None) and ``budget``."""
    return RESOURCES.sm_info()


def sm_budget():
    """SMs this rank may keep busy: the multiprocessor count this process sees, which under MPS is
    already its share (``_resources.Resources.sm_budget`` has the measurement)."""
    return RESOURCES.sm_budget()


def shared_gpu():
    """Whether some ranks share a GPU (MPS) rather than each having its own: the device UUIDs of all
    ranks, gathered once at the first call (collective, host only)."""
    return RESOURCES.shared_gpu()


def release():
    """Free every cached symmetric buffer (collective) and drop the local ones."""
    RESOURCES.release()


# -- the ops' common entry: torch.compile, autograd, group= ----------------------------------------

_IMPLS = {}  # op name -> its eager implementation (what the decorated op calls)
_GROUPS_OK = {}  # id -> (a group already resolved, its shmem.Team), kept alive for torch.compile


def _impl(name):
    """The eager implementation of op ``name`` (what its torch.library custom op runs)."""
    return _IMPLS[name]


def _team_of_group(what, group):
    """``group=``: the PEs the op runs over. None: tdist's world. A torch.distributed group made with
    ``shmem.new_group`` / ``shmem.new_subgroups`` (or tdist's world group), or a ``shmem.Team``: the
    op runs over that team's members only, with its buffers in the team's heap (docs/CONTRACT.md
    section 8); the other ranks are free to run other work, other teams included. Returns the
    ``shmem.Team``."""
    got = _GROUPS_OK.get(id(group))
    if got is not None and got[0] is group:
        return got[1]
    import shmem
    try:
        team = shmem.team_of(group)
    except Exception as e:  # noqa: BLE001 - re-raised with the op's name
        raise KernelArgError(f"{what}: group=: {e}") from None
    import tdist
    tdist.on_finalize(_GROUPS_OK.clear)  # a team does not outlive its job (registered once)
    _GROUPS_OK[id(group)] = (group, team)
    return team


def _team_by_handle(what, handle):
    """The ``shmem.Team`` of a handle a custom op was traced with (0: the world -> None)."""
    if handle == 0:
        return None
    import shmem
    team = shmem._teams.get(handle)
    if team is None:
        raise KernelArgError(f"{what}: team {handle} of this graph is not a team of this job (its group was not "
                             "given to an eager call of this process)")
    return team


def _team_handle(what, group):
    """The runtime handle of ``group``'s team (a constant of a traced graph; 0 is the world). A search
    by identity, which torch.compile's tracer follows, before the resolution of a new group."""
    if group is None:
        return 0
    team = _known_team(group)
    return team.handle if team is not None else _team_of_group(what, group).handle


def _known_team(group):
    """The team of a group resolved before or made by ``shmem.new_group`` / ``new_subgroups`` (a search
    by identity, which torch.compile's tracer follows), else None."""
    import shmem
    for g, team in _GROUPS_OK.values():
        if g is group:
            return team
    for g, team in shmem._group_teams.values():
        if g is group:
            return team
    if isinstance(group, shmem.Team):
        return group
    return None


def _run_over(team, fn, args, kwargs):
    """``fn(*args, **kwargs)`` with ``team`` as the current op's team (``RESOURCES.scope``)."""
    prev = RESOURCES.enter(team)
    try:
        return fn(*args, **kwargs)
    finally:
        RESOURCES.leave(prev)


def _members():
    """(size, this PE's index) of the current op's team."""
    sc = RESOURCES.scope()
    return sc.size, sc.rank


def _routed(args, kwargs):
    """Whether an eager call goes through the op's torch.library custom op: when an input tensor
    needs a gradient (autograd records the op there)."""
    if not _torch.is_grad_enabled():
        return False
    for t in args:
        if isinstance(t, _torch.Tensor) and t.requires_grad:
            return True
    for t in kwargs.values():
        if isinstance(t, _torch.Tensor) and t.requires_grad:
            return True
    return False


def _torch_op(name):
    """The public form of op ``name``: under ``torch.compile`` tracing, and in eager calls whose
    inputs need a gradient, the call goes to the op's ``torch.library`` custom op
    (``_torch_ops``, which takes the team's handle); otherwise straight to the implementation.
    Adds ``group=`` (``_team_of_group``)."""
    def wrap(fn):
        _IMPLS[name] = fn

        @functools.wraps(fn)
        def op(*args, group=None, **kwargs):
            if _compiling():
                if group is not None and _known_team(group) is None:
                    raise KernelArgError(f"{name}: under torch.compile, group= must be a group of shmem.new_group / "
                                         "new_subgroups, a shmem.Team, a group an eager call has used already, or "
                                         "None (tdist's world)")
                return _torch_ops.CALLS[name](*args, team=_team_handle(name, group), **kwargs)
            if _torch_ops is not None and _routed(args, kwargs):
                return _torch_ops.CALLS[name](*args, team=_team_handle(name, group), **kwargs)
            if group is None:
                return fn(*args, **kwargs)
            return _run_over(_team_of_group(name, group), fn, args, kwargs)

        op.__doc__ = (fn.__doc__ or "") + "\n\n    ``group``: the PEs the op runs over (``_team_of_group``)."
        return op
    return wrap


_torch_ops = None  # set at the end of this module when torch has torch.library.custom_op


_warned = set()


def _variant(what, variant, legal, argname="variant"):
    """``variant`` checked against ``legal``, a deprecated name replaced (warned once per name)."""
    new = DEPRECATED_VARIANTS.get(variant) if isinstance(variant, str) else None
    if new in legal:
        if (what, variant) not in _warned:
            _warned.add((what, variant))
            warnings.warn(f"{what}: {argname}={variant!r} is deprecated, use {new!r} (the same algorithm)",
                          DeprecationWarning, stacklevel=3)
        variant = new
    v.check_variant(what, variant, legal, argname=argname)
    return variant


def _check_symmetric_out(what, ash, out):
    if out is None:
        raise KernelArgError(f"{what}: the direct variant writes into the peers' outputs, so out= must be given: "
                             "a symmetric tensor from shmem.aclshmem_create_tensor, the same shape on every rank")
    try:
        ash.check_symmetric(out)
    except Exception as e:  # noqa: BLE001 - re-raised with the op's name
        raise KernelArgError(f"{what}: the direct variant needs out on the symmetric heap: {e}") from None


@_torch_op("reverse_all_to_all")
def reverse_all_to_all(a, variant="pipeline", out=None, buffer_num=2, block_s=None, block_d=None):
    """(S * W, H, D) -> (S, H * W, D): ``out[s, r * H + h] = a_r[me * S + s, h]`` (seed 002).

    ``variant``: "pipeline" (producer/consumer pipeline, per-task signals, ``buffer_num`` buffers;
    formerly "mte"), "bulk" (bulk put per peer + tiled self copy + barrier per S block),
    "wait_notify" (bulk puts per S block with two signal regions, no barrier) or "direct" (one pass
    straight into the peers' outputs: ``out`` must then be a symmetric tensor, e.g. from
    ``shmem.aclshmem_create_tensor``, of the same shape on every rank).
    """
    torch, ash, tdist = RESOURCES.runtime()
    what = "reverse_all_to_all"
    variant = _variant(what, variant, REVERSE_A2A_VARIANTS)
    dt = v.check_tensor(what, "a", a.shape, a.dtype, a.is_cuda, 3)
    v.check_buffer_num(buffer_num)
    W, me = _members()
    S, H, D = v.check_reverse_a2a(tuple(a.shape), W)
    if variant != "pipeline" and not a.is_contiguous():
        a = a.contiguous()  # the bulk variants move whole contiguous segments
    if out is None:
        out = torch.empty((S, H * W, D), dtype=a.dtype, device=a.device)
    elif tuple(out.shape) != (S, H * W, D) or out.dtype != a.dtype:
        raise KernelArgError(f"{what}: out must be {(S, H * W, D)} {a.dtype}, got {tuple(out.shape)} {out.dtype}")
    if variant == "direct":
        _check_symmetric_out(what, ash, out)
    return _a2a.reverse(variant, a, out, S, H, D, W, me, dt, buffer_num, block_s, block_d)


@_torch_op("dispatch_all_to_all")
def dispatch_all_to_all(x, out=None, variant="staged"):
    """(S, H * W, D) -> (S * W, H, D): ``out[r * S + s, h] = x_r[s, me * H + h]`` (inverse of the reverse).

    ``variant``: "staged" (into a symmetric receive buffer, grid barrier, copy out) or "direct" (one
    pass into the peers' outputs; ``out`` must be a symmetric tensor)."""
    torch, ash, tdist = RESOURCES.runtime()
    what = "dispatch_all_to_all"
    dt = v.check_tensor(what, "x", x.shape, x.dtype, x.is_cuda, 3)
    W, me = _members()
    S, H, D = v.check_dispatch_a2a(tuple(x.shape), W)
    if out is None:
        out = torch.empty((S * W, H, D), dtype=x.dtype, device=x.device)
    elif tuple(out.shape) != (S * W, H, D) or out.dtype != x.dtype or not out.is_contiguous():
        raise KernelArgError(f"{what}: out must be a contiguous {(S * W, H, D)} {x.dtype}, got "
                             f"{tuple(out.shape)} {out.dtype}")
    variant = _variant(what, variant, DISPATCH_A2A_VARIANTS)
    if variant == "direct":
        _check_symmetric_out(what, ash, out)
    return _a2a.dispatch(variant, x, out, S, H, D, W, me, dt)


# all_reduce(variant="auto"): LL packets up to this many bytes, two_shot above. On 2 and 4 GPUs the
# LL form was the fastest variant up to 1 MiB (30.6 us against 54-56 us for the others on 4 GPUs;
# 13.0 against 34-41 us on 2) and two_shot at 64 MiB (benchmarks/NOTES.md, "GPU, fourth round").
AUTO_LL_MAX_BYTES = 1 << 20


def _auto_allreduce(nbytes):
    return "one_shot_ll" if nbytes <= AUTO_LL_MAX_BYTES else "two_shot"


@_torch_op("all_reduce")
def all_reduce(x, variant="auto", out=None):
    """Sum of ``x`` over all ranks (any shape; reduced as a flat array). Bitwise equal on every rank.

    ``variant``: "one_shot", "two_shot", "ring" (seed 003's protocol: signal reset and two stream
    barriers around each launch), "one_shot_ll" (one launch of LL packets: every 4 bytes travel
    with the epoch in one 8-byte store, so there is no barrier, fence or reset; the small-message
    latency form; its buffer holds 4 x W times the bytes of ``x``), or "auto" (default): one_shot_ll
    up to ``AUTO_LL_MAX_BYTES``, two_shot above."""
    if out is None:
        # the eager fast path: a call like an earlier one (shape, dtype, device, variant, an aligned
        # contiguous x) reuses that call's checked plan (all_reduce.LLPlan); anything else, a bad
        # argument included, takes the checked path below
        try:
            plan = RESOURCES.plans.get(("all_reduce", x.shape, x.dtype, x.get_device(), variant,
                                         RESOURCES.team_key()))
            if plan is not None and not (x.is_contiguous() and not x.data_ptr() % 16):
                plan = None
        except (AttributeError, TypeError):
            plan = None
        if plan is not None:
            return plan(x)
    torch, ash, tdist = RESOURCES.runtime()
    what = "all_reduce"
    given = variant
    variant = _variant(what, variant, ALLREDUCE_VARIANTS + ("auto",))
    if x.dim() == 0:
        raise KernelArgError(f"{what}: x must have at least one dimension")
    dt = v.check_tensor(what, "x", x.shape, x.dtype, x.is_cuda, x.dim())
    xf = x.contiguous().view(-1)
    N = xf.numel()
    W, me = _members()
    plannable = out is None and x.is_contiguous() and not x.data_ptr() % 16
    if out is None:
        out = torch.empty_like(xf)
    elif out.numel() != N or out.dtype != x.dtype or not out.is_contiguous():
        raise KernelArgError(f"{what}: out must be a contiguous tensor of {N} {x.dtype}, got {tuple(out.shape)} "
                             f"{out.dtype}")
    nbytes = N * xf.element_size()
    chosen = _auto_allreduce(nbytes) if variant == "auto" else variant
    y = _ar.run(chosen, xf, out, W, me, dt).view(x.shape)
    if plannable and chosen == "one_shot_ll" and not nbytes % 4:
        RESOURCES.plans[("all_reduce", x.shape, x.dtype, x.get_device(), given, RESOURCES.team_key())] = \
            _ar.ll_plan(nbytes // 4, W, me, dt, RESOURCES.sm_budget(), (True, True))
    return y


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


@_torch_op("ag_gemm")
def ag_gemm(a, b, out=None, impl="auto", chunk_m=None, gemm_streams=1):
    """``all_gather(a) @ b``: a (M, K) per rank, b (K, N) -> (W * M, N), AG overlapped with the GEMM.

    The gather runs on the copy engine (``shmem.putmem_on_stream`` + ``signal_op_on_stream`` on a
    side stream). ``impl="cublas"``: the own rows are multiplied at once (cuBLAS), each peer's rows
    as soon as a stream wait sees their signal, peers in the order their data arrives;
    ``gemm_streams=2`` issues those GEMMs alternately on two streams (``_gemm.GemmStreams``).
    ``impl="cublas_whole"``: one cuBLAS GEMM over all ``W * M`` rows: with ranks sharing a GPU a
    batched GEMM that reads every rank's rows in place (``shmem.peer_stack``), otherwise after the
    gather completes. ``impl="auto"`` (default) picks by placement (``_auto_overlap``).
    ``impl="triton"``: one Triton GEMM whose tiles of other ranks' rows wait for the signals of
    their chunks (``chunk_m`` rows) -- seed 003's per-tile form; its tile loop runs near cuBLAS,
    the gather copy and the waits cost on top (benchmarks/NOTES.md)."""
    torch, ash, tdist = RESOURCES.runtime()
    what = "ag_gemm"
    dt = _check_gemm_operands(what, a, b)
    a = a.contiguous()
    if a.data_ptr() % 16:
        # ag_gemm_kernel addresses the own rows from the gather buffer and assumes both 16-byte
        # aligned (vector loads); an offset view is copied once rather than read wrongly
        a = a.clone()
    M, K = a.shape
    N = b.shape[1]
    W, me = _members()
    if out is None:
        out = torch.empty((W * M, N), dtype=a.dtype, device=a.device)
    elif tuple(out.shape) != (W * M, N) or out.dtype != a.dtype:
        raise KernelArgError(f"{what}: out must be {(W * M, N)} {a.dtype}, got {tuple(out.shape)} {out.dtype}")
    impl = _variant(what, impl, AG_GEMM_IMPLS, argname="impl")
    _check_gemm_streams(what, gemm_streams)
    if impl == "auto":
        impl, gemm_streams = _auto_overlap(what)
    if impl == "cublas_whole" and shared_gpu():
        return _ag.run_in_place(a, b, out, W, dt)
    if impl in ("cublas", "cublas_whole"):
        return _ag.run_cublas(a, b, out, W, me, dt, gemm_streams, impl == "cublas_whole")
    _refuse_capture(torch, what)
    return _ag.run_triton(a, b, out, W, me, dt, chunk_m)


@_torch_op("gemm_rs")
def gemm_rs(a, b, out=None, impl="auto", gemm_streams=1):
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
    stores each fp32 partial tile of another owner into that owner's buffer and signals it, and sums
    each of its own tiles once the peers' partials of it are in (seed 003's per-tile form, the
    reduction in the owner's epilogue)."""
    torch, ash, tdist = RESOURCES.runtime()
    what = "gemm_rs"
    dt = _check_gemm_operands(what, a, b)
    W, me = _members()
    v.check_gemm_rs(a.shape, W)
    M, K = a.shape
    N = b.shape[1]
    if out is None:
        out = torch.empty((M // W, N), dtype=a.dtype, device=a.device)
    elif tuple(out.shape) != (M // W, N) or out.dtype != a.dtype:
        raise KernelArgError(f"{what}: out must be {(M // W, N)} {a.dtype}, got {tuple(out.shape)} {out.dtype}")
    impl = _variant(what, impl, GEMM_RS_IMPLS, argname="impl")
    _check_gemm_streams(what, gemm_streams)
    if impl == "auto":
        impl, gemm_streams = _auto_overlap(what)
    if impl == "cublas_whole":
        return _rs.run_whole(a, b, out, W, me, dt)
    if impl in ("cublas", "cublas_ce"):
        return _rs.run_cublas(a, b, out, W, me, dt, gemm_streams, impl == "cublas_ce")
    _refuse_capture(torch, what)
    return _rs.run_triton(a, b, out, W, me, dt)


# ---------------------------------------------------------------------------------------------
# expert-parallel MoE (docs/MOE.md; kernels and buffer in moe.py)

MOE_MODES = ("high_throughput", "low_latency")


def moe_dispatch(x, topk_idx, topk_weights, num_experts, max_tokens, mode="high_throughput", check=True,
                 dtype=None, group=None, **buffer_options):
    """Route tokens to the ranks holding their top-k experts (each token once per destination rank),
    returning ``(recv_x, counts, handle)``: the received rows grouped by local expert, the rows per
    local expert (int32, device), and the handle for ``moe_combine``. ``x`` (T, H), ``topk_idx``
    (T, K) (-1: empty slot), ``topk_weights`` (T, K); ``max_tokens`` bounds T on every rank (the
    same on all). ``buffer_options``: ``max_recv_rows``, ``chunk_tokens``, ``buffer_num``, ``slices``
    (docs/MOE.md section 2), ``fp8`` (section 1, "fp8 dispatch": ``recv_x`` is then ``(codes, scales)``,
    and ``x`` may be too). ``dtype``: the payload dtype of the buffer (combine's), by default x's, or
    bfloat16 for an fp8 ``(codes, scales)`` x. ``check=False``: no host synchronisation; ``handle.status``
    carries the verdict on bad input. ``group``: the PEs the experts are spread over (``_team_of_group``;
    the buffer, and so the handle's combine, belong to that team)."""
    if group is not None:
        return _run_over(_team_of_group("moe_dispatch", group), moe_dispatch,
                         (x, topk_idx, topk_weights, num_experts, max_tokens, mode, check, dtype), buffer_options)
    from . import moe as _moe
    if mode not in MOE_MODES:
        raise KernelArgError(f"moe_dispatch: mode must be one of {MOE_MODES}, got {mode!r}")
    quantized = isinstance(x, (tuple, list))
    if quantized and not buffer_options.get("fp8"):
        raise KernelArgError("moe_dispatch: x = (codes, scales) is an fp8 input: pass fp8=True")
    x0 = x[0] if quantized and len(x) == 2 else x
    if not hasattr(x0, "dim") or x0.dim() != 2 or topk_idx.dim() != 2:
        raise KernelArgError(f"moe_dispatch: x (T, H) and topk_idx (T, K) expected, got "
                             f"{tuple(getattr(x0, 'shape', ()))} and {tuple(topk_idx.shape)}")
    if dtype is None:
        dtype = _torch.bfloat16 if quantized else x.dtype
    buf = _moe.buffer_for(num_experts, x0.shape[1], topk_idx.shape[1], max_tokens, dtype, mode, **buffer_options)
    return buf.dispatch(x, topk_idx, topk_weights, check=check)


def moe_combine(y, handle):
    """The weighted sum of the experts' outputs ``y`` (the layout of ``moe_dispatch``'s output) back at
    each token's home rank: ``out[t] = sum_k w[t, k] * y[row(t, k)]`` (T, H)."""
    return handle.buf.combine(y, handle)


if _torch is not None and hasattr(_torch, "library") and hasattr(_torch.library, "custom_op"):
    from . import _torch_ops  # noqa: E402,F811  (registers the tdist:: custom ops)
