"""Expected exposure (Diaz et al. 2020) against brute force: every ranking of a tiny list
enumerated, exposures summed in explicit loops (tolerance 1e-12, float64 throughout)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from fairltr.errors import ConfigError
from fairltr.metrics import (
    expected_exposure, expected_exposure_metrics, group_exposure, metric_info, target_exposure,
)

TOL = 1e-12


def _brute_target(y: list[float], gamma: float, k: int | None = None) -> list[float]:
    """Mean exposure of each item over every ranking that sorts the grades decreasingly."""
    n = len(y)
    total = [0.0] * n
    count = 0
    for perm in itertools.permutations(range(n)):  # perm[r] = item at rank r + 1
        if all(y[perm[r]] >= y[perm[r + 1]] for r in range(n - 1)):
            count += 1
            for r, item in enumerate(perm):
                total[item] += gamma ** r if (k is None or r < k) else 0.0
    return [t / count for t in total]


def _brute_policy(weights: list[float], gamma: float) -> list[float]:
    """Exact expected exposure of a Plackett-Luce policy with these item weights (enumeration)."""
    n = len(weights)
    eps = [0.0] * n
    for perm in itertools.permutations(range(n)):
        prob, left = 1.0, sum(weights)
        for item in perm:
            prob *= weights[item] / left
            left -= weights[item]
        for r, item in enumerate(perm):
            eps[item] += prob * gamma ** r
    return eps


@pytest.mark.parametrize("k", [None, 2])
@pytest.mark.parametrize("gamma", [0.5, 0.8])
def test_target_exposure_equals_enumeration(gamma, k):
    y = torch.tensor([[2.0, 0.0, 1.0, 2.0, 0.0], [1.0, 1.0, 0.0, 3.0, 9.0]])
    mask = torch.tensor([[True] * 5, [True, True, True, True, False]])  # query 2: last slot padded (9 ignored)
    got = target_exposure(y, mask, gamma, k)
    for q in range(2):
        n = int(mask[q].sum())
        want = _brute_target(y[q, :n].tolist(), gamma, k)
        np.testing.assert_allclose(got[q, :n].numpy(), want, rtol=0, atol=TOL)
    assert got[1, 4] == 0.0


def test_uniform_policy_over_all_rankings_equals_enumeration():
    """S = n! samples, each ranking once: the sample mean IS the uniform policy's expectation."""
    n, gamma = 4, 0.6
    perms = list(itertools.permutations(range(n)))
    ranks = torch.zeros(len(perms), 1, n, dtype=torch.int64)
    for s, perm in enumerate(perms):
        for r, item in enumerate(perm):
            ranks[s, 0, item] = r + 1
    mask = torch.ones(1, n, dtype=torch.bool)
    eps = expected_exposure(ranks, mask, gamma)
    want = sum(gamma ** r for r in range(n)) / n  # every item at every rank equally often
    np.testing.assert_allclose(eps.numpy(), np.full((1, n), want), atol=TOL)


def test_plackett_luce_policy_by_weighted_enumeration():
    """A non-uniform policy: each ranking repeated in proportion to its (rational) PL probability."""
    weights, gamma = [3.0, 2.0, 1.0], 0.5
    perms = list(itertools.permutations(range(3)))
    # probabilities have denominator 6 * (remaining) -> multiply by 60 to make them integers
    reps = []
    for perm in perms:
        prob, left = 1.0, sum(weights)
        for item in perm:
            prob *= weights[item] / left
            left -= weights[item]
        reps.append(round(prob * 60))
    assert sum(reps) == 60
    rows = []
    for perm, rep in zip(perms, reps):
        rank = [0] * 3
        for r, item in enumerate(perm):
            rank[item] = r + 1
        rows += [rank] * rep
    ranks = torch.tensor(rows).reshape(len(rows), 1, 3)
    eps = expected_exposure(ranks, torch.ones(1, 3, dtype=torch.bool), gamma)
    np.testing.assert_allclose(eps[0].numpy(), _brute_policy(weights, gamma), atol=TOL)


