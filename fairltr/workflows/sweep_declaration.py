"""What a sweep method declaration is (:class:`SweepMethod`, a ranking method's
:class:`RankingPlan` over a :class:`RankingContext`, the :class:`SweepInputs` of a trial builder)
and the registry object the declarations are registered in (:data:`SWEEP_METHODS`,
:func:`register_sweep_method`).

This module names no declaration: the built-ins (:mod:`fairltr.workflows.sweep_methods`) and the
trial builders (:mod:`fairltr.workflows.sweep_trials`) import it, and the lookups
(:mod:`fairltr.workflows.sweep_plugins`, which re-exports every name here) load the built-ins
first, so the declarations never reach the code that looks them up.

Method names are user-facing (``lambdamart+fair``); where a name becomes part of an MLflow key
or a file name use :attr:`SweepMethod.key` / :func:`fairltr.metrics.key_part` (MLflow keys allow letters,
digits, ``_ - . /`` and spaces, not ``+``).
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from fairltr.columns import DEFAULT_COLUMNS
from fairltr.errors import ConfigError
from fairltr.metrics.availability import EVALUATORS
from fairltr.metrics.plugins import key_part
from fairltr.plugins.registry import PluginRegistry

__all__ = ["SweepInputs", "SweepMethod", "RankingContext", "RankingPlan", "register_sweep_method",
           "unregister_sweep_method", "DATA_KINDS", "SWEEP_METHODS"]

DATA_KINDS = ("ranking", "parallel")  # ranking files / folds; a parallel-query folder (retrieval)
SWEEP_EVALUATORS = tuple(e for e in EVALUATORS if e != "monitor")  # what a trial's metrics can be
_NAME = re.compile(r"^[a-z0-9][a-z0-9+_.-]*$")


@dataclass(frozen=True)
class RankingContext:
    """What a ranking method's search space may depend on: the pooled training table of all
    folds (FA*IR's ``fair_p`` range comes from its protected share), the column contract and
    the sweep's method settings."""

    train: Any  # pandas.DataFrame
    columns: Any = DEFAULT_COLUMNS  # fairltr.RankingColumns
    loss: str = "exposure_hinge"
    p_range: tuple[float, float] | None = None
    alpha_range: tuple[float, float] = (0.01, 0.5)


@dataclass(frozen=True)
class RankingPlan:
    """How a ranking method's trial is made: ``space(context)`` -> its search space;
    ``to_spec(base, values, context)`` -> the ranker setting of a trial's values; ``reuse_base``:
    post-processing, the setting without post-processing is fitted once per fold and re-ranked
    by every trial; ``uses_loss``: the method trains with the sweep's ``--loss`` (recorded on the
    study and checked on resume)."""

    space: Callable[["RankingContext"], Any]
    to_spec: Callable[[Any, Mapping[str, float], "RankingContext"], Any]  # (RankerSpec, values, context) -> RankerSpec
    reuse_base: bool = False
    uses_loss: bool = False


@dataclass(frozen=True)
class SweepInputs:
    """What a trial builder gets: the sweep's config (``tuning.SweepConfig``), the (train, test)
    folds of a ranking method (None for a ``parallel`` method, which reads ``cfg.train``), the
    column contract."""

    cfg: Any
    folds: list | None
    columns: Any


@dataclass(frozen=True)
class SweepMethod:
    """One sweep method.

    * ``trial(inputs) -> runner``: ``runner(values) -> metrics`` with its search space as
      ``runner.space`` (a workflow call: :func:`fairltr.workflows.ranking_trial` ...);
    * ``searches``: the search space in words (docs, ``--help``);
    * ``objectives``: default objectives (``None``: the sweep's ``kendall_tau:max,exposure_disparity:min``);
    * ``data``: ``"ranking"`` (``--train``/``--test`` ranking files, or folds) or ``"parallel"``;
    * ``evaluator``: which metrics a trial computes (:data:`fairltr.metrics.availability.EVALUATORS`;
      ``""``: ``"ranker"`` for ranking data, ``"retriever"`` for parallel data), so that an
      objective or constraint on a metric never computed is refused before the study;
    * ``requires``: importable modules, checked before the study starts, with the extra that
      installs them (``{"lightgbm": "gbdt"}``);
    * ``options``: CLI parameter name -> trial keyword, passed via ``SweepConfig.method_options``
      (``{"steps": "steps"}``); unset (None) values are left out;
    * ``ranking``: for ranking methods, the plan :func:`fairltr.workflows.ranking_trial` builds
      the trial from (space and values -> ranker setting).
    """

    name: str
    summary: str
    trial: Callable[[SweepInputs], Any]
    searches: str = ""
    objectives: str | None = None
    data: str = "ranking"
    evaluator: str = ""
    requires: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, str] = field(default_factory=dict)
    ranking: Any = None

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ConfigError(f"sweep method name {self.name!r}: lower-case letters, digits and + _ . - only")
        if self.data not in DATA_KINDS:
            raise ConfigError(f"sweep method {self.name!r}: data must be one of {DATA_KINDS}, got {self.data!r}")
        if self.evaluator and self.evaluator not in SWEEP_EVALUATORS:
            raise ConfigError(f"sweep method {self.name!r}: evaluator must be one of {SWEEP_EVALUATORS} (or '' "
                              f"for the data's default), got {self.evaluator!r}")
        if not callable(self.trial):
            raise ConfigError(f"sweep method {self.name!r}: trial must be callable")

    @property
    def evaluates(self) -> str:
        """The evaluator whose metrics a trial computes (``evaluator``, or the data's default)."""
        return self.evaluator or ("ranker" if self.data == "ranking" else "retriever")

    @property
    def key(self) -> str:
        """The name as an MLflow key / file-name part (:func:`fairltr.metrics.key_part`)."""
        return key_part(self.name)

    @property
    def default_objectives(self) -> str:
        if self.objectives is not None:
            return self.objectives
        from tuning.objectives import DEFAULT_OBJECTIVES

        return DEFAULT_OBJECTIVES

    def check_requirements(self) -> None:
        """A one-line :class:`ConfigError` naming the extra when a required module is missing."""
        for module, extra in self.requires.items():
            if importlib.util.find_spec(module) is None:
                raise ConfigError(f"sweep method {self.name!r} needs {module}, which is not installed: "
                                  f"pip install 'fairltr[{extra}]'")

    def method_options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The trial keywords of this method from CLI-level values (None = unset, left out)."""
        return {kw: given[param] for param, kw in self.options.items() if given.get(param) is not None}


def _same_key(method: "SweepMethod", others: dict[str, "SweepMethod"]) -> None:
    keys = {m.key: m.name for m in others.values()}
    if method.key in keys:
        raise ConfigError(f"sweep method {method.name!r} has the same key {method.key!r} as {keys[method.key]!r}")


SWEEP_METHODS: PluginRegistry["SweepMethod"] = PluginRegistry("sweep method", SweepMethod, check=_same_key)
"""Every sweep method (:mod:`fairltr.plugins.registry`): the built-ins of
:mod:`fairltr.workflows.sweep_methods` (registered when it is imported; :mod:`fairltr.workflows.sweep_plugins`
imports it), then the ``fairltr.sweep_methods`` entry points, scanned on the first lookup."""


def register_sweep_method(method: SweepMethod, *, replace: bool = False) -> SweepMethod:
    """Add ``method`` to the registry (``replace=True`` to redeclare a name). Returns it."""
    if not isinstance(method, SweepMethod):
        raise ConfigError(f"register_sweep_method takes a SweepMethod, got {type(method).__name__}")
    if method.name in SWEEP_METHODS._items and not replace:
        raise ConfigError(f"sweep method {method.name!r} is already registered")
    return SWEEP_METHODS.register(method, replace=True)


def unregister_sweep_method(name: str) -> None:
    """Remove a method (tests, plugins); unknown names are ignored."""
    SWEEP_METHODS.unregister(name)
