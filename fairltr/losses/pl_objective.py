"""The Plackett-Luce policy objective E[DCG] - lambda * D(pi) and its PL-Rank surrogate (the
disparity D of expected group exposure, :mod:`fairltr.losses.plackett_luce` for the sampling and
the gradient estimators; both names are also importable from there).

* a_p = Exp(G_p), the mean expected exposure of group p's items in the query (``merit=False``),
  or Exp(G_p) / U(G_p) with U the group's mean judgment (``merit=True``: exposure per merit);
* D_q = reduce over protected groups p >= 1 (``max`` or ``mean``) of d(a_0 - a_p), d(x) = x^2
  (``squared``) or max(0, x) (``hinge``); a pair whose groups are not both present (or has a group
  of zero merit) adds 0;
* objective, summed over queries: E[DCG]_q - lam * D_q (DCG@K and exposure 0 past K with a
  ``cutoff``).

D depends on the policy only through the expected exposures, so its gradient is that of
E[sum_k theta_k rho_{y_k}] with rho_i = gain_i - lam * V1 * dD/dExp_i (V1 = 1 / ln 2: exposure
weights are V1 times the DCG weights), estimated from the same samples as the exposure.
dD/dExp_i is the same for every item of one group of one query (D reads group means), and the
PL-Rank estimate is linear in the rewards (and in the baseline), so the estimator's reward
channels are the gains and each group's indicator: with the compiled kernels one pass over the
samples estimates the exposure, E[DCG] and the gradient of every channel; the gradient is then
grad(gains) - lam V1 sum_p kappa_p grad(1[group p]) with kappa_p = dD/dExp of group p (the same
value as the gradient of the combined rewards on the same samples; with the baseline a reward
shared by every item has a gradient of exactly 0, so group 0's channel is left out and the sum
runs over p >= 1 with kappa_p - kappa_0). Without the kernels, or on
given rankings, the exposure comes first and the channels' gradients second, from the same samples.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

import torch

from fairltr.errors import ConfigError
from fairltr.losses.exposure import V1, check_group_ids
from fairltr.losses.plackett_luce import (
    ESTIMATORS, BaselineCarry, Estimator, _kernel_seed, _kernels, _numpy64, check_cutoff, dcg_gains, expected_dcg,
    plrank_gradient, reinforce_surrogate, sample_rankings, sampled_exposure,
)

__all__ = ["DISPARITIES", "Disparity", "PLObjectiveTerms", "group_means", "policy_disparity", "pl_policy_objective"]

DISPARITIES = ("squared", "hinge")
Disparity = Literal["squared", "hinge"]


def group_means(values: torch.Tensor, groups: torch.Tensor, mask: torch.Tensor, n_groups: int | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean of ``values`` (Q, N) over each group's items per query, (Q, G), and the group sizes (Q, G)."""
    if n_groups is None:
        n_groups = int(groups[mask].max().item()) + 1 if mask.any() else 1
    n_groups = max(n_groups, 2)
    index = groups.masked_fill(~mask, 0).long()
    check_group_ids(index, n_groups)
    shape = (values.shape[0], n_groups)
    counts = torch.zeros(shape, dtype=values.dtype, device=values.device).scatter_add(1, index, mask.to(values.dtype))
    sums = torch.zeros(shape, dtype=values.dtype, device=values.device).scatter_add(
        1, index, values.masked_fill(~mask, 0.0))
    return sums / counts.clamp(min=1.0), counts


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {list(allowed)}, got {value!r}")


