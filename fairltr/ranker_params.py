"""The parameters every linear ranker estimator shares (:class:`~fairltr.DELTR`,
:class:`~fairltr.PLRank`): the column contract (``protected``, ``columns``), the features
(``colorblind``, ``standardize``) and the optimiser (``l2``, ``optimizer``, ``max_iter``, ``lr``,
``tol``, ``reduce``, ``seed``, ``device``, ``dtype``), stored by ONE method and validated by ONE
method. Each estimator declares only what differs: its optimisers and their default
``max_iter`` / ``lr`` (:class:`OptimiserChoices`), and validates its own fairness parameters.

Rules (a :class:`~fairltr.errors.ConfigError` naming the parameter and the allowed values):
``tol`` a number >= 0; ``optimizer`` one of the estimator's; ``l2`` a finite number >= 0;
``max_iter`` None or an integer >= 1; ``lr`` None or a finite number > 0; ``reduce`` ``"max"``
or ``"mean"``. ``max_iter=None`` / ``lr=None`` take the optimiser's default.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Mapping

import torch

from fairltr.columns import DEFAULT_COLUMNS, RankingColumns, resolve_columns
from fairltr.errors import ConfigError

__all__ = ["OptimiserChoices", "LinearParams", "LinearRankerParams", "REDUCTIONS"]

REDUCTIONS = ("max", "mean")
"""How the per-group fairness terms are reduced over the protected groups."""


@dataclass(frozen=True)
class OptimiserChoices:
    """An estimator's optimisers (in the order its messages list them) and, per optimiser, the
    ``max_iter`` and ``lr`` that ``None`` stands for."""

    names: tuple[str, ...]
    max_iter: Mapping[str, int]
    lr: Mapping[str, float]


@dataclass(frozen=True)
class LinearParams:
    """The shared parameters after validation, derived defaults filled in."""

    columns: RankingColumns
    l2: float
    tol: float
    max_iter: int
    lr: float


def _choices(names: tuple[str, ...]) -> str:
    return " or ".join(repr(n) for n in names) if len(names) <= 2 else f"one of {list(names)}"


class LinearRankerParams:
    """Mixin of a linear ranker estimator: stores and validates the shared parameters (the
    estimator's ``__init__`` keeps its explicit signature, scikit-learn's contract, and hands
    them to :meth:`_store_linear_params`)."""

    _OPTIMISERS: OptimiserChoices
    """The estimator's optimisers and their defaults (set by each estimator class)."""

    protected: str
    columns: RankingColumns | None
    optimizer: str
    reduce: str
    l2: float
    tol: float
    max_iter: int | None
    lr: float | None

    def _store_linear_params(
        self, *, protected: str, colorblind: bool, standardize: bool, l2: float, optimizer: str,
        max_iter: int | None, lr: float | None, tol: float, reduce: str, seed: int, device: str,
        dtype: torch.dtype, columns: RankingColumns | None,
    ) -> None:
        """Store the shared constructor arguments verbatim (validated later, by :meth:`_linear_params`)."""
        self.protected = protected
        self.colorblind = colorblind
        self.standardize = standardize
        self.l2 = l2
        self.optimizer = optimizer
        self.max_iter = max_iter
        self.lr = lr
        self.tol = tol
        self.reduce = reduce
        self.seed = seed
        self.device = device
        self.dtype = dtype
        self.columns = columns

    def _linear_params(self) -> LinearParams:
        """Validate the shared parameters (the rules of this module's docstring) and fill in the
        optimiser's defaults and the column contract."""
        tol, l2, max_iter, lr = self.tol, self.l2, self.max_iter, self.lr
        choices = self._OPTIMISERS
        if not isinstance(tol, numbers.Real) or not tol >= 0:
            raise ConfigError(f"tol must be a number >= 0, got {tol!r}")
        if self.optimizer not in choices.names:
            raise ConfigError(f"optimizer must be {_choices(choices.names)}, got {self.optimizer!r}")
        if not isinstance(l2, numbers.Real) or not math.isfinite(l2) or l2 < 0:
            raise ConfigError(f"l2 must be >= 0 and finite, got {l2!r}")
        if max_iter is not None and (not isinstance(max_iter, numbers.Integral) or max_iter < 1):
            raise ConfigError(f"max_iter must be >= 1 and an integer (or None), got {max_iter!r}")
        if lr is not None and not (isinstance(lr, numbers.Real) and math.isfinite(lr) and lr > 0):
            raise ConfigError(f"lr must be > 0 and finite (or None), got {lr!r}")
        if self.reduce not in REDUCTIONS:
            raise ConfigError(f"reduce must be {_choices(REDUCTIONS)}, got {self.reduce!r}")
        return LinearParams(
            columns=self._contract(), l2=float(l2), tol=float(tol),
            max_iter=int(max_iter) if max_iter is not None else choices.max_iter[self.optimizer],
            lr=float(lr) if lr is not None else choices.lr[self.optimizer],
        )

    def _contract(self) -> RankingColumns:
        """The column contract of the parameters: ``columns`` with ``protected`` folded in
        (``protected`` left at its default or naming ``columns.group``; anything else is a
        :class:`ConfigError`)."""
        if self.columns is None:
            c = resolve_columns(None, group=self.protected)
        else:
            c = resolve_columns(self.columns)
            if self.protected not in (DEFAULT_COLUMNS.group, c.group):
                raise ConfigError(f"protected={self.protected!r} and columns.group={c.group!r} name different group "
                                  "columns; name the group once, in columns")
        return c.require("group", "judgment", purpose=getattr(self, "_FILE_KIND", "DELTR"))