def test_metrics_and_groups_against_loops():
    rng = np.random.default_rng(3)
    s_count, q, n, gamma = 7, 5, 6, 0.7
    sizes = np.array([6, 1, 4, 5, 2])
    mask = np.arange(n)[None, :] < sizes[:, None]
    y = rng.integers(0, 3, size=(q, n)).astype(float)
    groups = rng.integers(0, 3, size=(q, n))
    ranks = np.zeros((s_count, q, n), dtype=np.int64)
    for s in range(s_count):
        for qi in range(q):
            ranks[s, qi, : sizes[qi]] = rng.permutation(sizes[qi]) + 1
    out = expected_exposure_metrics(torch.as_tensor(ranks), torch.as_tensor(y), torch.as_tensor(mask), gamma,
                                    groups=torch.as_tensor(groups), n_groups=3)
    for qi in range(q):
        m = sizes[qi]
        eps = [sum(gamma ** (ranks[s, qi, i] - 1) for s in range(s_count)) / s_count for i in range(m)]
        tgt = _brute_target(y[qi, :m].tolist(), gamma)
        ee_d = sum(e * e for e in eps)
        ee_r = sum(e * t for e, t in zip(eps, tgt))
        ee_l = sum((e - t) ** 2 for e, t in zip(eps, tgt))
        assert math.isclose(out["ee_d"][qi].item(), ee_d, abs_tol=TOL)
        assert math.isclose(out["ee_r"][qi].item(), ee_r, abs_tol=TOL)
        assert math.isclose(out["ee_l"][qi].item(), ee_l, abs_tol=TOL)
        assert math.isclose(ee_l, ee_d - 2 * ee_r + sum(t * t for t in tgt), abs_tol=1e-10)
        ge = [sum(eps[i] for i in range(m) if groups[qi, i] == g) for g in range(3)]
        gt = [sum(tgt[i] for i in range(m) if groups[qi, i] == g) for g in range(3)]
        np.testing.assert_allclose(out["group_exposure"][qi].numpy(), ge, atol=TOL)
        np.testing.assert_allclose(out["group_target_exposure"][qi].numpy(), gt, atol=TOL)
        assert math.isclose(out["group_ee_l"][qi].item(), sum((a - b) ** 2 for a, b in zip(ge, gt)), abs_tol=TOL)


def test_deterministic_ideal_ranking_has_ee_l_of_the_within_grade_spread():
    """A deterministic ranking by grade: EE-R = ||eps*||^2 when no grade is tied (then EE-L = 0)."""
    y = torch.tensor([[3.0, 1.0, 2.0, 0.0]])
    ranks = torch.tensor([[1, 3, 2, 4]])
    out = expected_exposure_metrics(ranks, y, torch.ones(1, 4, dtype=torch.bool), 0.5)
    assert out["ee_l"].item() == pytest.approx(0.0, abs=TOL)
    # a tie: the deterministic ranking cannot spread exposure -> EE-L > 0, EE-D > ||eps*||^2
    y2 = torch.tensor([[1.0, 1.0]])
    out2 = expected_exposure_metrics(torch.tensor([[1, 2]]), y2, torch.ones(1, 2, dtype=torch.bool), 0.5)
    assert out2["ee_l"].item() == pytest.approx((1 - 0.75) ** 2 + (0.5 - 0.75) ** 2, abs=TOL)


def test_registry_directions_and_bad_patience():
    assert metric_info("ee_l").direction == "lower"
    assert metric_info("ee_d").direction == "lower"
    assert metric_info("ee_r").direction == "higher"
    mask = torch.ones(1, 2, dtype=torch.bool)
    for bad in (0.0, 1.0, -1, "x"):
        with pytest.raises(ConfigError, match="patience"):
            expected_exposure(torch.tensor([[1, 2]]), mask, bad)
    with pytest.raises(ConfigError, match="group codes"):
        group_exposure(torch.ones(1, 2, dtype=torch.float64), torch.tensor([[0, 5]]), mask, 2)
