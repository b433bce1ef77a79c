"""What a fairness loss declaration is (:class:`FairnessLoss`, its :class:`HyperParam` weights and
options) and the registry object the declarations are registered in (:data:`LOSSES`,
:func:`register_loss`). This module names no declaration: the built-ins
(:mod:`fairltr.losses.builtin`) import it, and :mod:`fairltr.losses.plugins` (the lookups, which
re-exports every name here) imports the built-ins first, so no declaration reaches the code that
looks it up.

Lightning modules, Optuna search spaces, the CLI and MLflow params all read the same
:class:`HyperParam` declarations. Third-party packages add losses through the entry-point
group ``fairltr.losses``: the entry point names a :class:`FairnessLoss` instance (or a
zero-argument callable returning one).

Kinds:
* ``"ranking"``: ``fn(scores, groups, mask, **options) -> (Q,)`` per-query penalty; the objective
  is ``listnet + weight * penalty`` with ``weight`` the loss's ``weight_param`` (``gamma``).
* ``"retrieval"``: bi-encoder regularisers (see :mod:`fairltr.losses.retrieval`); weight ``alpha``.
  ``inputs`` declares what ``fn`` compares: ``"scores"`` (the default) receives
  ``fn(scores, parallel_scores, **options)``, the (B, D) scores of the queries and of their parallel
  versions against the same batch documents; ``"embeddings"`` receives
  ``fn(query_embeddings, parallel_embeddings, **options)``, the two (B, H) query embeddings.
* ``"policy"``: a disparity of a stochastic (Plackett-Luce) policy's expected exposure,
  ``fn(exposure, groups, mask, *, judgments, **options) -> (Q,)``; the objective is
  ``E[DCG] - lambda * D`` (:mod:`fairltr.losses.plackett_luce`, :class:`fairltr.PLRank`).

A loss with ``needs_judgments=True`` also receives ``judgments=`` (the training judgments, e.g.
the merit of merit-proportional exposure).

``options`` are a loss's declared keyword options with their defaults; ``option_choices`` may
restrict an option to a set of values. Callers pass their overrides through
:meth:`FairnessLoss.resolve_options`, which rejects an undeclared option or a value of the wrong
type (a :class:`~fairltr.errors.ConfigError` naming the loss and the option) and returns the
options ``fn`` is called with.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping

from fairltr.errors import ConfigError
from fairltr.plugins.params import HyperParam
from fairltr.plugins.registry import PluginRegistry

__all__ = [
    "HyperParam",
    "FairnessLoss",
    "register_loss",
    "unregister_loss",
    "reload_entry_points",
    "temporary_loss",
    "registry_snapshot",
    "ENTRY_POINT_GROUP",
    "FUSED_VARIANTS",
    "RETRIEVAL_INPUTS",
    "LOSSES",
]

ENTRY_POINT_GROUP = "fairltr.losses"


FUSED_VARIANTS = ("hinge", "symmetric")
"""Ranking losses DELTR's linear objective computes with an analytic gradient
(:class:`fairltr.losses.linear.LinearDELTRObjective`)."""


RETRIEVAL_INPUTS = ("scores", "embeddings")
"""What a retrieval loss's ``fn`` compares (:attr:`FairnessLoss.inputs`)."""


def _option_value(loss: str, key: str, default: Any, value: Any) -> Any:
    """``value`` as the type of the declared ``default`` (bool, int, float or str), else ConfigError."""
    where = f"fairness loss {loss!r} option {key!r}"
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}")
        return value
    if isinstance(default, numbers.Integral):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ConfigError(f"{where} must be an integer, got {value!r}")
        return int(value)
    if isinstance(default, numbers.Real):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
            raise ConfigError(f"{where} must be a finite number, got {value!r}")
        return float(value)
    if isinstance(default, str) and not isinstance(value, str):
        raise ConfigError(f"{where} must be text, got {value!r}")
    return value


