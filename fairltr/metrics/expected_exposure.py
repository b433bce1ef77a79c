"""Expected exposure (Diaz, Mitra, Ekstrand, Biega, Carterette, CIKM 2020; the TREC Fair Ranking
track's EE-L / EE-D / EE-R), for a stochastic policy and for a deterministic ranking.

Browsing model: rank-biased precision with patience gamma; the exposure of the item at 1-based
rank r is ``gamma ** (r - 1)`` (0 below a cut-off ``k`` when one is given).

* expected exposure of item i under a policy pi: eps_i = E_{sigma ~ pi}[gamma ** (rank_sigma(i) - 1)],
  estimated by the mean over S sampled rankings (a deterministic ranking is S = 1);
* target exposure eps*_i: the ideal policy orders the relevance grades decreasingly and shuffles
  uniformly within a grade; an item whose grade has m items and a items of a strictly higher grade
  above it gets the mean exposure of ranks a+1..a+m:
  eps*_i = (1/m) sum_{r=a+1}^{a+m} gamma ** (r - 1)  (every judgment value is a grade, 0 included);
* per query:  EE-D = ||eps||^2 (disparity, lower is better), EE-R = <eps, eps*> (relevance, higher is
  better), EE-L = ||eps - eps*||^2 = EE-D - 2 EE-R + ||eps*||^2 (lower is better);
* group level: eps_g = sum of eps_i over the items of group g (and eps*_g likewise); the same three
  quantities over groups instead of items give ``group_ee_l``, ``group_ee_d``, ``group_ee_r``.

Shapes: ranks are ``(S, Q, N)`` (S sampled rankings of Q padded queries) or ``(Q, N)`` (one
deterministic ranking); ``mask`` is ``(Q, N)``, True on real candidates; padded slots get exposure 0
and contribute nothing. Everything is one tensor op over samples x queries x candidates.
These signatures are stable (the Plackett-Luce policy uses them).
"""

from __future__ import annotations

import torch

from fairltr.errors import ConfigError

__all__ = [
    "rbp_exposure", "expected_exposure", "target_exposure", "ee_from_exposure", "group_exposure",
    "expected_exposure_metrics", "check_patience",
]


def check_patience(patience: float) -> float:
    """The RBP patience gamma, a float in the open interval (0, 1)."""
    try:
        g = float(patience)
    except (TypeError, ValueError):
        raise ConfigError(f"patience must be a number in (0, 1), got {patience!r}") from None
    if not 0.0 < g < 1.0:
        raise ConfigError(f"patience must be in the open interval (0, 1), got {patience!r}")
    return g


def rbp_exposure(ranks: torch.Tensor, mask: torch.Tensor, patience: float = 0.5, k: int | None = None) -> torch.Tensor:
    """gamma ** (rank - 1) for 1-based ``ranks`` of any shape ending in (Q, N); 0 on padded slots
    and (with ``k``) below rank k."""
    g = check_patience(patience)
    r = ranks.to(torch.float64)
    v = torch.pow(torch.tensor(g, dtype=torch.float64, device=r.device), r - 1.0)
    keep = mask.expand_as(r) if mask.dim() < r.dim() else mask
    if k is not None:
        keep = keep & (ranks <= k)
    return torch.where(keep, v, torch.zeros((), dtype=torch.float64, device=r.device))


def expected_exposure(ranks: torch.Tensor, mask: torch.Tensor, patience: float = 0.5,
                      k: int | None = None) -> torch.Tensor:
    """eps (Q, N): the mean RBP exposure over the sampled rankings ``ranks`` (S, Q, N), or the
    exposure of one deterministic ranking (Q, N)."""
    v = rbp_exposure(ranks, mask, patience, k)
    return v.mean(dim=0) if v.dim() == 3 else v


