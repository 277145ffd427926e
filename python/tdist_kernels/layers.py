"""torch layers over the tdist kernels: ``EPMoE``, an expert-parallel MoE block (docs/MOE.md).

    import shmem as ash, tdist
    from tdist_kernels.layers import EPMoE
    ash.init_from_env(local_mem_size=4 << 30, backend=tdist.BACKEND_CUDA)
    moe = EPMoE(num_experts=16, hidden=2048, ffn_hidden=4096, topk=2, max_tokens=4096).cuda()
    y = moe(x)          # router -> dispatch -> local experts -> combine; differentiable

Every call is collective (all ranks call with their own tokens, the same configuration). The
router is replicated (data parallel); each rank holds the experts ``[rank * L, (rank + 1) * L)``.
Backward: dispatch's backward is a combine with unit weights, combine's backward a dispatch whose
rows are scaled by their pairs' weights, plus one more combine that brings the routing weights'
gradient home (docs/MOE.md section 1): the router is trained through the weights, and the caller
may add an auxiliary loss on ``EPMoE.last_router_probs``.
"""
from ._common import KernelArgError


def _torch():
    import torch
    return torch


def _make_functions():
    torch = _torch()

    class MoeDispatch(torch.autograd.Function):
        """(x, topk_idx, topk_weights) -> (recv_x, counts); backward: combine with unit weights."""

        @staticmethod
        def forward(ctx, x, topk_idx, topk_weights, buf, holder):
            recv_x, counts, handle = buf.dispatch(x, topk_idx, topk_weights)
            holder.append(handle)
            ctx.buf, ctx.handle = buf, handle
            ctx.mark_non_differentiable(counts)
            return recv_x, counts

        @staticmethod
        def backward(ctx, grad_recv, grad_counts):
            g = ctx.buf.combine(grad_recv.contiguous().to(ctx.buf.dtype), ctx.handle, unit_weights=True)
            return g, None, None, None, None

    class MoeCombine(torch.autograd.Function):
        """(y, topk_weights, handle) -> out; backward: the output gradient dispatched again, rows
        scaled by their pairs' weights (y's gradient), and the routing weights' gradient
        ``<grad_out[t], y[row(t, k)]>``, brought home by one more combine (``weight_grad``).
        ``topk_weights`` is the tensor the dispatch was given: the forward reads the handle's copy."""

        @staticmethod
        def forward(ctx, y, topk_weights, buf, handle):
            ctx.buf, ctx.handle = buf, handle
            ctx.save_for_backward(y)
            ctx.weights_dtype = topk_weights.dtype
            return buf.combine(y, handle)

        @staticmethod
        def backward(ctx, grad_out):
            h = ctx.handle
            y, = ctx.saved_tensors
            g, _, _ = ctx.buf.dispatch(grad_out.contiguous().to(ctx.buf.dtype), h.topk_idx, h.topk_weights)
            gw = weight_grad(ctx.buf, h, g, y).to(ctx.weights_dtype) if ctx.needs_input_grad[1] else None
            rw = h.row_weights().to(g.dtype)
            return g * rw.reshape(g.shape[:-1]).unsqueeze(-1), gw, None, None

    return MoeDispatch, MoeCombine


_FUNCTIONS = []


def functions():
    """(MoeDispatch, MoeCombine): the autograd Functions (made on first use: importing this module
    does not need torch)."""
    if not _FUNCTIONS:
        _FUNCTIONS.extend(_make_functions())
    return tuple(_FUNCTIONS)


def _no_fp8(buf):
    if getattr(buf, "fp8", False):
        raise KernelArgError("layers: an fp8 dispatch has no gradient (the quantization has none), and combine's "
                             "backward would quantize the gradient: use a buffer without fp8")


def moe_dispatch(x, topk_idx, topk_weights, buf):
    """Differentiable dispatch: returns (recv_x, counts, handle). The handle keeps ``topk_weights``
    (the caller's tensor) so that ``moe_combine`` gives it its gradient."""
    _no_fp8(buf)
    holder = []
    recv_x, counts = functions()[0].apply(x, topk_idx, topk_weights, buf, holder)
    holder[0].weights_in = topk_weights
    return recv_x, counts, holder[0]


def moe_combine(y, handle):
    """Differentiable combine: gradients for ``y`` and for the routing weights given to
    ``moe_dispatch`` (where they require one)."""
    _no_fp8(handle.buf)
    return functions()[1].apply(y, handle.weights_in, handle.buf, handle)


