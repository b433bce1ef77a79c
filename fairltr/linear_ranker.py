"""The linear ranker both DELTR and PLRank are: s = ((x - mean) / scale) @ w, with scikit-learn's
estimator contract, the fitted state, prediction, ranking and the model file.

:class:`LinearRanker` holds what the two estimators share and nothing of either objective: a
subclass gives its constructor (every parameter stored under its own name), ``settings()`` (the
validated parameters, with ``columns``, ``max_iter`` and ``lr``), ``effective_params()`` (what a
model file stores), ``_fit_buckets`` (its training loop over length buckets) and the class
attributes ``_FILE_KIND`` (the model file's format marker ``fairltr.<kind>``), ``_OPTIMISERS``,
``_PARAM_KINDS`` and ``_HISTORY_KEYS``. ``_reference()`` is the declared reference category of the
group column (None here: code 0 is the reference). Both implement :class:`fairltr.plugins.Ranker`.

scikit-learn's contract (without depending on scikit-learn): ``__init__`` stores its arguments
verbatim; :meth:`~LinearRanker.get_params` / :meth:`~LinearRanker.set_params` are read from the
signature, so ``sklearn.base.clone`` works; validation and derived defaults happen in ``fit``;
fitted attributes end in ``_`` and exist only after ``fit`` or :meth:`~LinearRanker.load`; an
unfitted model raises :class:`~fairltr.errors.NotFittedError`.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Callable, Self, Sequence

import numpy as np
import pandas as pd
import torch

from fairltr.buckets import BucketedBatch, split_batch, to_buckets
from fairltr.columns import UNSET, RankingColumns, resolve_columns
from fairltr.data import (NAMES_ONLY, ORIGIN_KEY, RankingBatch, category_codes, check_group_column, frame_source,
                          positions_in_query, query_codes, score_order, select_features)
from fairltr.deltr_fit import DELTRTraining, resolve_device
from fairltr.errors import ConfigError, DataError
from fairltr.files import check_writable
from fairltr.fitted import FittedRanker
from fairltr.model_file import FORMAT_VERSION, MODEL_SUFFIXES, read_model_file, write_model_file
from fairltr.ranker_params import LinearRankerParams

__all__ = ["LinearRanker", "REFERENCE_CODES", "rank_frame"]

REFERENCE_CODES = "__fairltr_reference_codes__"
"""Hidden column holding the group codes when a reference category is declared (never a feature)."""


def rank_frame(
    df: pd.DataFrame, scores: np.ndarray, query: str = UNSET, score_col: str = "score", *,
    columns: RankingColumns | None = None,
) -> pd.DataFrame:
    """``df`` with ``score`` and 1-based ``rank`` columns, sorted by decreasing score within each
    query (the contract's query column; ``query`` overrides it); queries stay in order of first
    appearance and are never mixed; ties keep input order."""
    c = resolve_columns(columns, query=query, defaults=NAMES_ONLY)
    codes, _ = query_codes(df, c.query)
    s = np.asarray(scores, dtype=np.float64)
    order = score_order(codes, s)
    out = df.iloc[order].copy()
    out[score_col] = s[order]
    out["rank"] = positions_in_query(codes[order])[0] + 1
    out.attrs.pop(ORIGIN_KEY, None)  # rows are re-ordered and re-indexed: the reader's line map no longer applies
    return out.reset_index(drop=True)


class LinearRanker(DELTRTraining, LinearRankerParams, FittedRanker):
    """A linear scoring function over standardised features (see the module docstring for what a
    subclass provides). Fitted attributes: ``columns_``, ``feature_names_``, ``weights_``
    (standardised units), ``mean_``, ``scale_``, ``n_iter_``, ``history_``, ``max_iter_``, ``lr_``."""

    _FILE_KIND = "linear ranker"

    def _reference(self) -> str | int | None:
        """The declared reference category of the group column (None: code 0)."""
        return None

    # ------------------------------------------------------------------ parameters
    @classmethod
    def _param_names(cls) -> list[str]:
        """The constructor's parameter names, in signature order (scikit-learn's rule: no
        ``*args``; every parameter is stored under its own name)."""
        names = []
        for p in inspect.signature(cls.__init__).parameters.values():
            if p.name == "self" or p.kind == p.VAR_KEYWORD:
                continue
            if p.kind == p.VAR_POSITIONAL:
                raise TypeError(f"{cls.__name__}.__init__ may not take *{p.name} (scikit-learn estimator contract)")
            names.append(p.name)
        return names

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments exactly as given (scikit-learn's contract; see
        :meth:`effective_params` for the validated, JSON-serialisable form). ``deep=True`` also
        lists ``<name>__<key>`` for a parameter that has ``get_params`` itself."""
        out: dict[str, Any] = {}
        for name in self._param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            out[name] = value
        return out

    def set_params(self, **params: Any) -> Self:
        """Set constructor parameters by name, stored as given (checked at ``fit``); returns self.
        An unknown name is a :class:`ConfigError`."""
        valid = set(self._param_names())
        for name, value in params.items():
            if name not in valid:
                raise ConfigError(f"invalid parameter {name!r} for {type(self).__name__}; valid parameters: {sorted(valid)}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({args})"

    # ------------------------------------------------------------------ fitted state
    # check_fitted, history, query_, judgment_: fairltr.fitted.FittedRanker
    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "weights_")

    def set_fitted_state(
        self,
        *,
        columns: RankingColumns,
        feature_names: Sequence[str],
        weights: np.ndarray,
        mean: np.ndarray,
        scale: np.ndarray,
        n_iter: int,
        history: Sequence[dict[str, float]],
    ) -> Self:
        """Make this model the fitted model given by its parts (weights in standardised units:
        score = ((x - mean) / scale) @ weights), as ``fit`` would leave it; for trainers outside
        this class (the Lightning engine) and :meth:`load`. The parameters are validated first
        (``max_iter_`` / ``lr_`` come from them). Returns self."""
        s = self.settings()
        names = list(feature_names)
        arrays = [np.asarray(a, dtype=np.float64).copy() for a in (weights, mean, scale)]
        if not names or any(a.shape != (len(names),) for a in arrays):
            raise DataError(f"fitted state: weights, mean and scale need one value per feature ({len(names)}), "
                            f"got shapes {[a.shape for a in arrays]}")
        self.columns_ = columns
        self.feature_names_ = names
        self.weights_, self.mean_, self.scale_ = arrays
        self.n_iter_ = int(n_iter)
        self.history_ = [dict(rec) for rec in history]
        self.max_iter_, self.lr_ = s.max_iter, s.lr
        return self

    # ------------------------------------------------------------------ features
    def _select_features(self, df: pd.DataFrame, columns: RankingColumns, features: Sequence[str] | None) -> list[str]:
        """:func:`fairltr.data.select_features`, minus the group column when colorblind."""
        chosen = select_features(df, columns=columns, features=features)
        if self.colorblind:  # every group attribute leaves the features
            chosen = [f for f in chosen if f not in columns.groups]
        if not chosen:
            raise DataError(f"{frame_source(df) or 'the training table'}: no feature columns to train on "
                            f"(colorblind drops the group column {columns.group!r})")
        return chosen

    # ------------------------------------------------------------------ training
    def _device(self) -> torch.device:
        return resolve_device(self.device)

    def fit(
        self,
        df: pd.DataFrame,
        query: str = UNSET,
        judgment: str = UNSET,
        features: Sequence[str] | None = None,
        callback: Callable[[int, dict[str, float]], None] | None = None,
        progress: bool = False,
        item: str | None = UNSET,
    ) -> Self:
        """Train on a ranking table; ``callback(iteration, terms)`` sees every iteration.

        The columns are the estimator's contract (``columns`` / ``protected``); the ``query``,
        ``judgment`` and ``item`` keywords (kept for existing callers) override its names for
        this fit. ``features=None`` takes every column except query, judgment and item (an
        optional document id column, unique within a query); the group column is a feature too
        unless ``colorblind``. Every feature must be numeric: a non-numeric cell is a DataError
        naming the file, line, column, query and value. The query, group, judgment and item
        columns must be distinct; gamma > 0 needs protected and non-protected candidates.
        """
        settings = self.settings()
        c = resolve_columns(settings.columns, query=query, judgment=judgment, item=item)
        c.require("judgment", purpose=f"{self._FILE_KIND} training")
        if c.group not in df.columns:
            where = frame_source(df)
            raise DataError(f"{where + ': ' if where else ''}group column {c.group!r} not in the training "
                            f"table; columns: {list(df.columns)}")
        feature_names = self._select_features(df, c, features)
        data, train_columns = df, c
        reference = self._reference()
        if reference is not None:  # the declared reference category gets code 0 (a hidden column)
            check_group_column(df, c.group, query=c.query if c.query in df.columns else None)
            data = df.assign(**{REFERENCE_CODES: category_codes(df[c.group], reference=reference)[0]})
            data.attrs = dict(df.attrs)
            train_columns = c.replace(group=REFERENCE_CODES)
        buckets = to_buckets(data, columns=train_columns, features=feature_names, dtype=self.dtype)
        self._check_fairness_signal(buckets.batches, frame_source(df), settings)
        buckets.disposable = True  # built here for this fit: its features may be standardised in place
        return self._fit_buckets(buckets, c, settings, feature_names, callback, progress)

    def fit_batch(
        self,
        batch: RankingBatch | BucketedBatch,
        callback: Callable[[int, dict[str, float]], None] | None = None,
        progress: bool = False,
    ) -> Self:
        """Train on an already padded batch, or on the length buckets of a table
        (:func:`fairltr.buckets.to_buckets`, which :meth:`fit` uses). Its ``feature_names``
        become the model's; with ``colorblind=True`` a feature named like the group column is
        dropped here too. A padded batch is cut into length buckets (:func:`fairltr.buckets.split_batch`)
        so that the training tensors hold at most 2 x rows slots; the objective and its gradient
        are summed over the buckets, which equals the one-batch objective (a sum over queries)
        up to floating-point summation order. A batch whose padding is within that bound stays
        one bucket and is trained exactly as one batch. The fitted ``columns_`` are the
        estimator's contract (a batch carries no column names)."""
        settings = self.settings()
        buckets = split_batch(batch) if isinstance(batch, RankingBatch) else batch
        names = list(buckets.batches[0].feature_names) or list(getattr(self, "feature_names_", []))
        return self._fit_buckets(buckets, settings.columns, settings, names, callback, progress)

    # ------------------------------------------------------------------ inference
    @property
    def coef_(self) -> np.ndarray:
        """Weights in the original (unstandardised) feature units: s = x @ coef_ + const."""
        self.check_fitted()
        return self.weights_ / self.scale_

    def predict(self, df: pd.DataFrame) -> np.ndarray:
        """Score every row (a linear function of its features; the query is not needed)."""
        self.check_fitted()
        x = self._design(df)
        return ((x - self.mean_) / self.scale_) @ self.weights_

    def predict_batch(self, batch: RankingBatch) -> torch.Tensor:
        """Scores (Q, N) of a padded batch with this model's features; 0 on padding."""
        self.check_fitted()
        w = torch.as_tensor(self.weights_, dtype=batch.features.dtype, device=batch.features.device)
        mean = torch.as_tensor(self.mean_, dtype=w.dtype, device=w.device)
        std = torch.as_tensor(self.scale_, dtype=w.dtype, device=w.device)
        return (((batch.features - mean) / std) @ w).masked_fill(~batch.mask, 0.0)

    def rank(self, df: pd.DataFrame, query: str | None = None) -> pd.DataFrame:
        """``df`` sorted by predicted score within each query (``query``, default the fitted
        ``columns_.query``), with ``score`` and 1-based ``rank``."""
        self.check_fitted()
        q = query or self.query_
        if q not in df.columns:
            raise DataError(f"query column {q!r} not in the table; columns: {list(df.columns)}")
        return rank_frame(df, self.predict(df), columns=NAMES_ONLY.replace(query=q))

    # ------------------------------------------------------------------ persistence
    def model_state(self) -> dict[str, Any]:
        """What a model file holds besides the weight, mean and scale vectors (JSON-serialisable):
        the format marker and version, :meth:`effective_params` as fitted, the feature, query and
        judgment columns, ``n_iter`` and the history."""
        self.check_fitted()
        params = self.effective_params()
        params.update(protected=self.columns_.group, max_iter=self.max_iter_, lr=self.lr_)
        return {
            "format": f"fairltr.{self._FILE_KIND}", "format_version": FORMAT_VERSION, "params": params,
            "feature_names": self.feature_names_, "query": self.columns_.query, "judgment": self.columns_.judgment,
            "n_iter": self.n_iter_, "history": self.history_,
        }

    def save(self, path: str | Path) -> Path:
        """Write ``.json`` (everything as text) or ``.safetensors`` (tensors + JSON metadata),
        atomically: a failure or Ctrl-C midway leaves the previous file intact. Another suffix
        is a :class:`ConfigError`."""
        p = Path(path)
        state = self.model_state()
        if p.suffix not in MODEL_SUFFIXES:
            raise ConfigError(f"cannot save a {self._FILE_KIND} model as {p}: unsupported file type {p.suffix or '(none)'!r}; "
                              f"use one of {list(MODEL_SUFFIXES)}")
        check_writable(p)
        return write_model_file(p, state, {"weights": self.weights_, "mean": self.mean_, "scale": self.scale_})

    @classmethod
    def load(cls, path: str | Path) -> Self:
        """Read a model written by :meth:`save` (format chosen by suffix), validating every field
        (:func:`fairltr.model_file.read_model_file`); messages name the class's format."""
        return read_model_file(cls, path)

    def saved_files(self, path: str | Path) -> list[Path]:
        """The files :meth:`save` wrote for ``path`` (one: the model file)."""
        return [Path(path)]

    @classmethod
    def load_saved(cls, files: Sequence[str | Path]) -> Self:
        """The model :meth:`save` wrote, from :meth:`saved_files` (the protocol's inverse of it)."""
        return cls.load(files[0])
