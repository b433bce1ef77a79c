"""DELTR's exposure penalty (docs/spec.md §2) against brute-force loops; masking, asymmetry, degenerate queries."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fairltr.errors import ConfigError
from fairltr.losses import (
    V1,
    exposure_disparity,
    exposure_hinge,
    exposure_symmetric,
    group_exposure,
    listnet_loss,
)


def _batch(q=6, n=8, n_groups=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(q, n, generator=g, dtype=torch.float64) * 1.5
    groups = torch.randint(0, n_groups, (q, n), generator=g)
    sizes = torch.randint(2, n + 1, (q,), generator=g)
    mask = torch.arange(n) < sizes[:, None]
    return scores, groups, mask


def _u_loop(scores, groups, mask, variant="hinge", reduce="max", n_groups=2):
    """Brute force per docs/spec.md §2: Exp(i) = P_s(i) v1, group means, reduce over present pairs (G0, Gp)."""
    out = []
    for s, g, m in zip(scores.numpy(), groups.numpy(), mask.numpy()):
        s, g = s[m], g[m]
        p = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        exp_i = p / math.log(2)
        means = {k: exp_i[g == k].mean() for k in range(n_groups) if (g == k).any()}
        terms = []
        for k in range(1, n_groups):
            if 0 in means and k in means:
                d = means[0] - means[k]
                terms.append((max(0.0, d) if variant == "hinge" else d) ** 2)
        if not terms:
            out.append(0.0)
        else:
            out.append(max(terms) if reduce == "max" else float(np.mean(terms)))
    return np.array(out)


def test_v1_is_one_over_ln2():
    assert V1 == pytest.approx(1 / math.log(2), rel=1e-15)


@pytest.mark.parametrize("variant", ["hinge", "symmetric"])
def test_two_groups_against_loop(variant):
    s, g, m = _batch(seed=1)
    got = exposure_disparity(s, g, m, variant=variant).numpy()
    np.testing.assert_allclose(got, _u_loop(s, g, m, variant), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("reduce", ["max", "mean"])
@pytest.mark.parametrize("variant", ["hinge", "symmetric"])
def test_several_protected_groups_against_loop(reduce, variant):
    s, g, m = _batch(q=10, n=9, n_groups=4, seed=2)
    g[0, :] = 0  # one query with group 0 only
    g[1, :] = torch.tensor([0, 3, 3, 0, 3, 0, 3, 0, 3])  # group 1, 2 absent
    got = exposure_disparity(s, g, m, variant=variant, reduce=reduce, n_groups=4).numpy()
    want = _u_loop(s, g, m, variant, reduce, n_groups=4)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    assert got[0] == 0.0


def test_named_wrappers():
    s, g, m = _batch(seed=3)
    torch.testing.assert_close(exposure_hinge(s, g, m), exposure_disparity(s, g, m, variant="hinge"))
    torch.testing.assert_close(exposure_symmetric(s, g, m), exposure_disparity(s, g, m, variant="symmetric"))


def test_group_exposure_means_and_counts():
    s, g, m = _batch(seed=4)
    means, counts = group_exposure(s, g, m)
    for qi in range(s.shape[0]):
        sel = m[qi]
        p = torch.softmax(s[qi][sel], 0) * V1
        for k in range(2):
            members = g[qi][sel] == k
            assert counts[qi, k] == members.sum()
            want = p[members].mean() if members.any() else torch.tensor(0.0, dtype=torch.float64)
            torch.testing.assert_close(means[qi, k], want.to(torch.float64))


def test_asymmetry_protected_ahead_gives_zero():
    # the protected group (1) gets the higher scores: Exp(G1) > Exp(G0) -> U = 0 (hinge), > 0 (symmetric)
    s = torch.tensor([[3.0, 2.5, 0.1, -1.0]], dtype=torch.float64, requires_grad=True)
    g = torch.tensor([[1, 1, 0, 0]])
    m = torch.ones(1, 4, dtype=torch.bool)
    u = exposure_hinge(s, g, m)
    assert float(u.detach()) == 0.0
    u.sum().backward()
    assert torch.equal(s.grad, torch.zeros_like(s))
    assert float(exposure_symmetric(s, g, m).detach()) > 0


def test_asymmetry_total_gradient_equals_listnet_exactly():
    s = torch.tensor([[3.0, 2.5, 0.1, -1.0, 0.0]], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([[1.0, 4.0, 2.0, 0.0, 0.0]], dtype=torch.float64)
    g = torch.tensor([[1, 1, 0, 0, 0]])
    m = torch.tensor([[True, True, True, True, False]])
    (listnet_loss(s, y, m) + 1e6 * exposure_hinge(s, g, m)).sum().backward()
    fair_grad = s.grad.clone()
    s.grad = None
    listnet_loss(s, y, m).sum().backward()
    assert torch.equal(fair_grad, s.grad)


def test_one_item_and_one_group_queries_give_zero_and_no_nan():
    s = torch.tensor([[2.0, 0.0, 0.0], [1.0, -1.0, 0.5], [0.3, 0.0, 0.0]], dtype=torch.float64,
                     requires_grad=True)
    g = torch.tensor([[1, 0, 0], [1, 1, 1], [0, 0, 0]])
    m = torch.tensor([[True, False, False], [True, True, True], [True, False, False]])
    for fn in (exposure_hinge, exposure_symmetric):
        for reduce in ("max", "mean"):
            u = fn(s, g, m, reduce=reduce)
            assert torch.equal(u.detach(), torch.zeros(3, dtype=torch.float64))
            (grad,) = torch.autograd.grad(u.sum(), s)
            assert torch.isfinite(grad).all() and torch.equal(grad, torch.zeros_like(grad))


def test_padding_invariance_and_no_nan():
    s, g, m = _batch(seed=5)
    q, n = s.shape
    s2 = torch.full((q + 2, n + 2), 5e5, dtype=torch.float64)
    g2 = torch.ones((q + 2, n + 2), dtype=torch.long)
    m2 = torch.zeros((q + 2, n + 2), dtype=torch.bool)
    s2[:q, :n], g2[:q, :n], m2[:q, :n] = s, g, m
    s2[:q, :n][~m] = 4e5
    g2[:q, :n][~m] = 1
    s.requires_grad_(True)
    s2.requires_grad_(True)
    a, b = exposure_hinge(s, g, m), exposure_hinge(s2, g2, m2)
    torch.testing.assert_close(b[:q], a, rtol=0, atol=1e-15)
    assert torch.all(b[q:] == 0)
    (ga,) = torch.autograd.grad(a.sum(), s)
    (gb,) = torch.autograd.grad(b.sum(), s2)
    assert torch.isfinite(gb).all()
    torch.testing.assert_close(gb[:q, :n], ga, rtol=0, atol=1e-15)


def test_query_order_invariance():
    s, g, m = _batch(seed=6)
    perm = torch.randperm(s.shape[0], generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(exposure_hinge(s[perm], g[perm], m[perm]), exposure_hinge(s, g, m)[perm])


def test_large_scores_are_stable():
    s = torch.tensor([[800.0, 790.0, -600.0]], dtype=torch.float64)
    g = torch.tensor([[0, 1, 1]])
    u = exposure_hinge(s, g, torch.ones(1, 3, dtype=torch.bool))
    np.testing.assert_allclose(u.numpy(), _u_loop(s, g, torch.ones(1, 3, dtype=torch.bool)), rtol=1e-12)


def test_bad_options_and_group_ids():
    s, g, m = _batch(seed=7)
    with pytest.raises(ConfigError, match="variant"):
        exposure_disparity(s, g, m, variant="both")
    with pytest.raises(ConfigError, match="reduce"):
        exposure_disparity(s, g, m, reduce="min")
    with pytest.raises(ConfigError, match="n_groups"):
        exposure_disparity(s, g * 3, m, n_groups=2)