@dataclass(frozen=True)
class FairnessLoss:
    """A named fairness loss and its declared hyper-parameters.

    ``needs_judgments``: ``fn`` takes the training judgments as ``judgments=``.
    ``fused``: for a ranking loss whose ``fn`` is DELTR's exposure penalty, the variant
    (``"hinge"`` or ``"symmetric"``) that :class:`~fairltr.losses.linear.LinearDELTRObjective`
    computes with a fused analytic gradient; None (plugins): autograd through ``fn``. A loss
    without ``fn`` adds no fairness term.
    ``inputs`` (retrieval losses): ``"scores"`` or ``"embeddings"``, what ``fn`` compares (module
    docstring). ``options``: declared keyword options and their defaults; ``option_choices``: the
    allowed values of some of them (see :meth:`resolve_options`).
    """

    name: str
    kind: Literal["ranking", "retrieval", "policy"]
    fn: Callable[..., Any] | None
    params: tuple[HyperParam, ...] = ()
    description: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    fused: Literal["hinge", "symmetric"] | None = None
    needs_judgments: bool = False
    inputs: Literal["scores", "embeddings"] = "scores"
    option_choices: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.inputs not in RETRIEVAL_INPUTS:
            raise ConfigError(f"loss {self.name!r}: inputs must be one of {RETRIEVAL_INPUTS}, got {self.inputs!r}")
        if self.inputs != "scores" and self.kind != "retrieval":
            raise ConfigError(f"loss {self.name!r}: inputs={self.inputs!r} is for retrieval losses, "
                              f"not a {self.kind} loss")
        for key, allowed in self.option_choices.items():
            if key not in self.options:
                raise ConfigError(f"loss {self.name!r}: option_choices names {key!r}, which is not one of "
                                  f"its options {sorted(self.options)}")
            if self.options[key] not in allowed:
                raise ConfigError(f"loss {self.name!r}: the default {self.options[key]!r} of option {key!r} "
                                  f"is not one of {list(allowed)}")
        if self.fused is not None and (self.kind != "ranking" or self.fused not in FUSED_VARIANTS
                                       or self.fn is None):
            raise ConfigError(f"loss {self.name!r}: fused must be None or one of {FUSED_VARIANTS} for a ranking "
                              f"loss with a function, got {self.fused!r}")

    @property
    def weight_param(self) -> HyperParam | None:
        """The weight of this loss in the total objective (``gamma`` or ``alpha``), if any."""
        return self.params[0] if self.params else None

    def defaults(self) -> dict[str, float]:
        return {p.name: p.default for p in self.params}

    def resolve_options(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The declared options updated by ``overrides``: the keywords ``fn`` is called with.

        An override must name a declared option, have the type of its default (a float option
        takes any finite number) and, where ``option_choices`` lists values, be one of them;
        otherwise a one-line :class:`~fairltr.errors.ConfigError` names the loss and the option.
        """
        resolved = dict(self.options)
        for key, value in (overrides or {}).items():
            if key not in self.options:
                raise ConfigError(f"fairness loss {self.name!r} has no option {key!r}; "
                                  f"options: {sorted(self.options)}")
            value = _option_value(self.name, key, self.options[key], value)
            allowed = self.option_choices.get(key)
            if allowed is not None and value not in allowed:
                raise ConfigError(f"fairness loss {self.name!r} option {key!r} must be one of {list(allowed)}, "
                                  f"got {value!r}")
            resolved[key] = value
        return resolved

    def param(self, name: str) -> HyperParam:
        for p in self.params:
            if p.name == name:
                return p
        raise ConfigError(f"loss {self.name!r} has no hyper-parameter {name!r}; it has {[p.name for p in self.params]}")


LOSSES: PluginRegistry[FairnessLoss] = PluginRegistry("fairness loss", FairnessLoss, group=ENTRY_POINT_GROUP)
"""Every fairness loss (:mod:`fairltr.plugins.registry`): the built-ins of :mod:`fairltr.losses.builtin`
(registered when it is imported; :mod:`fairltr.losses.plugins` imports it), then the
``fairltr.losses`` entry points, scanned on the first lookup."""
_REGISTRY = LOSSES._items  # the registry's own dict (tests snapshot it)


def register_loss(loss: FairnessLoss, *, overwrite: bool = False) -> FairnessLoss:
    """Add ``loss`` to the registry (``overwrite=False`` refuses a taken name)."""
    if not isinstance(loss, FairnessLoss):
        raise TypeError(f"register_loss expects a FairnessLoss, got {type(loss).__name__}")
    return LOSSES.register(loss, replace=overwrite)


def unregister_loss(name: str) -> FairnessLoss | None:
    """Remove the loss called ``name`` (a no-op for an unknown name); returns what was removed."""
    return LOSSES.unregister(name)


def temporary_loss(loss: FairnessLoss, *, overwrite: bool = False):
    """Register ``loss`` for the ``with`` block; afterwards the name holds what it held before
    (nothing, or the loss ``overwrite=True`` replaced). For tests and experiments."""
    return LOSSES.temporary(loss, replace=overwrite)


def registry_snapshot():
    """Restore the whole registry (and whether the entry points were scanned) after the
    ``with`` block, whatever it registered, removed or reloaded."""
    return LOSSES.snapshot()


def reload_entry_points() -> None:
    """Re-scan the ``fairltr.losses`` entry points (after installing a plugin at run time)."""
    LOSSES.reload_entry_points()