def weight_grad(buf, handle, g, y):
    """(T, K), at least float32: ``<g[row(t, k)], y[row(t, k)]>`` for every pair of this rank's tokens, 0 for
    an empty slot; ``g`` is the output gradient as dispatch delivered it (the layout of ``y``). The
    expert rank computes each row's product (at least fp32) and writes it into column k of an otherwise
    zero row (a received row belongs to one pair, and ``h_rows`` names its column k); a combine with
    unit weights brings the rows home, where column k of token t holds its pair's product alone,
    rounded once to the buffer's dtype. The cost is one more combine of ``hidden``-wide rows."""
    torch = _torch()
    K, H = buf.topk, buf.hidden
    if K > H:
        raise KernelArgError(f"moe_combine backward: the routing weights' gradient needs topk ({K}) <= hidden ({H})")
    acc = torch.promote_types(y.dtype, torch.float32)  # at least fp32
    d = (g.to(acc) * y.to(acc)).sum(-1).reshape(-1)  # one product per received row (garbage past the groups)
    rows, ok = handle.pair_rows()
    ks = torch.arange(K, device=rows.device).repeat(handle.h_rows.shape[0])  # the k of each pair slot
    z = torch.zeros(y.shape, dtype=buf.dtype, device=y.device)
    # slots without a row add 0 (no boolean indexing: no host synchronisation)
    z.view(-1, H).index_put_((rows, ks), torch.where(ok, d[rows], 0.0).to(buf.dtype), accumulate=True)
    out = buf.combine(z, handle, unit_weights=True)  # (T, H): column k of row t is pair (t, k)'s product
    return torch.where(handle.topk_idx[:handle.num_tokens] >= 0, out[:, :K].to(acc), 0.0)


def grouped_mlp(recv_x, counts, w1, w2, layout, act=None):
    """The local experts: ``act(x @ w1[j]) @ w2[j]`` on group j's rows. ``layout``:
    "packed" (high throughput: groups from row 0, one host read of ``counts``) or "padded" (low
    latency: ``(L, rows, H)``, a batched matmul over every row, no host sync; rows past the counts
    hold garbage and are never read by combine)."""
    torch = _torch()
    act = act or torch.nn.functional.silu
    if layout == "padded":
        return torch.bmm(act(torch.bmm(recv_x, w1)), w2)
    out = torch.zeros_like(recv_x)
    start = 0
    for j, n in enumerate(counts.tolist()):
        if n:
            rows = recv_x[start:start + n]
            out[start:start + n] = act(rows @ w1[j]) @ w2[j]
        start += n
    return out


def _make_epmoe():
    torch = _torch()

    class EPMoE(torch.nn.Module):
        """Router (softmax, top-k, renormalised) -> dispatch -> local experts (two-layer MLP, SiLU)
        -> combine. ``mode``: "high_throughput" or "low_latency" (see docs/MOE.md). ``group``: the
        expert-parallel group (``ops.moe_dispatch``'s ``group=``), by default tdist's world."""

        def __init__(self, num_experts, hidden, ffn_hidden, topk, max_tokens, mode="high_throughput",
                     dtype=None, max_recv_rows=None, device=None, group=None):
            super().__init__()
            from . import ops
            from ._resources import RESOURCES
            from .moe import MoeBuffer
            dtype = dtype or torch.bfloat16
            team = ops._team_of_group("EPMoE", group) if group is not None else None
            prev = RESOURCES.enter(team)
            try:
                sc = RESOURCES.scope()
                W, me = sc.size, sc.rank
                self._init(num_experts, hidden, ffn_hidden, topk, max_tokens, mode, dtype, max_recv_rows, device,
                           W, me, MoeBuffer)
            finally:
                RESOURCES.leave(prev)

        def _init(self, num_experts, hidden, ffn_hidden, topk, max_tokens, mode, dtype, max_recv_rows, device, W, me,
                  MoeBuffer):
            if num_experts % W:
                raise KernelArgError(f"EPMoE: num_experts ({num_experts}) must be a multiple of the rank count ({W})")
            L = num_experts // W
            self.num_experts, self.topk, self.mode, self.rank, self.L = num_experts, topk, mode, me, L
            self.router = torch.nn.Parameter(torch.randn(hidden, num_experts, dtype=torch.float32, device=device) /
                                             hidden ** 0.5)
            self.w1 = torch.nn.Parameter(torch.randn(L, hidden, ffn_hidden, dtype=dtype, device=device) / hidden ** 0.5)
            self.w2 = torch.nn.Parameter(torch.randn(L, ffn_hidden, hidden, dtype=dtype, device=device) /
                                         ffn_hidden ** 0.5)
            self.buf = MoeBuffer(num_experts, hidden, topk, max_tokens, dtype, mode=mode, max_recv_rows=max_recv_rows)
            self.last_router_probs = None

        def route(self, x):
            probs = torch.softmax(x.float() @ self.router, dim=-1)
            self.last_router_probs = probs
            w, idx = torch.topk(probs, self.topk, dim=-1)
            return idx, w / w.sum(dim=-1, keepdim=True)

        def forward(self, x, topk_idx=None, topk_weights=None):
            if topk_idx is None:
                topk_idx, topk_weights = self.route(x)
            x = x.to(self.buf.dtype)
            recv_x, counts, handle = moe_dispatch(x, topk_idx, topk_weights, self.buf)
            layout = "padded" if self.mode == "low_latency" else "packed"
            y = grouped_mlp(recv_x, counts, self.w1, self.w2, layout)
            return moe_combine(y.to(self.buf.dtype), handle)

    return EPMoE


def __getattr__(name):
    """``EPMoE`` is made on first access (a torch.nn.Module subclass: importing needs torch)."""
    if name == "EPMoE":
        cls = _make_epmoe()
        globals()["EPMoE"] = cls
        return cls
    raise AttributeError(name)
