"""Plackett-Luce policy functions against exact enumeration of every permutation (lists <= 6 items)."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from pl_lists import pad as _pad

from fairltr.errors import ConfigError
from fairltr.losses.plackett_luce import (
    expected_dcg,
    pl_policy_objective,
    plrank_gradient,
    policy_disparity,
    sample_rankings,
    sampled_exposure,
)


def _perm_probability(s: torch.Tensor, perm: tuple[int, ...]) -> torch.Tensor:
    """P(perm) under PL with scores s, as a product of the sequential choices (differentiable)."""
    p = torch.ones((), dtype=s.dtype)
    remaining = list(perm)
    for item in perm:
        p = p * torch.exp(s[item]) / torch.exp(s[remaining]).sum()
        remaining.remove(item)
    return p


def _exact(s: torch.Tensor, y: torch.Tensor):
    """Exact expected exposure (n,), E[DCG] () of one query by enumerating all n! rankings."""
    n = s.shape[0]
    exposure = torch.zeros(n, dtype=s.dtype)
    dcg = torch.zeros((), dtype=s.dtype)
    for perm in itertools.permutations(range(n)):
        p = _perm_probability(s, perm)
        for k, item in enumerate(perm):
            exposure = exposure + p * torch.nn.functional.one_hot(torch.tensor(item), n).to(s.dtype) / math.log(2 + k)
            dcg = dcg + p * (2.0 ** y[item] - 1) / math.log2(2 + k)
    return exposure, dcg


def _direct_disparity(exposure, groups, y, *, disparity, merit):
    """D of one query with two groups by the plain definition (a Python computation)."""
    a = []
    for g in (0, 1):
        idx = [i for i in range(len(groups)) if groups[i] == g]
        if not idx:
            return torch.zeros((), dtype=exposure.dtype)
        e = sum(exposure[i] for i in idx) / len(idx)
        if merit:
            u = sum(float(y[i]) for i in idx) / len(idx)
            if u == 0:
                return torch.zeros((), dtype=exposure.dtype)
            e = e / u
        a.append(e)
    diff = a[0] - a[1]
    return diff ** 2 if disparity == "squared" else torch.clamp(diff, min=0.0)




ROWS = [
    [(0.8, 2, 0), (-0.3, 1, 1), (0.1, 0, 0), (1.2, 3, 1), (-1.0, 1, 1)],
    [(0.2, 1, 1), (0.5, 0, 0), (-0.4, 2, 0)],
    [(0.3, 0, 0), (-0.6, 2, 1), (1.0, 1, 0), (0.0, 3, 1), (0.4, 1, 0), (-0.2, 0, 1)],
]


def test_padded_slots_are_never_sampled_and_fill_the_tail():
    s, y, g, m = _pad(ROWS)
    s = s.masked_fill(~m, 50.0)  # a huge score on padding must not matter
    r = sample_rankings(s, m, 200, torch.Generator().manual_seed(0))
    n = m.sum(1)
    for q in range(len(ROWS)):
        head = r[:, q, : n[q]]
        assert bool(m[q][head].all())            # real items first
        assert bool((~m[q][r[:, q, n[q]:]]).all())
    e = sampled_exposure(r, m)
    assert float(e[~m].abs().max()) == 0.0


@pytest.mark.parametrize("q", [0, 2])
def test_sampled_exposure_and_dcg_converge_to_enumeration(q):
    s, y, g, m = _pad(ROWS)
    r = sample_rankings(s, m, 100_000, torch.Generator().manual_seed(1))
    n = int(m[q].sum())
    exact_e, exact_dcg = _exact(s[q, :n], y[q, :n])
    # 100k samples: standard error of each exposure <= 0.72 / sqrt(1e5) ~ 0.0023; 4 sigma
    torch.testing.assert_close(sampled_exposure(r, m)[q, :n], exact_e, atol=0.01, rtol=0)
    assert abs(float(expected_dcg(r, y, m)[q]) - float(exact_dcg)) < 0.03 * float(exact_dcg)


@pytest.mark.parametrize("disparity,merit", [("squared", False), ("hinge", False), ("squared", True), ("hinge", True)])
def test_policy_disparity_matches_the_direct_definition(disparity, merit):
    s, y, g, m = _pad(ROWS)
    e = torch.rand(s.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    got = policy_disparity(e, g, m, judgments=y, disparity=disparity, merit=merit)
    for q, row in enumerate(ROWS):
        n = len(row)
        want = _direct_disparity(e[q, :n], g[q, :n].tolist(), y[q, :n], disparity=disparity, merit=merit)
        assert abs(float(got[q]) - float(want)) < 1e-12


def test_disparity_is_zero_without_both_groups_and_with_zero_merit():
    s, y, g, m = _pad([[(0.1, 1, 0), (0.2, 2, 0)], [(0.1, 0, 0), (0.2, 1, 1)]])
    e = torch.rand(s.shape, dtype=torch.float64)
    assert policy_disparity(e, g, m, judgments=y, disparity="squared").tolist()[0] == 0.0
    # the second query's group 0 has merit 0: a merit-normalised pair is undefined -> 0, not inf
    d = policy_disparity(e, g, m, judgments=y, disparity="squared", merit=True)
    assert d.tolist() == [0.0, 0.0]


def _exact_objective_gradient(s_row, y_row, g_row, lam, disparity, merit):
    s_leaf = s_row.clone().requires_grad_(True)
    e, dcg = _exact(s_leaf, y_row)
    d = _direct_disparity(e, g_row.tolist(), y_row, disparity=disparity, merit=merit)
    (dcg - lam * d).backward()
    return s_leaf.grad


@pytest.mark.parametrize("estimator", ["plrank", "reinforce"])
@pytest.mark.parametrize("lam,disparity,merit", [(0.0, "squared", False), (5.0, "squared", False),
                                                 (2.0, "hinge", True)])
def test_estimated_gradient_converges_to_the_enumerated_gradient(estimator, lam, disparity, merit):
    """Many samples: the estimate of d/ds [E[DCG] - lam D] equals autograd through the exact
    enumerated objective (every permutation of lists of 3, 5 and 6 items) within 5% of the
    largest gradient entry (PL-Rank, 200k samples) / 8% (REINFORCE, 400k samples)."""
    s, y, g, m = _pad(ROWS)
    n_samples = 200_000 if estimator == "plrank" else 400_000
    leaf = s.clone().requires_grad_(True)
    terms = pl_policy_objective(leaf, y, g, m, lam=lam, n_samples=n_samples, estimator=estimator,
                                disparity=disparity, merit=merit, generator=torch.Generator().manual_seed(7))
    terms.surrogate.backward()
    tol = 0.05 if estimator == "plrank" else 0.08
    for q, row in enumerate(ROWS):
        n = len(row)
        want = _exact_objective_gradient(s[q, :n], y[q, :n], g[q, :n], lam, disparity, merit)
        got = leaf.grad[q, :n]
        scale = float(want.abs().max())
        assert float((got - want).abs().max()) <= tol * scale, (q, got, want)
        assert float(leaf.grad[q, n:].abs().sum()) == 0.0  # padding gets no gradient


def test_plrank_gradient_is_exact_in_expectation_for_two_items():
    """Two items: rankings (0,1) w.p. p and (1,0) w.p. 1-p; feeding both rankings with weights
    is the exact expectation, so the estimator averaged over them (weighted) is exact."""
    s = torch.tensor([[0.3, -0.2]], dtype=torch.float64)
    m = torch.ones_like(s, dtype=torch.bool)
    rho = torch.tensor([[1.5, 0.4]], dtype=torch.float64)
    p = torch.sigmoid(s[0, 0] - s[0, 1])
    g01 = plrank_gradient(s, torch.tensor([[[0, 1]]]), rho, m)[0]
    g10 = plrank_gradient(s, torch.tensor([[[1, 0]]]), rho, m)[0]
    est = p * g01 + (1 - p) * g10
    leaf = s[0].clone().requires_grad_(True)
    pp = torch.sigmoid(leaf[0] - leaf[1])
    t1, t2 = 1.0, 1.0 / math.log2(3)
    value = pp * (t1 * rho[0, 0] + t2 * rho[0, 1]) + (1 - pp) * (t1 * rho[0, 1] + t2 * rho[0, 0])
    value.backward()
    torch.testing.assert_close(est, leaf.grad, atol=1e-12, rtol=0)


def test_bad_options_are_config_errors():
    s, y, g, m = _pad(ROWS)
    with pytest.raises(ConfigError, match="estimator"):
        pl_policy_objective(s, y, g, m, lam=1.0, estimator="ppo")
    with pytest.raises(ConfigError, match="lambda"):
        pl_policy_objective(s, y, g, m, lam=float("nan"))
    with pytest.raises(ConfigError, match="samples"):
        pl_policy_objective(s, y, g, m, lam=1.0, n_samples=0)
    with pytest.raises(ConfigError, match="disparity"):
        policy_disparity(s, g, m, disparity="cubic")


# ---------------------------------------------------------------- CPU speed paths (same results)

def test_integer_row_sort_is_argsort_with_padding_last(monkeypatch):
    """The packed-integer sort (in place) equals np.argsort on distinct float64 keys and puts +inf
    (padding) last in index order; past _MAX_PACKED_BITS index bits it is np.argsort (padding in
    any order)."""
    import numpy as np

    from fairltr.losses import pl_sampling as pl  # where the code reads its constants

    rng = np.random.default_rng(0)
    keys = rng.exponential(size=(7, 5, 300)) * np.exp(rng.normal(size=(1, 5, 300)) * 3)
    keys[:, 0, 200:] = np.inf
    want = np.argsort(keys, axis=-1, kind="stable")
    buffer = keys.copy()
    got = pl._argsort_rows(buffer)
    assert got.dtype == np.int64 and np.shares_memory(got, buffer) and np.array_equal(got, want)
    monkeypatch.setattr(pl, "_MAX_PACKED_BITS", 2)  # rows of 300 need 9 index bits: np.argsort path
    assert np.array_equal(np.where(np.isinf(np.sort(keys, axis=-1)), -1, pl._argsort_rows(keys.copy())),
                          np.where(np.isinf(np.sort(keys, axis=-1)), -1, want))


def test_blocks_give_the_same_rankings_and_gradient_as_one_block(monkeypatch):
    """The tensor code's blocks of samples (CPU) = one block: the same rankings for a seed (the
    uniforms are drawn in the same order) and the gradient to 1e-12 (summation order). The
    compiled kernels' blocks: tests/fairltr/losses/test_pl_kernels.py."""
    from fairltr.losses import pl_sampling as pl  # where the code reads its constants

    monkeypatch.setenv("FAIRLTR_COMPILED", "0")
    s, y, g, m = _pad(ROWS)
    s = s * 3.0
    rho = torch.randn(s.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    monkeypatch.setattr(pl, "_BLOCK_ELEMENTS", 2)  # one sample per block
    r_blocks = sample_rankings(s, m, 50, torch.Generator().manual_seed(9))
    g_blocks = plrank_gradient(s, r_blocks, rho, m)
    monkeypatch.setattr(pl, "_BLOCK_ELEMENTS", 1 << 30)  # everything in one block
    r_one = sample_rankings(s, m, 50, torch.Generator().manual_seed(9))
    n = m.sum(1)
    for q in range(len(ROWS)):  # real items identical (padding order is arbitrary)
        assert torch.equal(r_blocks[:, q, : n[q]], r_one[:, q, : n[q]])
    torch.testing.assert_close(g_blocks, plrank_gradient(s, r_blocks, rho, m), atol=1e-12, rtol=0)
