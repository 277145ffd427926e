"""The MoE autograd Functions of tdist_kernels.layers (dispatch's and combine's backward, and the
routing weights' gradient, ``layers.weight_grad``) against torch autograd of the same arithmetic,
on one CPU rank: ``OneRankMoe`` stands in for ``MoeBuffer`` with its high-throughput layout (groups
packed from row 0, rows past them garbage: NaN here, so none may leak) and its handle
(``MoeHandle``: ``h_rows`` names each pair's row, ``h_w`` its weight). The GPU worker
(tests/gpu_kernels/moe_gpu_worker.py) runs the same checks through the real kernels."""
import pytest

torch = pytest.importorskip("torch")

from tdist_kernels import layers  # noqa: E402
from tdist_kernels._common import KernelArgError  # noqa: E402
from tdist_kernels.moe import MoeHandle  # noqa: E402


class OneRankMoe:
    """A one-rank MoE buffer in torch: every expert is local (L = E)."""

    def __init__(self, num_experts, hidden, topk, max_tokens, dtype):
        self.torch, self.num_experts, self.hidden, self.topk = torch, num_experts, hidden, topk
        self.max_tokens, self.dtype = max_tokens, dtype
        self.recv_rows = max_tokens * topk + 5  # room past the groups
        self.calls = []

    def dispatch(self, x, topk_idx, topk_weights):
        self.calls.append("dispatch")
        T, K = topk_idx.shape
        idx = topk_idx.to(torch.int32)
        w = topk_weights.to(torch.float32)
        recv = torch.full((self.recv_rows, self.hidden), float("nan"), dtype=self.dtype)
        h_rows = torch.full((self.max_tokens, K), -1, dtype=torch.int32)
        counts = torch.zeros(self.num_experts, dtype=torch.int32)
        row = 0
        for e in range(self.num_experts):  # group e: its pairs in token order
            for t in range(T):
                for k in range(K):
                    if int(idx[t, k]) == e:
                        recv[row] = x[t]
                        h_rows[t, k] = row
                        counts[e] += 1
                        row += 1
        h_w = torch.zeros((self.max_tokens, K), dtype=torch.float32)
        h_w[:T] = w
        h = MoeHandle(self, T, idx, w, torch.zeros(8, dtype=torch.int32), h_rows=h_rows, h_w=h_w)
        return recv, counts, h

    def combine(self, y, handle, unit_weights=False):
        self.calls.append("combine")
        T, K = handle.num_tokens, self.topk
        out = torch.zeros((T, self.hidden), dtype=torch.float64)  # the kernels sum in fp32; float64 here
        for t in range(T):
            for k in range(K):
                r = int(handle.h_rows[t, k])
                if r >= 0:
                    out[t] += (1.0 if unit_weights else float(handle.h_w[t, k])) * y[r].double()
        return out.to(self.dtype)


def _case(seed, E=6, H=16, K=3, T=7):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, H, generator=g, dtype=torch.float64)
    idx = torch.stack([torch.randperm(E, generator=g)[:K] for _ in range(T)])
    idx[2, 1] = -1  # an empty slot: no term and no gradient
    w = torch.rand(T, K, generator=g).double()  # float32 values: the handle keeps the weights in float32
    go = torch.randn(T, H, generator=g, dtype=torch.float64)
    return x, idx, w, go


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_gradients_match_torch_autograd(seed):
    """Expert e maps a row v to (e + 1) * v * v (elementwise): out[t] = sum_k w[t, k] (e + 1) x[t]^2.
    The gradients of x and of the weights through dispatch / experts / combine equal torch autograd
    of that expression, and the empty slot's weight gets 0."""
    E, H, K, T = 6, 16, 3, 7
    x, idx, w, go = _case(seed, E, H, K, T)
    buf = OneRankMoe(E, H, K, T, torch.float64)
    xa, wa = x.clone().requires_grad_(), w.clone().requires_grad_()
    recv, counts, h = layers.moe_dispatch(xa, idx, wa, buf)
    scale = torch.repeat_interleave(torch.arange(E, dtype=torch.float64) + 1, counts.long())
    scale = torch.cat([scale, scale.new_zeros(recv.shape[0] - scale.shape[0])])[:, None]
    out = layers.moe_combine(recv * recv * scale, h)
    out.backward(go)

    xb, wb = x.clone().requires_grad_(), w.clone().requires_grad_()
    f = torch.where(idx >= 0, idx + 1, 0).to(torch.float64)
    ref = ((torch.where(idx >= 0, 1.0, 0.0) * wb * f).sum(1, keepdim=True)) * xb * xb
    ref.backward(go)
    assert torch.allclose(out.detach(), ref.detach(), rtol=1e-12, atol=1e-12)
    assert torch.allclose(xa.grad, xb.grad, rtol=1e-12, atol=1e-12), (xa.grad - xb.grad).abs().max()
    assert torch.allclose(wa.grad, wb.grad, rtol=1e-12, atol=1e-12), (wa.grad - wb.grad).abs().max()
    assert float(wa.grad[2, 1]) == 0.0
    # forward: dispatch, combine; backward: dispatch (y's gradient), combine (the weights'),
    # combine (x's gradient, dispatch's backward)
    assert buf.calls == ["dispatch", "combine", "dispatch", "combine", "combine"], buf.calls


def test_no_weight_gradient_no_extra_combine():
    """Weights that need no gradient cost nothing more: combine's backward is one dispatch."""
    E, H, K, T = 6, 16, 3, 7
    x, idx, w, go = _case(4, E, H, K, T)
    buf = OneRankMoe(E, H, K, T, torch.float64)
    xa = x.clone().requires_grad_()
    recv, counts, h = layers.moe_dispatch(xa, idx, w, buf)
    layers.moe_combine(recv * 2.0, h).backward(go)
    want = go * 2.0 * torch.where(idx >= 0, w, 0.0).sum(1, keepdim=True)
    assert torch.allclose(xa.grad, want, rtol=1e-12, atol=1e-12)
    assert buf.calls == ["dispatch", "combine", "dispatch", "combine"], buf.calls


def test_weight_gradient_needs_topk_within_hidden():
    """The weights' gradient travels in columns k of hidden-wide rows: topk > hidden is named."""
    E, H, K, T = 6, 2, 3, 4
    g = torch.Generator().manual_seed(5)
    x = torch.randn(T, H, generator=g, dtype=torch.float64)
    idx = torch.stack([torch.randperm(E, generator=g)[:K] for _ in range(T)])
    w = torch.rand(T, K, generator=g, dtype=torch.float64).requires_grad_()
    buf = OneRankMoe(E, H, K, T, torch.float64)
    recv, counts, h = layers.moe_dispatch(x, idx, w, buf)
    out = layers.moe_combine(recv * 1.0, h)
    with pytest.raises(KernelArgError, match=r"topk \(3\) <= hidden \(2\)"):
        out.sum().backward()
