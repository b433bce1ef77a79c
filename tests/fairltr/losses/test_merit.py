"""Merit-proportional exposure (disparate treatment) as a DELTR penalty: values against a direct
computation, gradient against finite differences, the registry entry, and a DELTR fit."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from fairltr import DELTR
from fairltr.errors import DataError
from fairltr.losses import deltr_objective, disparate_treatment_hinge, get_loss

ROWS = [  # (score, judgment >= 0, group)
    [(1.2, 3, 0), (-0.8, 1, 1), (-0.2, 2, 0), (-0.5, 2, 1), (0.0, 1, 2)],
    [(0.1, 1, 1), (0.5, 2, 0), (-0.3, 0, 0)],
    [(0.3, 2, 0), (0.2, 1, 0)],               # one group only -> 0
    [(0.3, 0, 1), (0.2, 1, 0), (0.9, 0, 1)],  # protected merit 0 -> pair undefined -> 0
]


def _pad(rows):
    n = max(len(r) for r in rows)
    s = torch.zeros(len(rows), n, dtype=torch.float64)
    y, g, m = torch.zeros_like(s), torch.zeros(len(rows), n, dtype=torch.long), torch.zeros(len(rows), n, dtype=torch.bool)
    for q, r in enumerate(rows):
        for i, (si, yi, gi) in enumerate(r):
            s[q, i], y[q, i], g[q, i], m[q, i] = si, yi, gi, True
    return s, y, g, m


def _direct(row, reduce):
    z = sum(math.exp(si) for si, _, _ in row)
    exp = [math.exp(si) / z / math.log(2) for si, _, _ in row]
    ratio = {}
    for grp in sorted({gi for _, _, gi in row}):
        idx = [i for i, (_, _, gi) in enumerate(row) if gi == grp]
        merit = sum(row[i][1] for i in idx) / len(idx)
        if merit > 0:
            ratio[grp] = sum(exp[i] for i in idx) / len(idx) / merit
    terms = [max(0.0, ratio[0] - ratio[p]) ** 2 for p in ratio if p >= 1 and 0 in ratio]
    if not terms:
        return 0.0
    return max(terms) if reduce == "max" else sum(terms) / len(terms)


@pytest.mark.parametrize("reduce", ["max", "mean"])
def test_values_match_the_direct_definition(reduce):
    s, y, g, m = _pad(ROWS)
    got = disparate_treatment_hinge(s, g, m, judgments=y, reduce=reduce, n_groups=3)
    want = [_direct(r, reduce) for r in ROWS]
    assert got.tolist() == pytest.approx(want, abs=1e-14)
    assert want[0] > 0 and want[2] == 0 and want[3] == 0


def test_gradient_matches_finite_differences():
    s, y, g, m = _pad(ROWS[:2])
    s = s.clone().requires_grad_(True)
    fn = lambda t: disparate_treatment_hinge(t, g, m, judgments=y, n_groups=3)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (s,), eps=1e-6, atol=1e-8)


def test_registered_for_deltr_and_objective_passes_the_judgments():
    loss = get_loss("disparate_treatment_hinge")
    assert loss.kind == "ranking" and loss.needs_judgments and loss.weight_param.name == "gamma"
    s, y, g, m = _pad(ROWS)
    t = deltr_objective(s, y, g, m, 10.0, fairness_loss="disparate_treatment_hinge", n_groups=3)
    assert float(t.exposure) == pytest.approx(sum(_direct(r, "max") for r in ROWS), abs=1e-13)


def test_negative_judgments_are_rejected():
    s, y, g, m = _pad(ROWS)
    with pytest.raises(DataError, match="judgments >= 0"):
        disparate_treatment_hinge(s, g, m, judgments=y - 1.0)


def _merit_table(seed=0, n_queries=16, n=12):
    """Protected items score lower on a feature than their merit says."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        for _ in range(n):
            prot = int(rng.random() < 0.4)
            merit = rng.integers(0, 4)
            rows.append({"query_id": q + 1, "protected": prot, "x1": merit + rng.normal() - 1.5 * prot,
                         "x2": rng.normal(), "judgment": float(merit + (1 - prot))})
    return pd.DataFrame(rows)


def test_deltr_with_the_merit_penalty_shrinks_it():
    df = _merit_table()
    plain = DELTR(gamma=0.0, fairness_loss="disparate_treatment_hinge").fit(df)
    fair = DELTR(gamma=1e4, fairness_loss="disparate_treatment_hinge").fit(df)
    assert plain.history[-1]["exposure"] > 0
    assert fair.history[-1]["exposure"] < 0.2 * plain.history[-1]["exposure"]