def policy_disparity(
    exposure: torch.Tensor,
    groups: torch.Tensor,
    mask: torch.Tensor,
    *,
    judgments: torch.Tensor | None = None,
    disparity: Disparity = "squared",
    merit: bool = False,
    reduce: Literal["max", "mean"] = "max",
    n_groups: int | None = None,
) -> torch.Tensor:
    """D_q of the module docstring from per-item expected exposure (Q, N); (Q,), differentiable
    in ``exposure``. ``merit=True`` needs ``judgments`` (>= 0): a_p = Exp(G_p) / mean judgment of G_p."""
    _check_choice("disparity", disparity, DISPARITIES)
    _check_choice("reduce", reduce, ("max", "mean"))
    means, counts = group_means(exposure, groups, mask, n_groups)
    present = counts > 0
    if merit:
        if judgments is None:
            raise ConfigError("a merit-normalised disparity needs the judgments")
        merits, _ = group_means(judgments.to(exposure.dtype), groups, mask, means.shape[1])
        present = present & (merits > 0)
        means = means / torch.where(present, merits, torch.ones_like(merits))
    diff = means[:, :1] - means[:, 1:]
    per_group = diff.square() if disparity == "squared" else torch.clamp(diff, min=0.0)
    valid = present[:, :1] & present[:, 1:]
    per_group = per_group.masked_fill(~valid, 0.0)
    if reduce == "max":
        return per_group.max(dim=1).values
    return per_group.sum(dim=1) / valid.sum(dim=1).clamp(min=1).to(per_group.dtype)


class PLObjectiveTerms(NamedTuple):
    """Summed over queries. ``surrogate``: maximise it (its gradient is the estimate);
    ``total = dcg - lam * disparity`` is the sampled estimate of the objective."""

    surrogate: torch.Tensor
    total: torch.Tensor
    dcg: torch.Tensor
    disparity: torch.Tensor


def pl_policy_objective(
    scores: torch.Tensor,
    judgments: torch.Tensor,
    groups: torch.Tensor,
    mask: torch.Tensor,
    *,
    lam: float,
    n_samples: int = 32,
    estimator: Estimator = "plrank",
    disparity: Disparity = "squared",
    merit: bool = False,
    reduce: Literal["max", "mean"] = "max",
    n_groups: int | None = None,
    generator: torch.Generator | None = None,
    rankings: torch.Tensor | None = None,
    cutoff: int | None = None,
    carry: BaselineCarry | None = None,
) -> PLObjectiveTerms:
    """Sample ``n_samples`` rankings per query (or use ``rankings``), estimate E[DCG@cutoff], the
    expected exposure (0 past ``cutoff``) and D, and build the surrogate of ``estimator`` for
    E[DCG] - lam * D. The same samples give the exposure estimate and the gradient (as PL-Rank
    does). ``estimator``: ``"plrank"`` (PL-Rank with the position baseline, and its carried part
    when a ``carry`` is given: pass the same one every iteration of a batch), ``"plrank_plain"``
    (PL-Rank as published) or ``"reinforce"``."""
    _check_choice("estimator", estimator, ESTIMATORS)
    if not math.isfinite(lam) or lam < 0:
        raise ConfigError(f"lambda must be a finite number >= 0, got {lam!r}")
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise ConfigError(f"samples must be an integer >= 1, got {n_samples!r}")
    cutoff = check_cutoff(cutoff)
    y = judgments.to(scores.dtype)
    baseline = estimator == "plrank"
    kernels = _kernels() if scores.device.type == "cpu" else None
    channels, n_groups = (None, n_groups) if estimator == "reinforce" else _reward_channels(y, groups, mask, lam,
                                                                                          n_groups, baseline)
    if rankings is None and kernels is not None and channels is not None:  # one compiled pass
        inputs = kernels.prepare(_numpy64(scores), mask.numpy(), channels.numpy())
        beta = carry.value(tuple(channels.shape), torch.float64, scores.device) if baseline and carry else None
        sums = kernels.sample_gradient(inputs, n_samples, _kernel_seed(generator), cutoff, baseline,
                                       with_exposure=True, carry=None if beta is None else beta.permute(1, 2, 0).numpy())
        if baseline and carry is not None:
            carry.residual = torch.from_numpy(sums.residual).permute(2, 0, 1).div_(n_samples)
        exposure = torch.from_numpy(sums.exposure).div_(n_samples).to(scores.dtype)
        dcg = torch.from_numpy(sums.dcg).div_(n_samples).to(scores.dtype).sum()
        grads = torch.from_numpy(sums.grad).permute(2, 0, 1).div_(n_samples).to(scores.dtype)
    else:
        if rankings is None:
            rankings = sample_rankings(scores, mask, n_samples, generator)
        exposure, dcg = _exposure_and_dcg(kernels, rankings, y, mask, cutoff, scores.dtype)
        grads = None if channels is None else plrank_gradient(scores, rankings, channels, mask, cutoff=cutoff,
                                                              baseline=baseline, carry=carry)
    d, coef = _disparity_and_coefficients(exposure, groups, mask, y, lam, disparity, merit, reduce, n_groups)
    if grads is None:  # REINFORCE on the combined rewards
        rewards = dcg_gains(y, mask) - lam * V1 * coef
        surrogate = reinforce_surrogate(scores, rankings, rewards, mask, cutoff=cutoff).sum()
        return PLObjectiveTerms(surrogate, dcg - lam * d, dcg, d)
    grad = grads[0]
    if lam > 0:  # dD/dExp is constant within a group: its group mean is its value
        kappa, _ = group_means(coef, groups, mask, n_groups)                        # (Q, G)
        if baseline:  # group 0's channel is left out: 1[group 0] = 1 - the others, and 1 adds nothing
            kappa = kappa[:, 1:] - kappa[:, :1]
        grad = grad - lam * V1 * torch.einsum("pqn,qp->qn", grads[1:].to(kappa.dtype), kappa)
    surrogate = (grad.masked_fill(~mask, 0.0) * scores).sum()
    return PLObjectiveTerms(surrogate, dcg - lam * d, dcg, d)


