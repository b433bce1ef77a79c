"""DELTR's objective over a padded batch: sum_q L_q + gamma * U_q (docs/spec.md §2)."""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

import torch

from fairltr.errors import ConfigError
from fairltr.losses.builtin import GAMMA
from fairltr.losses.listnet import listnet_loss
from fairltr.losses.plugins import get_loss

__all__ = ["ObjectiveTerms", "deltr_objective", "ranking_loss_options"]


class ObjectiveTerms(NamedTuple):
    """Summed over queries: ``total = listnet + gamma * exposure``."""

    total: torch.Tensor
    listnet: torch.Tensor
    exposure: torch.Tensor


def deltr_objective(
    scores: torch.Tensor,
    judgments: torch.Tensor,
    groups: torch.Tensor,
    mask: torch.Tensor,
    gamma: float,
    *,
    fairness_loss: str = "exposure_hinge",
    reduce: str | None = None,
    n_groups: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> ObjectiveTerms:
    """ListNet plus ``gamma`` times the registered ranking fairness loss, summed over queries
    (``gamma`` checked by :data:`~fairltr.losses.builtin.GAMMA`).

    The loss is called ``fn(scores, groups, mask, reduce=, n_groups=, **options)`` (plus
    ``judgments=`` when it needs them), with ``options`` its declared options updated by the
    caller's ``options`` (:meth:`~fairltr.losses.FairnessLoss.resolve_options`: an undeclared
    option is a ConfigError). ``reduce`` (``"max"`` or ``"mean"``), when given, sets the declared
    ``reduce`` option; a loss that declares none gets ``reduce="max"``.
    """
    gamma = GAMMA.validate(gamma)
    listnet = listnet_loss(scores, judgments, mask).sum()
    loss = get_loss(fairness_loss)
    if loss.kind != "ranking":
        raise ConfigError(f"fairness loss {fairness_loss!r} is a {loss.kind} loss, not a ranking loss")
    call = ranking_loss_options(fairness_loss, reduce=reduce, options=options)
    if loss.needs_judgments:
        call["judgments"] = judgments
    if loss.fn is None or gamma == 0:
        exposure = torch.zeros((), dtype=scores.dtype, device=scores.device)
        if loss.fn is not None:
            with torch.no_grad():
                exposure = loss.fn(scores, groups, mask, n_groups=n_groups, **call).sum()
        return ObjectiveTerms(listnet, listnet, exposure)
    exposure = loss.fn(scores, groups, mask, n_groups=n_groups, **call).sum()
    return ObjectiveTerms(listnet + gamma * exposure, listnet, exposure)


def ranking_loss_options(fairness_loss: str, *, reduce: str | None = None,
                         options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The keyword options the ranking loss ``fairness_loss`` is called with: its declared
    options, the caller's validated ``options``, and ``reduce`` (given, declared, or ``"max"``).

    A ``reduce`` given both ways must agree; ``reduce`` must be ``"max"`` or ``"mean"``.
    """
    loss = get_loss(fairness_loss)
    overrides = dict(options or {})
    if reduce is not None:
        if "reduce" in overrides and overrides["reduce"] != reduce:
            raise ConfigError(f"reduce={reduce!r} and options reduce={overrides['reduce']!r} disagree")
        if "reduce" in loss.options:
            overrides["reduce"] = reduce
    resolved = loss.resolve_options(overrides)
    resolved.setdefault("reduce", "max" if reduce is None else reduce)
    if resolved["reduce"] not in ("max", "mean"):
        raise ConfigError(f"reduce must be 'max' or 'mean', got {resolved['reduce']!r}")
    return resolved
