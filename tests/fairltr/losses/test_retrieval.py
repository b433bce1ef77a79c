"""lakda_kl and mse_align against numpy/scipy, masking = dropping columns, and gradcheck."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.special import rel_entr, softmax

from fairltr.losses import lakda_kl, mse_align


def test_kl_matches_scipy():
    g = torch.Generator().manual_seed(0)
    s, sp = torch.randn(4, 6, generator=g, dtype=torch.float64), torch.randn(4, 6, generator=g, dtype=torch.float64)
    p, q = softmax(s.numpy() / 0.5, axis=1), softmax(sp.numpy() / 0.5, axis=1)
    ref = rel_entr(p, q).sum(1).mean()
    assert lakda_kl(s, sp, temperature=0.5).item() == pytest.approx(ref, rel=1e-12)
    sym = 0.5 * (rel_entr(p, q).sum(1) + rel_entr(q, p).sum(1)).mean()
    assert lakda_kl(s, sp, temperature=0.5, symmetric=True).item() == pytest.approx(sym, rel=1e-12)
    assert lakda_kl(s, s).item() == pytest.approx(0.0, abs=1e-15)


def test_mask_equals_dropping_columns():
    g = torch.Generator().manual_seed(1)
    s, sp = torch.randn(3, 7, generator=g, dtype=torch.float64), torch.randn(3, 7, generator=g, dtype=torch.float64)
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[:, [2, 5]] = False
    keep = [0, 1, 3, 4, 6]
    assert lakda_kl(s, sp, mask=mask).item() == pytest.approx(lakda_kl(s[:, keep], sp[:, keep]).item(), rel=1e-12)
    # masked scores may be anything, even huge, without changing the value
    s2 = s.clone()
    s2[:, 2] = 1e6
    assert lakda_kl(s2, sp, mask=mask).item() == pytest.approx(lakda_kl(s, sp, mask=mask).item(), rel=1e-12)


def test_gradients_reach_both_sides():
    g = torch.Generator().manual_seed(2)
    s = torch.randn(2, 5, generator=g, dtype=torch.float64, requires_grad=True)
    sp = torch.randn(2, 5, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: lakda_kl(a, b, temperature=0.7, symmetric=True), (s, sp))
    lakda_kl(s, sp).backward()
    assert s.grad.abs().sum() > 0 and sp.grad.abs().sum() > 0


def test_mse_align():
    a, b = np.random.default_rng(0).normal(size=(2, 4, 3))
    assert mse_align(torch.tensor(a), torch.tensor(b)).item() == pytest.approx(((a - b) ** 2).mean())
