"""tdist's ops as ``torch.library`` custom ops (namespace ``tdist``), so that ``torch.compile`` traces
them as single graph nodes (no graph break) and autograd differentiates them.

``ops.*`` route here while ``torch.compile`` traces (``torch.compiler.is_compiling()``) and, for the
differentiable ops, when an input needs a gradient; every other eager call goes straight to the
op's own path. Each custom op's implementation is that same eager path (``ops._impl``), and its
fake implementation gives the output's shape, dtype and device from the inputs and the size of the
team the op runs over, which the ops that need it take as an argument (``world``: a constant of the
traced graph, so part of every compile cache's key; a graph traced for another size is refused when
it runs). Every custom op takes the runtime handle of its team (``team``: 0 is tdist's world, else
the team of the op's ``group=``), also a constant of the graph.

=============================================  ====================================================
custom op                                       eager op
=============================================  ====================================================
``tdist::all_reduce(x, team, variant)``          ``ops.all_reduce(x, variant)``
``tdist::all_reduce_out(x, out!, team, ...)``    ``ops.all_reduce(x, variant, out=out)``
``tdist::reverse_all_to_all(a, team, world, ..)`` ``ops.reverse_all_to_all`` (and ``_out``)
``tdist::dispatch_all_to_all(x, team, world..)`` ``ops.dispatch_all_to_all`` (and ``_out``)
``tdist::ag_gemm(a, b, team, world, impl, ...)`` ``ops.ag_gemm``
``tdist::gemm_rs(a, b, team, world, impl, ...)`` ``ops.gemm_rs``
=============================================  ====================================================

Gradients: the all-reduce's is the all-reduce of the output's gradient; the reverse all-to-all and
the dispatch all-to-all are inverse permutations across ranks, so each one's gradient is the other
applied to the output's gradient. The GEMM forms and the ``_out`` forms have none (autograd raises
when one is asked of them). The MoE ops keep a Python handle between dispatch and combine and are
not registered (README, "Using it").
"""
from typing import Optional

import torch

import tdist

from . import ops

_lib_ops = []


def _def(name, fn, fake, mutates=()):
    op = torch.library.custom_op(f"tdist::{name}", fn, mutates_args=mutates)
    op.register_fake(fake)
    _lib_ops.append(op)
    return op


# -- all_reduce ---------------------------------------------------------------------------------


def _over(what, team, **kwargs):
    """The eager op ``what`` over the team of handle ``team`` (``ops._run_over``)."""
    return ops._run_over(ops._team_by_handle(what, team), ops._impl(what), (), kwargs)


def _all_reduce(x: torch.Tensor, team: int, variant: str) -> torch.Tensor:
    return _over("all_reduce", team, x=x, variant=variant)


def _all_reduce_out(x: torch.Tensor, out: torch.Tensor, team: int, variant: str) -> None:
    _over("all_reduce", team, x=x, variant=variant, out=out)


all_reduce = _def("all_reduce", _all_reduce,
                  lambda x, team, variant: torch.empty_like(x, memory_format=torch.contiguous_format))
all_reduce_out = _def("all_reduce_out", _all_reduce_out, lambda x, out, team, variant: None, mutates=("out",))


def _all_reduce_backward(ctx, grad):
    return all_reduce(grad.contiguous(), ctx.team, ctx.variant), None, None


def _all_reduce_setup(ctx, inputs, output):
    ctx.team, ctx.variant = inputs[1], inputs[2]


all_reduce.register_autograd(_all_reduce_backward, setup_context=_all_reduce_setup)


# -- all-to-alls --------------------------------------------------------------------------------


def _reverse_shape(a, W):
    S, H, D = a.shape[0] // W, a.shape[1], a.shape[2]
    return S, H * W, D


def _dispatch_shape(x, W):
    S, HW, D = x.shape
    return S * W, HW // W, D


def _same_world(what, team, world):
    """The ops whose output shape depends on the team's size take it as an argument (``world``), so
    that it is a constant of the traced graph and part of every compile cache's key; a graph traced
    in a job or team of another size is refused here instead of running with the wrong shapes."""
    t = ops._team_by_handle(what, team)
    n = tdist.n_pes() if t is None else t.size
    if world != n:
        raise ops.KernelArgError(f"{what}: this graph was traced for {world} PEs; its team has {n}")


def _world(team):
    """The size of the team of handle ``team`` (0: tdist's world)."""
    import shmem
    if not shmem._world_size:
        raise ops.KernelArgError("tdist_kernels under torch.compile: tdist is not initialised through shmem "
                                 "(shmem.init_from_env / init_from_torch / aclshmem_init)")
    t = ops._team_by_handle("tdist_kernels", team)
    return shmem._world_size if t is None else t.size


def _reverse(a: torch.Tensor, team: int, world: int, variant: str, buffer_num: int, block_s: Optional[int],
             block_d: Optional[int]) -> torch.Tensor:
    _same_world("reverse_all_to_all", team, world)
    return _over("reverse_all_to_all", team, a=a, variant=variant, buffer_num=buffer_num, block_s=block_s,
                 block_d=block_d)