def target_exposure(judgments: torch.Tensor, mask: torch.Tensor, patience: float = 0.5,
                    k: int | None = None) -> torch.Tensor:
    """eps* (Q, N): the expected exposure of the ideal policy (grades decreasing, uniform within a
    grade): gamma^a (1 - gamma^m) / (m (1 - gamma)) for an item with a items of a higher grade and
    m items of its grade (ranks beyond ``k`` count 0)."""
    g = check_patience(patience)
    y = judgments.to(torch.float64)
    neg_inf = torch.tensor(float("-inf"), dtype=torch.float64, device=y.device)
    y = torch.where(mask, y, neg_inf)
    asc = torch.sort(y, dim=-1).values
    n = y.shape[-1]
    right = torch.searchsorted(asc, y.contiguous(), right=True)
    left = torch.searchsorted(asc, y.contiguous(), right=False)
    above = (n - right).to(torch.float64)  # valid items of a strictly higher grade (padding sorts first)
    m = (right - left).to(torch.float64).clamp(min=1)
    if k is None:
        eps = g ** above * (1.0 - g ** m) / (m * (1.0 - g))
    else:  # ranks a+1 .. min(a+m, k)
        top = torch.clamp(torch.minimum(above + m, torch.tensor(float(k), dtype=torch.float64)) - above, min=0)
        eps = g ** above * (1.0 - g ** top) / (m * (1.0 - g))
    return torch.where(mask, eps, torch.zeros((), dtype=torch.float64, device=y.device))


def ee_from_exposure(exposure: torch.Tensor, target: torch.Tensor) -> dict[str, torch.Tensor]:
    """``ee_l``, ``ee_d``, ``ee_r`` over the last axis (items or groups); padded entries must be 0."""
    d = (exposure * exposure).sum(-1)
    r = (exposure * target).sum(-1)
    diff = exposure - target
    return {"ee_l": (diff * diff).sum(-1), "ee_d": d, "ee_r": r}


def group_exposure(exposure: torch.Tensor, groups: torch.Tensor, mask: torch.Tensor,
                   n_groups: int | None = None) -> torch.Tensor:
    """(Q, G): the sum of ``exposure`` (Q, N) over each group's items; ``groups`` holds integer
    codes 0..G-1 (G = ``n_groups`` or the largest code + 1)."""
    codes = torch.where(mask, groups.to(torch.int64), torch.zeros((), dtype=torch.int64, device=groups.device))
    if n_groups is None:
        n_groups = int(codes.max().item()) + 1 if codes.numel() else 1
    if codes.numel() and (int(codes.min().item()) < 0 or int(codes.max().item()) >= n_groups):
        raise ConfigError(f"group codes must be integers in 0..{n_groups - 1}")
    out = torch.zeros(exposure.shape[:-1] + (n_groups,), dtype=torch.float64, device=exposure.device)
    return out.scatter_add_(-1, codes, torch.where(mask, exposure.to(torch.float64), 0.0))


def expected_exposure_metrics(
    ranks: torch.Tensor, judgments: torch.Tensor, mask: torch.Tensor, patience: float = 0.5, *,
    groups: torch.Tensor | None = None, n_groups: int | None = None, k: int | None = None,
) -> dict[str, torch.Tensor]:
    """Per-query (Q,) ``ee_l``, ``ee_d``, ``ee_r`` of the policy whose sampled rankings are ``ranks``
    (S, Q, N) or of one ranking (Q, N), against the judgments' ideal policy. With ``groups`` also
    ``group_exposure`` and ``group_target_exposure`` (Q, G) and ``group_ee_l``, ``group_ee_d``,
    ``group_ee_r`` (Q,)."""
    eps = expected_exposure(ranks, mask, patience, k)
    target = target_exposure(judgments, mask, patience, k)
    out = ee_from_exposure(eps, target)
    if groups is not None:
        ge = group_exposure(eps, groups, mask, n_groups)
        gt = group_exposure(target, groups, mask, ge.shape[-1])
        out["group_exposure"], out["group_target_exposure"] = ge, gt
        out.update({f"group_{key}": v for key, v in ee_from_exposure(ge, gt).items()})
    return out
