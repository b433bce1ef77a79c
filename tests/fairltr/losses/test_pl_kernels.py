"""The compiled Plackett-Luce kernels (fairltr.losses.pl_kernels, numba) against the tensor code,
exact enumeration: the same gradient for the same rankings, the PL law, real items first,
block-size independence, numpy's SFC64 stream (the wide-row sort: tests/fairltr/test_row_sort.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import stats

from fairltr.losses.plackett_luce import (
    _kernels,
    plrank_gradient,
    plrank_sample_gradient,
    sample_rankings,
)

pytest.importorskip("numba", reason="the compiled kernels need numba (the [fast] extra)")
from fairltr.losses import pl_kernels  # noqa: E402


def _batch(q: int, n: int, seed: int, *, spread: float = 1.0, dtype=torch.float64, padded: bool = True):
    g = torch.Generator().manual_seed(seed)
    s = (torch.randn(q, n, generator=g, dtype=torch.float64) * spread).to(dtype)
    rho = torch.randn(q, n, generator=g, dtype=torch.float64)
    m = torch.rand(q, n, generator=g) < 0.75 if padded else torch.ones(q, n, dtype=torch.bool)
    m[:, 0] = True
    if padded and q > 2:
        m[1] = False           # a query without real items
        m[2, 1:] = False       # a query of one item
    return s, rho, m


def _tensor_path(monkeypatch, fn, *args):
    monkeypatch.setenv("FAIRLTR_COMPILED", "0")
    assert _kernels() is None
    try:
        return fn(*args)
    finally:
        monkeypatch.setenv("FAIRLTR_COMPILED", "1")


def test_switch_reads_the_environment(monkeypatch):
    monkeypatch.setenv("FAIRLTR_COMPILED", "1")
    assert _kernels() is pl_kernels
    monkeypatch.setenv("FAIRLTR_COMPILED", "0")
    assert _kernels() is None


@pytest.mark.parametrize("q,n,spread", [(7, 12, 1.0), (5, 300, 2.0), (3, 700, 0.5), (9, 5, 40.0)])
def test_kernel_gradient_equals_the_tensor_code_on_the_same_rankings(monkeypatch, q, n, spread):
    """Padded queries, an empty one, a single item, rows wider than one sort run (300, 700: the
    merge), and scores 40 nats apart (Z_k down to e^-150): the two implementations of PL-Rank-3
    agree to 1e-12 of the largest entry (their sums run in different orders)."""
    s, rho, m = _batch(q, n, seed=q * n, spread=spread)
    r = sample_rankings(s, m, 23, torch.Generator().manual_seed(1))
    got = plrank_gradient(s, r, rho, m)
    want = _tensor_path(monkeypatch, plrank_gradient, s, r, rho, m)
    assert float(want.abs().max()) > 0
    torch.testing.assert_close(got, want, atol=1e-12 * float(want.abs().max()), rtol=0)
    assert float(got[~m].abs().max()) == 0.0


@pytest.mark.parametrize("q,n", [(6, 9), (3, 5), (2, 513)])
def test_rankings_are_permutations_with_real_items_first(q, n):
    s, _, m = _batch(q, n, seed=n, spread=3.0)
    s = s.masked_fill(~m, 80.0)  # a huge score on padding must not matter
    r = sample_rankings(s, m, 40, torch.Generator().manual_seed(2))
    assert r.dtype == torch.int64 and r.shape == (40, q, n)
    assert torch.equal(r.sort(dim=-1).values, torch.arange(n).expand(40, q, n))
    counts = m.sum(1)
    for qi in range(q):
        assert bool(m[qi][r[:, qi, :counts[qi]]].all()) and not bool(m[qi][r[:, qi, counts[qi]:]].any())


@pytest.mark.parametrize("per_block", [1, 7, 10**9])
def test_a_seed_gives_the_same_rankings_for_every_block_size(monkeypatch, per_block):
    """Blocks of 1 element (one sample each), 7 (odd) and one block: the same rankings, and the
    fused sampler + gradient equals the two calls exactly (the same samples, summed in the same order)."""
    s, rho, m = _batch(5, 9, seed=4)
    want = sample_rankings(s, m, 31, torch.Generator().manual_seed(5))
    g_want = plrank_gradient(s, want, rho, m)
    monkeypatch.setattr(pl_kernels, "BLOCK_ELEMENTS", per_block)
    assert torch.equal(sample_rankings(s, m, 31, torch.Generator().manual_seed(5)), want)
    torch.testing.assert_close(plrank_sample_gradient(s, rho, m, 31, torch.Generator().manual_seed(5)), g_want,
                               atol=1e-12, rtol=0)


def test_a_seed_fixes_the_rankings_and_the_default_generator_follows_torch_manual_seed():
    s, _, m = _batch(4, 8, seed=6)
    a = sample_rankings(s, m, 10, torch.Generator().manual_seed(9))
    assert torch.equal(a, sample_rankings(s, m, 10, torch.Generator().manual_seed(9)))
    assert not torch.equal(a, sample_rankings(s, m, 10, torch.Generator().manual_seed(10)))
    torch.manual_seed(3)
    b = sample_rankings(s, m, 10)
    torch.manual_seed(3)
    assert torch.equal(b, sample_rankings(s, m, 10))


def _exact_permutation_probabilities(scores: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray]:
    w = np.exp(scores - scores.max())
    perms = list(itertools.permutations(range(len(scores))))
    probs = []
    for perm in perms:
        left, p = list(range(len(scores))), 1.0
        for item in perm:
            p *= w[item] / w[left].sum()
            left.remove(item)
        probs.append(p)
    return perms, np.array(probs)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_sampled_rankings_follow_the_exact_pl_law(dtype):
    """400,000 rankings of 5 items: every one of the 120 permutations as often as PL says (chi-square,
    p > 1e-4: a false alarm once in 10,000 runs; the seed is fixed)."""
    scores = np.array([0.8, -0.3, 0.1, 1.2, -1.0])
    perms, exact = _exact_permutation_probabilities(scores)
    index = {perm: i for i, perm in enumerate(perms)}
    s = torch.tensor(scores[None, :], dtype=dtype)
    r = sample_rankings(s, torch.ones(1, 5, dtype=torch.bool), 400_000, torch.Generator().manual_seed(3))
    codes = (r[:, 0, :] * torch.tensor([625, 125, 25, 5, 1])).sum(-1).numpy()
    lookup = {sum(p[k] * 5 ** (4 - k) for k in range(5)): index[p] for p in perms}
    counts = np.bincount([lookup[c] for c in codes], minlength=120)
    assert stats.chisquare(counts, exact * len(codes)).pvalue > 1e-4


def test_fused_gradient_converges_to_the_exact_gradient():
    """The fused sampler + PL-Rank on 6 items against autograd through the exact E[sum theta rho]
    over all 720 rankings: 200,000 samples, every entry within 5 standard errors (estimated from
    20 independent fused calls)."""
    scores = torch.tensor([[0.4, -0.2, 1.1, 0.0, -0.7, 0.9]], dtype=torch.float64)
    rho = torch.tensor([[3.0, 0.0, 1.0, 7.0, 1.0, 0.0]], dtype=torch.float64)
    m = torch.ones(1, 6, dtype=torch.bool)
    leaf = scores[0].clone().requires_grad_(True)
    total = torch.zeros((), dtype=torch.float64)
    for perm in itertools.permutations(range(6)):
        logp, left = torch.zeros((), dtype=torch.float64), list(range(6))
        for item in perm:
            logp = logp + leaf[item] - torch.logsumexp(leaf[left], 0)
            left.remove(item)
        total = total + logp.exp() * sum(float(rho[0, item]) / math.log2(2 + k) for k, item in enumerate(perm))
    exact = torch.autograd.grad(total, leaf)[0]
    runs = torch.stack([plrank_sample_gradient(scores, rho, m, 10_000, torch.Generator().manual_seed(100 + i))[0]
                        for i in range(20)])
    mean, se = runs.mean(0), runs.std(0) / math.sqrt(20)
    assert bool(((mean - exact).abs() <= 5 * se + 1e-9).all()), (mean, exact, se)


def test_a_zero_uniform_keeps_a_real_item_before_padding():
    """u = 0 (numpy's doubles include 0, probability 2^-53): key +inf for a real item is capped at the
    largest double, so it still sorts before every padded slot."""
    with np.errstate(divide="ignore"):
        log_u = np.log(np.array([[[0.0, 0.5, 0.25]]]))
    neg_rate = np.array([[-1.0, -np.inf, -2.0]])  # item 1 is padding
    cap = np.where(neg_rate > -np.inf, np.finfo(np.float64).max, np.inf)
    keys = np.empty((1, 1, 3), dtype=np.int64)
    pl_kernels._pack_keys(log_u, neg_rate, cap, np.int64(3), keys)
    keys.sort(axis=-1)
    assert (keys[0, 0] & 3).tolist() == [2, 0, 1]


def test_the_compiled_sfc64_loop_draws_numpys_sfc64_doubles():
    """Bit for bit numpy's Generator(SFC64(seed)).random(), across consecutive fills; the seeded
    state is numpy's SFC64(seed) state word for word."""
    for seed in (0, 1, 2026, 2 ** 62 - 1):
        assert pl_kernels.sfc64_state(seed).tolist() == list(np.random.SFC64(seed).state["state"]["state"])
    state = pl_kernels.sfc64_state(2026)
    numpy_generator = np.random.Generator(np.random.SFC64(2026))
    for size in (1, 1000, 70_001):
        out = np.empty(size)
        pl_kernels._sfc64_uniforms(state, out)
        assert np.array_equal(out, numpy_generator.random(size))


def test_compiled_exposure_and_dcg_equal_the_tensor_estimates(monkeypatch):
    """The one-pass exposure and E[DCG] of pl_policy_objective's compiled path = sampled_exposure and
    expected_dcg (padded queries, an empty one, a single item), to 1e-12."""
    from fairltr.losses.plackett_luce import dcg_gains, expected_dcg, sampled_exposure

    s, _, m = _batch(6, 40, seed=12)
    y = torch.randint(0, 5, s.shape, generator=torch.Generator().manual_seed(1)).to(torch.float64)
    r = sample_rankings(s, m, 300, torch.Generator().manual_seed(2))
    exposure, dcg = pl_kernels.exposure_and_dcg(r.numpy(), dcg_gains(y, m).numpy(), m.sum(-1).numpy())
    torch.testing.assert_close(torch.from_numpy(exposure), sampled_exposure(r, m), atol=1e-12, rtol=0)
    torch.testing.assert_close(torch.from_numpy(dcg), expected_dcg(r, y, m), atol=1e-10, rtol=0)


def test_the_objective_is_the_same_on_both_paths(monkeypatch):
    """pl_policy_objective on given rankings: the same terms and surrogate gradient with the
    compiled kernels and with the tensor code."""
    from fairltr.losses.plackett_luce import pl_policy_objective

    s, _, m = _batch(5, 30, seed=13)
    y = torch.randint(0, 4, s.shape, generator=torch.Generator().manual_seed(3)).to(torch.float64)
    g = torch.randint(0, 2, s.shape, generator=torch.Generator().manual_seed(4))
    r = sample_rankings(s, m, 50, torch.Generator().manual_seed(5))

    def terms():
        leaf = s.clone().requires_grad_(True)
        t = pl_policy_objective(leaf, y, g, m, lam=3.0, rankings=r, merit=False)
        (grad,) = torch.autograd.grad(t.surrogate, leaf)
        return torch.stack([t.total, t.dcg, t.disparity]), grad

    compiled = terms()
    tensor = _tensor_path(monkeypatch, terms)
    for a, b in zip(compiled, tensor):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("cutoff,baseline", [(None, False), (5, False), (None, True), (40, True)])
def test_length_classes_give_the_same_samples_to_every_entry_point(monkeypatch, cutoff, baseline):
    """Queries of 2 to 300 items in one padded batch: the kernels draw them by length class (each
    padded to its own longest list); the rankings are permutations with real items first, and the
    fused sampler + gradient equals sample_rankings + plrank_gradient for the seed (1e-12), for
    several block sizes; the batch is really split (more than one class)."""
    g = torch.Generator().manual_seed(8)
    lengths = [300, 2, 7, 150, 40, 299, 12, 90]
    n = max(lengths)
    m = torch.arange(n).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    s = torch.randn(len(lengths), n, generator=g, dtype=torch.float64)
    rho = torch.randn(len(lengths), n, generator=g, dtype=torch.float64)
    assert len(pl_kernels._classes(pl_kernels.prepare(s.numpy(), m.numpy()))) > 1
    r = sample_rankings(s, m, 21, torch.Generator().manual_seed(4))
    assert torch.equal(r.sort(dim=-1).values, torch.arange(n).expand(21, len(lengths), n))
    for q, k in enumerate(lengths):
        assert bool(m[q][r[:, q, :k]].all())
    want = plrank_gradient(s, r, rho, m, cutoff=cutoff, baseline=baseline)
    for per_block in (1, 5, 10**9):
        monkeypatch.setattr(pl_kernels, "BLOCK_ELEMENTS", per_block)
        got = plrank_sample_gradient(s, rho, m, 21, torch.Generator().manual_seed(4), cutoff=cutoff, baseline=baseline)
        torch.testing.assert_close(got, want, atol=1e-12 * float(want.abs().max()), rtol=0)