def _reverse_out(a: torch.Tensor, out: torch.Tensor, team: int, world: int, variant: str, buffer_num: int,
                 block_s: Optional[int], block_d: Optional[int]) -> None:
    _same_world("reverse_all_to_all", team, world)
    _over("reverse_all_to_all", team, a=a, variant=variant, out=out, buffer_num=buffer_num, block_s=block_s,
          block_d=block_d)


def _dispatch(x: torch.Tensor, team: int, world: int, variant: str) -> torch.Tensor:
    _same_world("dispatch_all_to_all", team, world)
    return _over("dispatch_all_to_all", team, x=x, variant=variant)


def _dispatch_out(x: torch.Tensor, out: torch.Tensor, team: int, world: int, variant: str) -> None:
    _same_world("dispatch_all_to_all", team, world)
    _over("dispatch_all_to_all", team, x=x, out=out, variant=variant)


reverse_all_to_all = _def("reverse_all_to_all", _reverse,
                          lambda a, team, world, variant, buffer_num, block_s, block_d:
                          a.new_empty(_reverse_shape(a, world)))
reverse_all_to_all_out = _def("reverse_all_to_all_out", _reverse_out,
                              lambda a, out, team, world, variant, buffer_num, block_s, block_d: None,
                              mutates=("out",))
dispatch_all_to_all = _def("dispatch_all_to_all", _dispatch,
                           lambda x, team, world, variant: x.new_empty(_dispatch_shape(x, world)))
dispatch_all_to_all_out = _def("dispatch_all_to_all_out", _dispatch_out, lambda x, out, team, world, variant: None,
                               mutates=("out",))


def _reverse_backward(ctx, grad):
    # dispatch is reverse's inverse permutation, so its adjoint
    return dispatch_all_to_all(grad.contiguous(), ctx.team, ctx.world, "staged"), None, None, None, None, None, None


def _reverse_setup(ctx, inputs, output):
    ctx.team, ctx.world = inputs[1], inputs[2]


def _dispatch_backward(ctx, grad):
    return (reverse_all_to_all(grad.contiguous(), ctx.team, ctx.world, "pipeline", 2, None, None),
            None, None, None)


reverse_all_to_all.register_autograd(_reverse_backward, setup_context=_reverse_setup)
dispatch_all_to_all.register_autograd(_dispatch_backward, setup_context=_reverse_setup)


# -- overlap GEMMs ------------------------------------------------------------------------------


def _ag_gemm(a: torch.Tensor, b: torch.Tensor, team: int, world: int, impl: str, chunk_m: Optional[int],
             gemm_streams: int) -> torch.Tensor:
    _same_world("ag_gemm", team, world)
    return _over("ag_gemm", team, a=a, b=b, impl=impl, chunk_m=chunk_m, gemm_streams=gemm_streams)


def _gemm_rs(a: torch.Tensor, b: torch.Tensor, team: int, world: int, impl: str, gemm_streams: int) -> torch.Tensor:
    _same_world("gemm_rs", team, world)
    return _over("gemm_rs", team, a=a, b=b, impl=impl, gemm_streams=gemm_streams)


ag_gemm = _def("ag_gemm", _ag_gemm,
               lambda a, b, team, world, impl, chunk_m, gemm_streams: a.new_empty((world * a.shape[0], b.shape[1])))
gemm_rs = _def("gemm_rs", _gemm_rs,
               lambda a, b, team, world, impl, gemm_streams: a.new_empty((a.shape[0] // world, b.shape[1])))


# -- the calls ops.* make -----------------------------------------------------------------------
# Same signatures as the ops, with the team's handle (``ops._team_handle`` of the op's group=) in
# place of group=; out= selects the mutating form.


def call_all_reduce(x, variant="auto", out=None, team=0):
    if out is None:
        return all_reduce(x, team, variant)
    all_reduce_out(x, out, team, variant)
    return out


def call_reverse_all_to_all(a, variant="pipeline", out=None, buffer_num=2, block_s=None, block_d=None, team=0):
    if out is None:
        return reverse_all_to_all(a, team, _world(team), variant, buffer_num, block_s, block_d)
    reverse_all_to_all_out(a, out, team, _world(team), variant, buffer_num, block_s, block_d)
    return out


def call_dispatch_all_to_all(x, out=None, variant="staged", team=0):
    if out is None:
        return dispatch_all_to_all(x, team, _world(team), variant)
    dispatch_all_to_all_out(x, out, team, _world(team), variant)
    return out


def call_ag_gemm(a, b, out=None, impl="auto", chunk_m=None, gemm_streams=1, team=0):
    if out is not None:
        raise ops.KernelArgError("ag_gemm: out= is not available under torch.compile or autograd; use the result")
    return ag_gemm(a, b, team, _world(team), impl, chunk_m, gemm_streams)


def call_gemm_rs(a, b, out=None, impl="auto", gemm_streams=1, team=0):
    if out is not None:
        raise ops.KernelArgError("gemm_rs: out= is not available under torch.compile or autograd; use the result")
    return gemm_rs(a, b, team, _world(team), impl, gemm_streams)


CALLS = {"all_reduce": call_all_reduce, "reverse_all_to_all": call_reverse_all_to_all,
         "dispatch_all_to_all": call_dispatch_all_to_all, "ag_gemm": call_ag_gemm, "gemm_rs": call_gemm_rs}
