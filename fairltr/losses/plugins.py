"""Registry of fairness losses, each declaring its hyper-parameters once: the lookups
(:func:`get_loss`, :func:`available_losses`) over the built-ins of :mod:`fairltr.losses.builtin`
(imported here, so a lookup never misses one) and the ``fairltr.losses`` entry points.

Lightning modules, Optuna search spaces, the CLI and MLflow params all read the same
:class:`HyperParam` declarations. What a declaration is, the kinds and the registry object live in
:mod:`fairltr.losses.declaration` (re-exported here).
"""

from __future__ import annotations

import fairltr.losses.builtin  # noqa: F401 (registers the built-in losses)
import fairltr.losses.declaration as _declaration
from fairltr.losses.declaration import (  # noqa: F401 (re-exported)
    _REGISTRY, ENTRY_POINT_GROUP, FUSED_VARIANTS, LOSSES, RETRIEVAL_INPUTS, FairnessLoss, HyperParam, _option_value,
    register_loss, registry_snapshot, reload_entry_points, temporary_loss, unregister_loss,
)

__all__ = [*_declaration.__all__, "get_loss", "available_losses"]


def get_loss(name: str) -> FairnessLoss:
    """The registered loss called ``name``; the error lists the available names."""
    return LOSSES.require(name)


def available_losses(kind: str | None = None) -> list[str]:
    """Names of the registered losses, optionally of one kind."""
    return sorted(n for n in LOSSES.names() if kind is None or LOSSES.require(n).kind == kind)
