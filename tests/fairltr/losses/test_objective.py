"""DELTR's objective for a linear scorer: autograd vs the paper's analytic gradient vs finite
differences, and the fused LinearDELTRObjective vs the autograd reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fairltr.errors import ConfigError
from fairltr.losses import (
    GAMMA,
    FairnessLoss,
    LinearDELTRObjective,
    deltr_objective,
    exposure_hinge,
    exposure_symmetric,
    fused_variant,
    listnet_loss,
    temporary_loss,
)

V1 = 1.0 / math.log(2.0)


def _linear_batch(q=6, n=9, f=4, n_groups=2, seed=0, padded=True):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(q, n, f, generator=g, dtype=torch.float64)
    y = torch.randint(0, 6, (q, n), generator=g).to(torch.float64)
    groups = torch.randint(0, n_groups, (q, n), generator=g)
    if padded:
        sizes = torch.randint(2, n + 1, (q,), generator=g)
        sizes[0] = n
    else:
        sizes = torch.full((q,), n)
    mask = torch.arange(n) < sizes[:, None]
    x = x.masked_fill(~mask.unsqueeze(-1), 0.0)
    w = torch.randn(f, generator=g, dtype=torch.float64)
    return x, y, groups, mask, w


def _paper_gradient(x, y, groups, mask, w, gamma):
    """docs/spec.md §2 / the paper's analytic gradient for f(x) = <w, x>, written out per query in numpy.

    dP_s(i)/dw = P_s(i) (x_i - sum_j P_s(j) x_j)
    dL/dw      = - sum_i P_y(i) (x_i - sum_j P_s(j) x_j)
    dExp(G)/dw = v1 / |G| sum_{i in G} dP_s(i)/dw
    dU/dw      = 2 max(0, Exp(G0) - Exp(G1)) (dExp(G0)/dw - dExp(G1)/dw)
    """
    total_grad = np.zeros(len(w))
    total = 0.0
    wn = w.numpy()
    for xq, yq, gq, mq in zip(x.numpy(), y.numpy(), groups.numpy(), mask.numpy()):
        xq, yq, gq = xq[mq], yq[mq], gq[mq]
        s = xq @ wn
        ps = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        py = np.exp(yq - yq.max()) / np.exp(yq - yq.max()).sum()
        xbar = ps @ xq
        dps = ps[:, None] * (xq - xbar)  # (n, F)
        total += -(py * np.log(ps)).sum()
        total_grad += -(py[:, None] * (xq - xbar)).sum(0)
        if (gq == 0).any() and (gq == 1).any():
            e0 = V1 * ps[gq == 0].mean()
            e1 = V1 * ps[gq == 1].mean()
            de0 = V1 * dps[gq == 0].sum(0) / (gq == 0).sum()
            de1 = V1 * dps[gq == 1].sum(0) / (gq == 1).sum()
            hinge = max(0.0, e0 - e1)
            total += gamma * hinge**2
            total_grad += gamma * 2 * hinge * (de0 - de1)
    return total, total_grad


def _autograd(x, y, groups, mask, w, gamma, **kw):
    w = w.clone().requires_grad_(True)
    t = deltr_objective(x @ w, y, groups, mask, gamma, **kw)
    t.total.backward()
    return type(t)(*(v.detach() for v in t)), w.grad


@pytest.mark.parametrize("gamma", [0.0, 10.0, 1e4])
def test_autograd_equals_paper_analytic_gradient(gamma):
    x, y, groups, mask, w = _linear_batch(seed=1)
    value, grad = _paper_gradient(x, y, groups, mask, w, gamma)
    t, g_auto = _autograd(x, y, groups, mask, w, gamma)
    assert float(t.total) == pytest.approx(value, rel=1e-10)
    np.testing.assert_allclose(g_auto.numpy(), grad, rtol=1e-6, atol=1e-9 * np.abs(grad).max())
    assert np.abs(grad).max() > 0


def test_unfair_queries_exist_in_the_gradient_test():
    """Guard: the analytic-gradient test exercises the hinge (some U_q > 0)."""
    x, y, groups, mask, w = _linear_batch(seed=1)
    assert float(exposure_hinge(x @ w, groups, mask).max()) > 1e-4


def test_finite_differences():
    x, y, groups, mask, w = _linear_batch(seed=2)
    gamma = 50.0
    _, grad = _autograd(x, y, groups, mask, w, gamma)
    eps = 1e-6
    fd = np.zeros(len(w))
    for j in range(len(w)):
        d = torch.zeros_like(w)
        d[j] = eps
        hi = deltr_objective(x @ (w + d), y, groups, mask, gamma).total
        lo = deltr_objective(x @ (w - d), y, groups, mask, gamma).total
        fd[j] = float((hi - lo) / (2 * eps))
    np.testing.assert_allclose(grad.numpy(), fd, rtol=1e-6, atol=1e-8)


def test_objective_terms_and_gamma_zero():
    x, y, groups, mask, w = _linear_batch(seed=3)
    t = deltr_objective(x @ w, y, groups, mask, 7.0)
    torch.testing.assert_close(t.total, t.listnet + 7.0 * t.exposure)
    torch.testing.assert_close(t.listnet, listnet_loss(x @ w, y, mask).sum())
    t0 = deltr_objective(x @ w, y, groups, mask, 0.0)
    assert torch.equal(t0.total, t0.listnet)
    torch.testing.assert_close(t0.exposure, t.exposure)  # still reported for the history
    tn = deltr_objective(x @ w, y, groups, mask, 7.0, fairness_loss="none")
    assert float(tn.exposure) == 0.0 and torch.equal(tn.total, tn.listnet)


def test_objective_errors():
    x, y, groups, mask, w = _linear_batch(seed=4)
    with pytest.raises(ConfigError, match="gamma"):
        deltr_objective(x @ w, y, groups, mask, -1.0)
    with pytest.raises(ConfigError, match="not a ranking loss"):
        deltr_objective(x @ w, y, groups, mask, 1.0, fairness_loss="lakda_kl")
    with pytest.raises(ConfigError, match="unknown fairness loss"):
        deltr_objective(x @ w, y, groups, mask, 1.0, fairness_loss="nope")


# ------------------------------------------------------------------ fused linear objective


def _fused(x, y, groups, mask, w, gamma, **kw):
    obj = LinearDELTRObjective(x, y, groups, mask, gamma, **kw)
    wg = w.clone().requires_grad_(True)
    t = obj(wg)
    t.total.backward()
    return type(t)(*(v.detach() for v in t)), wg.grad, obj


@pytest.mark.parametrize("gamma", [0.0, 3.0, 1e5])
def test_fused_equals_paper_gradient(gamma):
    x, y, groups, mask, w = _linear_batch(seed=5)
    value, grad = _paper_gradient(x, y, groups, mask, w, gamma)
    t, g_fused, _ = _fused(x, y, groups, mask, w, gamma)
    assert float(t.total) == pytest.approx(value, rel=1e-10)
    np.testing.assert_allclose(g_fused.numpy(), grad, rtol=1e-6, atol=1e-9 * np.abs(grad).max())


@pytest.mark.parametrize("padded", [True, False])
@pytest.mark.parametrize("n_groups", [2, 3])
@pytest.mark.parametrize("reduce", ["max", "mean"])
@pytest.mark.parametrize("loss,variant", [("exposure_hinge", "hinge"), ("exposure_symmetric", "symmetric"),
                                          ("none", None)])
def test_fused_equals_autograd_reference(loss, variant, reduce, n_groups, padded):
    x, y, groups, mask, w = _linear_batch(q=7, n=10, f=3, n_groups=n_groups, seed=6, padded=padded)
    gamma = 20.0
    ref, g_ref = _autograd(x, y, groups, mask, w, gamma, fairness_loss=loss, reduce=reduce, n_groups=n_groups)
    t, g, _ = _fused(x, y, groups, mask, w, gamma, variant=variant, reduce=reduce, n_groups=n_groups)
    for a, b in zip(t, ref):
        assert float(a) == pytest.approx(float(b), rel=1e-12, abs=1e-14)
    torch.testing.assert_close(g, g_ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n_groups", [2, 3])
@pytest.mark.parametrize("variant", ["hinge", "symmetric", None])
def test_per_query_exposure_matches_the_loss_per_query(variant, n_groups):
    x, y, groups, mask, w = _linear_batch(q=7, n=10, f=3, n_groups=n_groups, seed=9)
    obj = LinearDELTRObjective(x, y, groups, mask, 5.0, variant=variant, n_groups=n_groups)
    per = obj.per_query_exposure(w)
    if variant is None:
        assert torch.equal(per, torch.zeros(7, dtype=torch.float64))
    else:
        ref = (exposure_hinge if variant == "hinge" else exposure_symmetric)(x @ w, groups, mask, n_groups=n_groups)
        torch.testing.assert_close(per, ref, rtol=1e-12, atol=1e-15)
    assert float(per.sum()) == pytest.approx(float(obj(w).exposure), rel=1e-12, abs=1e-15)


def test_fused_value_and_grad_and_padding_invariance():
    x, y, groups, mask, w = _linear_batch(seed=7)
    obj = LinearDELTRObjective(x, y, groups, mask, 100.0)
    terms, grad = obj.value_and_grad(w)
    q, n, f = x.shape
    x2 = torch.full((q + 2, n + 3, f), 1e3, dtype=torch.float64)  # garbage in padded slots
    y2 = torch.full((q + 2, n + 3), 999.0, dtype=torch.float64)
    g2 = torch.ones((q + 2, n + 3), dtype=torch.long)
    m2 = torch.zeros((q + 2, n + 3), dtype=torch.bool)
    x2[:q, :n], y2[:q, :n], g2[:q, :n], m2[:q, :n] = x, y, groups, mask
    terms2, grad2 = LinearDELTRObjective(x2, y2, g2, m2, 100.0).value_and_grad(w)
    assert torch.isfinite(grad2).all()
    for a, b in zip(terms, terms2):
        assert float(a) == pytest.approx(float(b), rel=1e-12)
    torch.testing.assert_close(grad2, grad, rtol=1e-10, atol=1e-12)


def test_fused_overflow_falls_back_to_max_shift():
    x, y, groups, mask, w = _linear_batch(seed=8)
    big = w * 400.0  # scores spread over thousands: exp() overflows without a max shift
    ref, g_ref = _autograd(x, y, groups, mask, big, 10.0)
    t, g, _ = _fused(x, y, groups, mask, big, 10.0)
    assert torch.isfinite(g).all()
    assert float(t.total) == pytest.approx(float(ref.total), rel=1e-10)
    torch.testing.assert_close(g, g_ref, rtol=1e-8, atol=1e-8)


def test_fused_asymmetry_gradient_equals_listnet_exactly():
    x = torch.tensor([[[2.0], [1.5], [0.0], [-1.0]]], dtype=torch.float64)
    y = torch.tensor([[3.0, 2.0, 1.0, 0.0]], dtype=torch.float64)
    groups = torch.tensor([[1, 1, 0, 0]])  # protected items score higher for w > 0
    mask = torch.ones(1, 4, dtype=torch.bool)
    w = torch.tensor([1.0], dtype=torch.float64)
    t, g_fair, _ = _fused(x, y, groups, mask, w, 1e6)
    assert float(t.exposure) == 0.0
    _, g_plain, _ = _fused(x, y, groups, mask, w, 0.0)
    assert torch.equal(g_fair, g_plain)


def test_fused_one_item_and_one_group_queries():
    x = torch.tensor([[[1.0], [0.0]], [[0.5], [2.0]]], dtype=torch.float64)
    y = torch.tensor([[1.0, 0.0], [2.0, 1.0]], dtype=torch.float64)
    groups = torch.tensor([[1, 0], [1, 1]])
    mask = torch.tensor([[True, False], [True, True]])
    t, g, _ = _fused(x, y, groups, mask, torch.tensor([0.7], dtype=torch.float64), 1e3)
    assert float(t.exposure) == 0.0 and torch.isfinite(g).all()


def test_fused_backward_twice_or_stale_raises():
    x, y, groups, mask, w = _linear_batch(seed=9)
    obj = LinearDELTRObjective(x, y, groups, mask, 1.0)
    wg = w.clone().requires_grad_(True)
    t1 = obj(wg)
    obj(wg)
    with pytest.raises(RuntimeError, match="older call"):
        t1.total.backward()


def test_fused_variant_mapping():
    assert fused_variant("exposure_hinge") == (True, "hinge")
    assert fused_variant("exposure_symmetric") == (True, "symmetric")
    assert fused_variant("none") == (True, None)
    name = "test_objective_wrapped_hinge"
    with temporary_loss(FairnessLoss(name, "ranking", lambda *a, **k: exposure_hinge(*a, **k), (GAMMA,))):
        assert fused_variant(name) == (False, None)  # nothing declared: autograd
    # the declaration decides, not the function's identity
    with temporary_loss(FairnessLoss(name, "ranking", lambda *a, **k: exposure_hinge(*a, **k), (GAMMA,),
                                     fused="hinge")):
        assert fused_variant(name) == (True, "hinge")
    with temporary_loss(FairnessLoss("exposure_hinge", "ranking", exposure_hinge, (GAMMA,)), overwrite=True):
        assert fused_variant("exposure_hinge") == (False, None)  # re-registered without the declaration
    assert fused_variant("exposure_hinge") == (True, "hinge")


def test_fused_mask_with_holes_and_empty_query():
    """Padding need not sit at the end of a row; a query without items contributes nothing."""
    x, y, groups, _, w = _linear_batch(q=6, n=8, f=3, seed=10)
    gen = torch.Generator().manual_seed(1)
    mask = torch.rand(6, 8, generator=gen) < 0.6
    mask[:, 0] = False  # no query starts with a real slot
    mask[0, 3] = True
    mask[5] = False  # an empty query
    mask[1:5, 4] = True
    ref, g_ref = _autograd(x, y, groups, mask, w, 30.0)
    t, g, _ = _fused(x, y, groups, mask, w, 30.0)
    assert float(t.total) == pytest.approx(float(ref.total), rel=1e-12)
    torch.testing.assert_close(g, g_ref, rtol=1e-10, atol=1e-12)


def _scaled_hinge(scores, groups, mask, *, reduce="max", n_groups=None, scale=1.0):
    return scale * exposure_hinge(scores, groups, mask, reduce=reduce, n_groups=n_groups)


def test_declared_options_reach_the_loss():
    """A ranking loss's declared options are forwarded (defaults and validated overrides): the
    option changes the exposure term by exactly its factor; an undeclared option is a ConfigError."""
    x, y, groups, mask, w = _linear_batch(seed=3)
    s = x @ w
    name = "test_objective_scaled_hinge"
    with temporary_loss(FairnessLoss(name, "ranking", _scaled_hinge, (GAMMA,), options={"scale": 1.0})):
        plain = deltr_objective(s, y, groups, mask, 10.0, fairness_loss=name)
        scaled = deltr_objective(s, y, groups, mask, 10.0, fairness_loss=name, options={"scale": 3.0})
        reference = exposure_hinge(s, groups, mask).sum()
        assert reference.item() > 0  # the batch has an exposure gap, so the factor shows
        assert plain.exposure.item() == pytest.approx(reference.item(), rel=1e-12)
        assert scaled.exposure.item() == pytest.approx(3.0 * reference.item(), rel=1e-12)
        assert scaled.total.item() == pytest.approx(plain.listnet.item() + 30.0 * reference.item(), rel=1e-12)
        with pytest.raises(ConfigError, match=f"fairness loss '{name}' has no option 'scael'; options: \\['scale'\\]"):
            deltr_objective(s, y, groups, mask, 10.0, fairness_loss=name, options={"scael": 3.0})
        with pytest.raises(ConfigError, match="option 'scale' must be a finite number"):
            deltr_objective(s, y, groups, mask, 10.0, fairness_loss=name, options={"scale": "x"})


def test_reduce_is_the_declared_option():
    x, y, _, mask, w = _linear_batch(n_groups=3, seed=4)
    groups = torch.randint(0, 3, y.shape, generator=torch.Generator().manual_seed(1))
    s = x @ w
    by_keyword = deltr_objective(s, y, groups, mask, 10.0, reduce="mean", n_groups=3)
    by_option = deltr_objective(s, y, groups, mask, 10.0, options={"reduce": "mean"}, n_groups=3)
    default = deltr_objective(s, y, groups, mask, 10.0, n_groups=3)
    assert by_option.exposure.item() == pytest.approx(by_keyword.exposure.item(), rel=1e-12)
    assert default.exposure.item() == pytest.approx(exposure_hinge(s, groups, mask, reduce="max", n_groups=3).sum().item(),
                                                    rel=1e-12)
    assert default.exposure.item() != pytest.approx(by_option.exposure.item(), rel=1e-6)
    with pytest.raises(ConfigError, match="disagree"):
        deltr_objective(s, y, groups, mask, 10.0, reduce="max", options={"reduce": "mean"})
    with pytest.raises(ConfigError, match="option 'reduce' must be one of"):
        deltr_objective(s, y, groups, mask, 10.0, reduce="sum")
