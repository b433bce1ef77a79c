"""The Plackett-Luce policy objective E[DCG] - lambda * D(pi) and its PL-Rank surrogate (the
disparity D of expected group exposure, :mod:`fairltr.losses.pl_sampling` for the sampling and
the gradient estimators; :mod:`fairltr.losses.plackett_luce` names both).

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

import numpy as np
import torch

from fairltr.errors import ConfigError
from fairltr.losses.exposure import V1, check_group_ids
from fairltr.losses.pl_sampling import (
    ESTIMATORS, BaselineCarry, Estimator, _kernel_seed, _kernels, _numpy64, check_cutoff, dcg_gains, expected_dcg,
    plrank_gradient, reinforce_surrogate, sample_rankings, sampled_exposure,
)

__all__ = ["DISPARITIES", "Disparity", "PLObjectiveTerms", "PLGradientTerms", "group_means", "policy_disparity",
           "disparity_gradient", "pl_policy_objective", "pl_policy_gradient"]

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


class PLGradientTerms(NamedTuple):
    """``grad`` (Q, N): the estimate of d/ds [E[DCG] - lam * D] (0 on padding; no autograd graph);
    ``total``, ``dcg``, ``disparity``: as :class:`PLObjectiveTerms` (summed over queries)."""

    grad: torch.Tensor
    total: torch.Tensor
    dcg: torch.Tensor
    disparity: torch.Tensor


def pl_policy_objective(scores: torch.Tensor, judgments: torch.Tensor, groups: torch.Tensor, mask: torch.Tensor,
                        **options) -> PLObjectiveTerms:
    """:func:`pl_policy_gradient`'s estimate as a surrogate, sum(grad * scores), whose autograd
    gradient through any scorer is the estimate (the Lightning module's loss)."""
    t = pl_policy_gradient(scores.detach(), judgments, groups, mask, **options)
    return PLObjectiveTerms((t.grad.to(scores.dtype) * scores).sum(), t.total, t.dcg, t.disparity)


def pl_policy_gradient(
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
) -> PLGradientTerms:
    """Sample ``n_samples`` rankings per query (or use ``rankings``), estimate E[DCG@cutoff], the
    expected exposure (0 past ``cutoff``) and D, and the ``estimator``'s estimate of the gradient of
    E[DCG] - lam * D with respect to the scores. The same samples give the exposure estimate and
    the gradient (as PL-Rank does). ``estimator``: ``"plrank"`` (PL-Rank with the position
    baseline, and its carried part when a ``carry`` is given: pass the same one every iteration of
    a batch), ``"plrank_plain"`` (PL-Rank as published) or ``"reinforce"``."""
    _check_choice("estimator", estimator, ESTIMATORS)
    _check_lam_and_samples(lam, n_samples)
    cutoff = check_cutoff(cutoff)
    scores = scores.detach()
    y = judgments.to(scores.dtype)
    baseline = estimator == "plrank"
    kernels = _kernels() if scores.device.type == "cpu" else None
    consts = _constants(carry, y, groups, mask, lam, baseline, n_groups, merit, estimator == "reinforce")
    channels = consts.channels
    _check_choice("disparity", disparity, DISPARITIES)
    _check_choice("reduce", reduce, ("max", "mean"))
    if rankings is None and kernels is not None and channels is not None:  # one compiled pass
        return _compiled_gradient(kernels, scores, mask, consts, carry if baseline else None, lam, n_samples,
                                  generator, cutoff, baseline, disparity == "squared", reduce == "max")
    if rankings is None:
        rankings = sample_rankings(scores, mask, n_samples, generator)
    exposure, dcg = _exposure_and_dcg(kernels, rankings, y, mask, cutoff, scores.dtype)
    grads = None if channels is None else plrank_gradient(scores, rankings, channels, mask, cutoff=cutoff,
                                                          baseline=baseline, carry=carry)
    means = (consts.indicators * exposure.to(torch.float64)).sum(-1).T / consts.scale
    d, kappa = _disparity_terms(means, consts.present, consts.scale, disparity, reduce)
    d = d.sum().to(scores.dtype)
    dcg = dcg.to(scores.dtype)
    if grads is None:  # REINFORCE on the combined rewards
        grad = _reinforce_gradient(scores, rankings, y, groups, mask, kappa, lam, cutoff)
        return PLGradientTerms(grad, dcg - lam * d, dcg, d)
    grad = _combined_gradient(grads, kappa, lam, baseline)
    return PLGradientTerms(grad.masked_fill(~mask, 0.0).to(scores.dtype), dcg - lam * d, dcg, d)


def _check_lam_and_samples(lam: float, n_samples: int) -> None:
    """A one-line :class:`ConfigError` unless ``lam`` is finite and >= 0 and ``n_samples`` an integer >= 1."""
    if not math.isfinite(lam) or lam < 0:
        raise ConfigError(f"lambda must be a finite number >= 0, got {lam!r}")
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 1:
        raise ConfigError(f"samples must be an integer >= 1, got {n_samples!r}")


def _reinforce_gradient(scores: torch.Tensor, rankings: torch.Tensor, y: torch.Tensor, groups: torch.Tensor,
                        mask: torch.Tensor, kappa: torch.Tensor, lam: float, cutoff: int | None) -> torch.Tensor:
    """REINFORCE's gradient of E[DCG] - lam * D over ``rankings``: one reward per item, its gain
    minus lam V1 kappa of its group."""
    codes = groups.masked_fill(~mask, 0).long()
    rewards = dcg_gains(y, mask) - lam * V1 * kappa.gather(1, codes).masked_fill(~mask, 0.0).to(y.dtype)
    leaf = scores.clone().requires_grad_(True)
    with torch.enable_grad():
        return torch.autograd.grad(reinforce_surrogate(leaf, rankings, rewards, mask, cutoff=cutoff).sum(), leaf)[0]


def _combined_gradient(grads: torch.Tensor, kappa: torch.Tensor, lam: float, baseline: bool) -> torch.Tensor:
    """PL-Rank's gradient of E[DCG] - lam * D from its channels (``grads[0]`` the gains', then one
    per group indicator; group 0's left out with the ``baseline``) and kappa (dD/dExp per group)."""
    grad = grads[0]
    if lam > 0:  # dD/dExp is constant within a group: kappa_p of group p
        if baseline:  # group 0's channel is left out: 1[group 0] = 1 - the others, and 1 adds nothing
            kappa = kappa[:, 1:] - kappa[:, :1]
        grad = grad - lam * V1 * (grads[1:] * kappa.T.to(grads.dtype).unsqueeze(-1)).sum(0)
    return grad


def _compiled_gradient(kernels, scores, mask, consts, carry, lam, n_samples, generator, cutoff, baseline, squared,
                       use_max) -> PLGradientTerms:
    """The compiled path of :func:`pl_policy_gradient`. lambda = 0: one pass over the samples for
    the exposure, E[DCG] and the gains' gradient. lambda > 0: two (the rewards need this
    iteration's exposure): the rankings' displayed items and their exposure first, then D, kappa
    and the rewards gains - lambda V1 kappa_{group}, and their PL-Rank gradient from the kept items
    (the same value as a gradient per group's indicator, combined; one forward loop instead of
    G). The rest is numpy and one compiled loop (this runs every iteration of every bucket)."""
    inputs = kernels.prepare(_numpy64(scores), consts.mask_np, consts.channels_np[:1])
    beta = carry.value((1, *consts.mask_np.shape), torch.float64, scores.device) if carry is not None else None
    beta = None if beta is None else beta.permute(1, 2, 0).numpy()
    if baseline and (consts.spread[0] is None or consts.spread[0][0] != cutoff):
        consts.spread[0] = (cutoff, kernels.baseline_spread(inputs.n_real, consts.mask_np.shape[-1], cutoff))
    spread = consts.spread[0][1] if baseline else None
    q = consts.mask_np.shape[0]
    d, kappa = np.zeros(q), np.zeros((q, consts.n_groups))
    seed = _kernel_seed(generator)
    if lam > 0:
        gains = consts.channels_np[0]

        def rewards_of(exposure, _dcg):
            kernels.disparity_terms(exposure, consts.codes_np, consts.mask_np, consts.scale_np, consts.present_np,
                                    squared, use_max, d, kappa)
            return gains - (lam * V1) * np.take_along_axis(kappa, consts.codes_np, axis=1)

        sums = kernels.sample_gradient_two_pass(inputs, n_samples, seed, cutoff, rewards_of, baseline, beta, spread)
    else:
        sums = kernels.sample_gradient(inputs, n_samples, seed, cutoff, baseline, with_exposure=True, carry=beta,
                                       spread=spread)
        kernels.disparity_terms(sums.exposure / n_samples, consts.codes_np, consts.mask_np, consts.scale_np,
                                consts.present_np, squared, use_max, d, kappa)
    if carry is not None:
        carry.residual = torch.from_numpy(sums.residual).permute(2, 0, 1).div_(n_samples)
    dtype = scores.dtype
    grad = torch.from_numpy(np.where(consts.mask_np, sums.grad[..., 0] / n_samples, 0.0)).to(dtype)
    dcg_sum = torch.tensor(float(sums.dcg.sum()) / n_samples, dtype=dtype)
    d_sum = torch.tensor(float(d.sum()), dtype=dtype)
    return PLGradientTerms(grad, dcg_sum - lam * d_sum, dcg_sum, d_sum)


def disparity_gradient(exposure: torch.Tensor, groups: torch.Tensor, mask: torch.Tensor, *,
                       judgments: torch.Tensor | None = None, disparity: Disparity = "squared", merit: bool = False,
                       reduce: Literal["max", "mean"] = "max", n_groups: int | None = None
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """(D_q (Q,), kappa (Q, G)): :func:`policy_disparity` and its derivative with respect to the
    expected exposure of any one item of group p, kappa_qp = dD_q/dExp_i (the same for every item
    of the group: D reads group means), in closed form: with a_p = Exp(G_p) (/ U_p) and n_p the
    group's size, dD/da_p for p >= 1 is -w_p d'(a_0 - a_p) and dD/da_0 = sum_p w_p d'(a_0 - a_p)
    (d' = 2x squared, 1[x > 0] hinge; w_p = 1 for the pair that gives the max, 1 / (valid pairs)
    for the mean; pairs not both present have w = 0), and kappa_p = (dD/da_p) / (n_p U_p)."""
    _check_choice("disparity", disparity, DISPARITIES)
    _check_choice("reduce", reduce, ("max", "mean"))
    means, counts = group_means(exposure, groups, mask, n_groups)
    present = counts > 0
    scale = counts.clamp(min=1.0)
    if merit:
        if judgments is None:
            raise ConfigError("a merit-normalised disparity needs the judgments")
        merits, _ = group_means(judgments.to(exposure.dtype), groups, mask, means.shape[1])
        present = present & (merits > 0)
        unit = torch.where(present, merits, torch.ones_like(merits))
        means, scale = means / unit, scale * unit
    return _disparity_terms(means, present, scale, disparity, reduce)


def _disparity_terms(means, present, scale, disparity, reduce) -> tuple[torch.Tensor, torch.Tensor]:
    """The closed form of :func:`disparity_gradient` from the groups' a_p (Q, G), presence and
    n_p U_p."""
    diff = means[:, :1] - means[:, 1:]
    valid = present[:, :1] & present[:, 1:]
    if disparity == "squared":
        per, slope = diff.square(), 2.0 * diff
    else:
        per, slope = torch.clamp(diff, min=0.0), (diff > 0).to(diff.dtype)
    per, slope = per.masked_fill(~valid, 0.0), slope.masked_fill(~valid, 0.0)
    if reduce == "max":
        d, idx = per.max(dim=1)
        weight = torch.zeros_like(per).scatter_(1, idx.unsqueeze(1), 1.0)
    else:
        n_valid = valid.sum(dim=1, keepdim=True).clamp(min=1).to(per.dtype)
        d, weight = per.sum(dim=1) / n_valid[:, 0], torch.ones_like(per) / n_valid
    rest = weight * slope
    return d, torch.cat([rest.sum(dim=1, keepdim=True), -rest], dim=1) / scale


class _Constants(NamedTuple):
    """What :func:`pl_policy_gradient` reads of a batch that does not change between iterations
    (kept in the batch's carry): the reward channels (C, Q, N) (a tensor and its numpy view), the
    group count, each group's indicator (G, Q, N), its size n_p and merit unit U_p (Q, G) and
    presence, and the kernels' baseline spread (None until the kernels ask)."""

    key: tuple
    channels: torch.Tensor
    channels_np: object
    n_groups: int
    indicators: torch.Tensor
    scale: torch.Tensor
    unit: torch.Tensor
    present: torch.Tensor
    spread: list
    mask_np: object
    codes_np: object
    scale_np: object
    present_np: object


def _constants(carry, y, groups, mask, lam, baseline, n_groups, merit, reinforce) -> _Constants:
    """The batch's :class:`_Constants`, from ``carry``'s cache when it holds them for these tensors."""
    key = (id(y), id(groups), id(mask), tuple(mask.shape), lam > 0, baseline, n_groups, merit, reinforce)
    cached = getattr(carry, "_constants", None)
    if cached is not None and cached.key == key:
        return cached
    n = max(2, n_groups if n_groups is not None else (int(groups[mask].max()) + 1 if bool(mask.any()) else 1))
    codes = groups.masked_fill(~mask, 0).long()
    check_group_ids(codes, n)
    indicators = torch.stack([((codes == p) & mask).to(torch.float64) for p in range(n)])
    counts = indicators.sum(-1).T                                                 # (Q, G)
    present, unit = counts > 0, torch.ones_like(counts)
    if merit:
        merits = torch.einsum("gqn,qn->qg", indicators, y.to(torch.float64).masked_fill(~mask, 0.0)) / counts.clamp(min=1)
        present = present & (merits > 0)
        unit = torch.where(present, merits, unit)
    channels = None
    if not reinforce:
        first = 1 if baseline else 0  # with the baseline 1[group 0] = 1 - the others needs no channel
        channels = torch.cat([dcg_gains(y, mask).to(torch.float64).unsqueeze(0),
                              indicators[first:] if lam > 0 else indicators[:0]])
    scale = counts.clamp(min=1.0) * unit
    consts = _Constants(key, channels, None if channels is None else channels.numpy(), n, indicators, scale, unit,
                        present, [None], np.ascontiguousarray(mask.cpu().numpy()), codes.cpu().numpy(),
                        scale.cpu().numpy(), present.cpu().numpy())
    if carry is not None:
        carry._constants = consts
    return consts


def _exposure_and_dcg(kernels, rankings, y, mask, cutoff, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The sampled exposure (Q, N) and the sum over queries of E[DCG@cutoff] of ``rankings``."""
    if kernels is not None and rankings.device.type == "cpu":  # one compiled pass over the samples
        exposure_np, dcg_np = kernels.exposure_and_dcg(rankings.numpy(), _numpy64(dcg_gains(y, mask)),
                                                       mask.sum(dim=-1).numpy(), cutoff)
        return torch.from_numpy(exposure_np).to(dtype), torch.from_numpy(dcg_np).to(dtype).sum()
    return sampled_exposure(rankings, mask, dtype, cutoff), expected_dcg(rankings, y, mask, cutoff).sum()
