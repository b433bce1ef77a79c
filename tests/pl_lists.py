"""Small Plackett-Luce test lists shared by the PL tests: :func:`pad` lays out lists of
(score, judgment, group) of different lengths as padded (Q, N) tensors and a mask."""

from __future__ import annotations

import torch


def pad(rows):
    """Pad lists of (score, judgment, group) of different lengths into (Q, N) tensors + mask."""
    n = max(len(r) for r in rows)
    s = torch.zeros(len(rows), n, dtype=torch.float64)
    y = torch.zeros_like(s)
    g = torch.zeros(len(rows), n, dtype=torch.long)
    m = torch.zeros(len(rows), n, dtype=torch.bool)
    for q, r in enumerate(rows):
        for i, (si, yi, gi) in enumerate(r):
            s[q, i], y[q, i], g[q, i], m[q, i] = si, yi, gi, True
    return s, y, g, m
