"""Positional group exposure (docs/spec.md §3) against a loop; degenerate queries give NaN."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from fairltr.metrics import exposure_per_query, position_bias, ranks_by


def test_position_bias_values_and_cutoff():
    r = torch.tensor([1, 2, 3, 10])
    np.testing.assert_allclose(position_bias(r).numpy(), [1 / math.log(1 + x) for x in (1, 2, 3, 10)])
    np.testing.assert_allclose(position_bias(r, k=2).numpy(), [1 / math.log(2), 1 / math.log(3), 0, 0])


@pytest.mark.parametrize("k", [None, 3])
def test_exposure_against_loop(k):
    rng = np.random.default_rng(0)
    q, n = 10, 9
    scores = rng.normal(size=(q, n))
    groups = rng.integers(0, 3, size=(q, n))  # groups 1 and 2 both count as protected
    sizes = rng.integers(1, n + 1, size=q)
    mask = np.arange(n)[None, :] < sizes[:, None]
    groups[0] = 0  # no protected item
    groups[1] = 2  # no non-protected item
    mask[0] = mask[1] = True
    out = exposure_per_query(ranks_by(torch.as_tensor(scores), torch.as_tensor(mask)),
                             torch.as_tensor(groups), torch.as_tensor(mask), k)
    for qi in range(q):
        s, g = scores[qi][mask[qi]], groups[qi][mask[qi]]
        order = np.argsort(-s, kind="stable")
        rank = np.empty(len(s), dtype=int)
        rank[order] = np.arange(1, len(s) + 1)
        v = np.array([1 / math.log(1 + r) if (k is None or r <= k) else 0.0 for r in rank])
        exp_p = v[g >= 1].mean() if (g >= 1).any() else float("nan")
        exp_n = v[g == 0].mean() if (g == 0).any() else float("nan")
        ratio = exp_p / exp_n if (g == 0).any() and exp_n > 0 else float("nan")
        for name, want in (("exposure_protected", exp_p), ("exposure_nonprotected", exp_n),
                           ("exposure_ratio", ratio), ("exposure_gap", exp_n - exp_p)):
            got = float(out[name][qi])
            if math.isnan(want):
                assert math.isnan(got), (name, qi)
            else:
                assert got == pytest.approx(want, rel=1e-12), (name, qi)
    assert math.isnan(float(out["exposure_protected"][0])) and math.isnan(float(out["exposure_ratio"][0]))
    assert math.isnan(float(out["exposure_nonprotected"][1])) and math.isnan(float(out["exposure_gap"][1]))


def test_hand_computed_query():
    """Protected at ranks 1 and 3, non-protected at 2 and 4 (the padded slot is ignored)."""
    s = torch.tensor([[4.0, 3.0, 2.0, 1.0, 9.0]])
    g = torch.tensor([[1, 0, 1, 0, 1]])
    m = torch.tensor([[True, True, True, True, False]])
    out = exposure_per_query(ranks_by(s, m), g, m)
    exp_p = (1 / math.log(2) + 1 / math.log(4)) / 2
    exp_n = (1 / math.log(3) + 1 / math.log(5)) / 2
    assert float(out["exposure_protected"][0]) == pytest.approx(exp_p)
    assert float(out["exposure_nonprotected"][0]) == pytest.approx(exp_n)
    assert float(out["exposure_ratio"][0]) == pytest.approx(exp_p / exp_n)
    assert float(out["exposure_gap"][0]) == pytest.approx(exp_n - exp_p)