def _reward_channels(y, groups, mask, lam, n_groups, baseline) -> tuple[torch.Tensor, int]:
    """(C, Q, N) float64: the gains, then (lam > 0) each group's indicator (from group 1 on with the
    baseline: a reward shared by every item of a query gets a gradient of exactly 0 there, so
    1[group 0] = 1 - sum of the others needs no channel); and the group count."""
    n_groups = max(2, n_groups if n_groups is not None else (int(groups[mask].max()) + 1 if bool(mask.any()) else 1))
    codes = groups.masked_fill(~mask, 0).long()
    check_group_ids(codes, n_groups)
    channels = [dcg_gains(y, mask).to(torch.float64)]
    if lam > 0:
        channels += [((codes == p) & mask).to(torch.float64) for p in range(1 if baseline else 0, n_groups)]
    return torch.stack(channels), n_groups


def _exposure_and_dcg(kernels, rankings, y, mask, cutoff, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The sampled exposure (Q, N) and the sum over queries of E[DCG@cutoff] of ``rankings``."""
    if kernels is not None and rankings.device.type == "cpu":  # one compiled pass over the samples
        exposure_np, dcg_np = kernels.exposure_and_dcg(rankings.numpy(), _numpy64(dcg_gains(y, mask)),
                                                       mask.sum(dim=-1).numpy(), cutoff)
        return torch.from_numpy(exposure_np).to(dtype), torch.from_numpy(dcg_np).to(dtype).sum()
    return sampled_exposure(rankings, mask, dtype, cutoff), expected_dcg(rankings, y, mask, cutoff).sum()


def _disparity_and_coefficients(exposure, groups, mask, y, lam, disparity, merit, reduce, n_groups):
    """(sum of D over queries, dD/dExp per item (Q, N); zeros when lam = 0), D from ``exposure``."""
    exposure = exposure.detach().requires_grad_(True)
    with torch.enable_grad():
        d = policy_disparity(exposure, groups, mask, judgments=y, disparity=disparity, merit=merit,
                             reduce=reduce, n_groups=n_groups).sum()
        coef = torch.autograd.grad(d, exposure)[0] if lam > 0 and d.requires_grad else torch.zeros_like(exposure)
    return d.detach(), coef
