"""What a ranker is to the rest of the suite: the :class:`Ranker` protocol its models implement
and the :class:`RankerDeclaration` it is registered by (``fairltr.rankers`` entry points).

Logging, the ranker pyfunc, ``fairltr evaluate`` and promotion read a model through these two
only: the declaration found for the model's class (:func:`fairltr.rankers.declaration_of`) says
its name in run tags and headings, its fairness weight, whether it is a stochastic policy, the
caption of its training curve, the file its weights are saved to and the pip requirements a
served copy needs; the protocol's methods do the rest. Nothing dispatches on class names.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

from fairltr.errors import ConfigError
from fairltr.plugins.params import HyperParam

__all__ = ["Ranker", "RankerDeclaration"]


@runtime_checkable
class Ranker(Protocol):
    """A fitted fairltr ranker (``isinstance`` is True once it is fitted: the fitted attributes
    below exist only then).

    ``fit(frame, ...)`` trains on a ranking table and returns the model; ``predict(frame)`` scores
    every row; ``rank(frame)`` sorts each query by score (``score`` and 1-based ``rank``);
    ``save(path)`` writes the model and returns the main file, ``saved_files(path)`` lists every
    file it wrote (the main one first) and the class's ``load_saved(files)`` reads them back;
    ``effective_params()`` are the validated hyper-parameters as logged and saved;
    ``describe(title)`` is a one-line description without what ``title`` says; ``check_fitted()``
    raises :class:`~fairltr.errors.NotFittedError` before ``fit``. Fitted: ``history`` (the
    training records, possibly none), ``columns_`` (the column contract, a
    :class:`~fairltr.columns.RankingColumns`), ``query_`` / ``judgment_`` (its query and judgment
    columns), ``feature_names_`` and ``n_iter_``; ``fairness_loss`` names the fairness loss it
    was trained with (None: none), as run tags and params record it."""

    columns_: Any
    feature_names_: list[str]
    n_iter_: int
    fairness_loss: str | None

    @property
    def query_(self) -> str: ...
    @property
    def judgment_(self) -> str: ...

    def fit(self, df: Any, *args: Any, **kwargs: Any) -> Any: ...
    def predict(self, df: Any) -> Any: ...
    def rank(self, df: Any, query: str | None = None) -> Any: ...
    def save(self, path: str | Path) -> Path: ...
    def saved_files(self, path: str | Path) -> list[Path]: ...
    @classmethod
    def load_saved(cls, files: Sequence[str | Path]) -> Any: ...
    def effective_params(self) -> dict[str, Any]: ...
    def describe(self, title: str | None = None) -> str: ...
    def check_fitted(self) -> None: ...
    @property
    def history(self) -> list[dict[str, float]]: ...


@dataclass(frozen=True)
class RankerDeclaration:
    """One kind of ranker.

    ``name``: the registry key (``deltr``); ``estimator``: ``"module:Class"`` of its estimator,
    imported on first use; ``label``: its name in run tags (``fairltr.model``), headings and
    messages (``DELTR``); ``format``: the format marker its model files carry
    (``fairltr.DELTR``); ``weight``: the declaration of its fairness weight (validation, default,
    search range; None: no fairness weight), whose name a heading shows (``gamma`` -> ``DELTR
    gamma=1000``) and, unless ``weight_attribute`` names another, the model attribute holding
    it (PLRank's ``lambda`` is ``lam``: a Python keyword); ``stochastic``: a
    Plackett-Luce policy, which may serve sampled rankings; ``curve_caption``: the caption of
    its training-curve figure (None: no curve); ``model_file``: the file name of its saved
    weights inside a logged model's ``artifacts/``; ``requirements``: pip requirements a served
    copy needs beyond fairltr's own (``("lightgbm",)``)."""

    name: str
    estimator: str
    label: str
    format: str
    weight: HyperParam | None = None
    weight_attribute: str | None = None
    stochastic: bool = False
    curve_caption: str | None = None
    model_file: str = "model.safetensors"
    requirements: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.name or not self.label or not self.format:
            raise ConfigError(f"a ranker declaration needs a name, a label and a format marker, got {self!r}")
        if ":" not in self.estimator:
            raise ConfigError(f"ranker {self.name!r}: estimator must be 'module:Class', got {self.estimator!r}")

    def estimator_class(self) -> type:
        """The estimator class (imported now; a missing module is a ConfigError naming the plugin)."""
        module, _, attr = self.estimator.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"ranker {self.name!r}: cannot import its estimator {self.estimator!r}: {exc}") from None

    def weight_of(self, model: Any) -> float | None:
        """The model's fairness weight (None for a ranker without one)."""
        if self.weight is None:
            return None
        return float(getattr(model, self.weight_attribute or self.weight.name))

    def heading(self, model: Any) -> str:
        """``DELTR gamma=1000`` / ``PLRank lambda=10`` / ``LambdaMART``."""
        value = self.weight_of(model)
        return self.label if value is None else f"{self.label} {self.weight.name}={value:g}"
