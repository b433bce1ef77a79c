"""ListNet (docs/spec.md §2) against a numpy loop, autograd, finite differences; masking and stability."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fairltr.losses import listnet_loss, masked_log_softmax, top_one_probability


def _random_batch(q=5, n=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(q, n, generator=g, dtype=torch.float64) * 2
    judg = torch.randint(0, 5, (q, n), generator=g).to(torch.float64)
    sizes = torch.randint(1, n + 1, (q,), generator=g)
    sizes[0] = n
    mask = torch.arange(n) < sizes[:, None]
    return scores, judg, mask


def _listnet_loop(scores: np.ndarray, judg: np.ndarray, mask: np.ndarray) -> np.ndarray:
    out = []
    for s, y, m in zip(scores, judg, mask):
        s, y = s[m], y[m]
        py = np.exp(y - y.max()) / np.exp(y - y.max()).sum()
        log_ps = s - (s.max() + np.log(np.exp(s - s.max()).sum()))
        out.append(-(py * log_ps).sum())
    return np.array(out)


def test_listnet_matches_numpy_loop():
    s, y, m = _random_batch()
    got = listnet_loss(s, y, m).numpy()
    want = _listnet_loop(s.numpy(), y.numpy(), m.numpy())
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_listnet_gradient_is_p_s_minus_p_y():
    """dL_q/ds_i = P_s(i) - P_y(i) (the softmax cross-entropy identity), 0 on padding."""
    s, y, m = _random_batch(seed=1)
    s.requires_grad_(True)
    listnet_loss(s, y, m).sum().backward()
    want = (top_one_probability(s.detach(), m) - top_one_probability(y, m)).masked_fill(~m, 0.0)
    torch.testing.assert_close(s.grad, want, rtol=1e-12, atol=1e-15)


def test_listnet_finite_differences():
    s, y, m = _random_batch(q=3, n=5, seed=2)
    s.requires_grad_(True)
    listnet_loss(s, y, m).sum().backward()
    eps = 1e-6
    fd = torch.zeros_like(s)
    with torch.no_grad():
        for i in range(s.shape[0]):
            for j in range(s.shape[1]):
                d = torch.zeros_like(s)
                d[i, j] = eps
                fd[i, j] = (listnet_loss(s + d, y, m).sum() - listnet_loss(s - d, y, m).sum()) / (2 * eps)
    torch.testing.assert_close(s.grad, fd, rtol=1e-6, atol=1e-9)


def test_padding_slots_and_padded_queries_change_nothing():
    s, y, m = _random_batch(seed=3)
    q, n = s.shape
    # extra padded slots with garbage, and two fully padded queries
    s2 = torch.full((q + 2, n + 3), 1e6, dtype=torch.float64)
    y2 = torch.full((q + 2, n + 3), -7e5, dtype=torch.float64)
    m2 = torch.zeros((q + 2, n + 3), dtype=torch.bool)
    s2[:q, :n], y2[:q, :n], m2[:q, :n] = s, y, m
    s2[:q, :n][~m] = -3e5
    s.requires_grad_(True)
    s2.requires_grad_(True)
    a = listnet_loss(s, y, m)
    b = listnet_loss(s2, y2, m2)
    torch.testing.assert_close(b[:q], a, rtol=0, atol=1e-12)
    assert torch.all(b[q:] == 0)
    a.sum().backward()
    b.sum().backward()
    assert torch.isfinite(s2.grad).all()
    torch.testing.assert_close(s2.grad[:q, :n], s.grad, rtol=0, atol=1e-12)
    assert torch.all(s2.grad[~m2] == 0)


def test_query_and_item_order_invariance():
    s, y, m = _random_batch(seed=4)
    full = listnet_loss(s, y, m)
    perm = torch.randperm(s.shape[0], generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(listnet_loss(s[perm], y[perm], m[perm]), full[perm])
    cols = torch.randperm(s.shape[1], generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(listnet_loss(s[:, cols], y[:, cols], m[:, cols]), full, rtol=1e-12, atol=1e-12)


def test_one_item_query_gives_zero_and_no_nan():
    s = torch.tensor([[3.0, 0.0]], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    m = torch.tensor([[True, False]])
    loss = listnet_loss(s, y, m)
    loss.sum().backward()
    assert float(loss.detach()) == 0.0
    assert torch.equal(s.grad, torch.zeros_like(s))


def test_softmax_stable_with_judgments_and_scores_in_the_hundreds():
    s = torch.tensor([[900.0, 850.0, -700.0, 0.0]], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([[800.0, 799.0, 300.0, 0.0]], dtype=torch.float64)
    m = torch.tensor([[True, True, True, False]])
    loss = listnet_loss(s, y, m)
    loss.sum().backward()
    assert torch.isfinite(loss).all() and torch.isfinite(s.grad).all()
    want = _listnet_loop(s.detach().numpy(), y.numpy(), m.numpy())
    np.testing.assert_allclose(loss.detach().numpy(), want, rtol=1e-12)
    p = top_one_probability(y, m)
    assert torch.isfinite(p).all() and abs(float(p.sum()) - 1.0) < 1e-12


def test_masked_log_softmax_is_zero_on_padding():
    s, _, m = _random_batch(seed=5)
    out = masked_log_softmax(s, m)
    assert torch.all(out[~m] == 0)
    torch.testing.assert_close(out.exp().masked_fill(~m, 0).sum(-1), torch.ones(s.shape[0], dtype=s.dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtypes_preserved(dtype):
    s, y, m = _random_batch(seed=6)
    assert listnet_loss(s.to(dtype), y.to(dtype), m).dtype == dtype
