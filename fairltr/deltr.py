"""The DELTR estimator: a linear ranker trained on ListNet + gamma * disparate exposure.

Full-batch over queries padded in length buckets (no per-query loop; memory proportional to the rows),
deterministic for a seed, on CPU or CUDA.
Weights are saved as JSON or safetensors (never pickle).

:class:`DELTR` follows scikit-learn's estimator contract (without depending on scikit-learn):
``__init__`` stores its arguments verbatim; :meth:`~DELTR.get_params` / :meth:`~DELTR.set_params`
are read from the signature, so ``sklearn.base.clone`` works; validation and derived defaults
(``max_iter_``, ``lr_``) happen in ``fit``; fitted attributes end in ``_`` and exist only after
``fit`` or :meth:`~DELTR.load`; an unfitted model raises :class:`~fairltr.errors.NotFittedError`.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import torch

from fairltr.buckets import BucketedBatch, split_batch, to_buckets
from fairltr.columns import DEFAULT_COLUMNS, UNSET, RankingColumns, resolve_columns
from fairltr.data import (NAMES_ONLY, ORIGIN_KEY, RankingBatch, category_codes, check_group_column, frame_source,
                          numeric_matrix, positions_in_query, query_codes, score_order, select_features)
from fairltr.errors import ConfigError, DataError
from fairltr.files import check_writable
from fairltr.fitted import FittedRanker
from fairltr.losses.builtin import GAMMA
from fairltr.losses.registry import get_loss
from fairltr.model_file import (ARRAY_KEYS, DTYPES, FORMAT_VERSION, HISTORY_KEYS, MODEL_SUFFIXES,  # noqa: F401
                                PARAM_KINDS as _PARAM_KINDS, STATE_KEYS, read_model_file, write_model_file)
from fairltr.ranker_params import LinearRankerParams, OptimiserChoices
from fairltr.training_loop import LoopLabels, run_training_loop
from fairltr.deltr_fit import DELTRSettings, DELTRTraining, TrainingInputs, resolve_device  # noqa: F401  (re-exported)

__all__ = ["DELTR", "DELTRSettings", "resolve_device", "rank_frame"]

REFERENCE_CODES = "__fairltr_reference_codes__"
"""Hidden column holding the group codes when ``reference_group`` is declared (never a feature)."""

DEFAULT_MAX_ITER = {"lbfgs": 200, "adam": 3000}
"""``max_iter=None``: iterations of each optimizer."""
DEFAULT_LR = {"lbfgs": 1.0, "adam": 0.01}
"""``lr=None``: step size of each optimizer."""


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


class DELTR(DELTRTraining, LinearRankerParams, FittedRanker):
    """Disparate Exposure Learning to Rank (Zehlike et al.) with a linear scoring function.

    Objective: sum_q ListNet_q + gamma * U_q + l2 * ||w||^2, where U_q is the registered ranking
    fairness loss ``fairness_loss`` (DELTR's squared hinge on the exposure gap by default);
    ``gamma=0`` is standard ListNet. The group column is a feature by default, as in the paper's
    "standard" ranker; ``colorblind=True`` removes it from the features. Every other column
    except the query, judgment and item columns must be numeric (see :meth:`fit`).

    Columns: ``columns`` (a :class:`~fairltr.columns.RankingColumns`, default
    :data:`~fairltr.columns.DEFAULT_COLUMNS`) names the query, group, judgment and item columns.
    ``protected`` is the older way to name the group column and stays accepted: without
    ``columns`` the contract is the default one with ``group=protected``; with ``columns``,
    ``columns.group`` is the group column and ``protected`` must be left at its default or name
    the same column (anything else is a :class:`ConfigError` at ``fit``; a ``protected`` given
    as its default value cannot be told from the default and yields to ``columns.group``). Both
    are stored as given, so ``get_params`` / ``clone`` round-trip them; the contract a fit used
    is ``columns_``. Code that builds a model for readers of ``model.protected`` passes both.

    Group categories (docs/audit.md, "Training with several categories"): the exposure hinge
    compares every category with the REFERENCE category (code 0), which is ``reference_group``
    when given (a category as written in the file: string or integer), else 0 for integer
    categories (today's 0 = non-protected) and the most frequent category for string ones
    (:func:`fairltr.data.category_codes`). With G categories the hinge has G - 1 terms, reduced by
    ``reduce`` (max or mean). Only the first group attribute (``columns.group``) is trained on.

    ``max_iter=None`` / ``lr=None``: the optimizer's defaults (:data:`DEFAULT_MAX_ITER`,
    :data:`DEFAULT_LR`), resolved at ``fit`` into ``max_iter_`` / ``lr_``.

    Fitted attributes: ``columns_``, ``feature_names_``, ``weights_`` (standardised units),
    ``mean_``, ``scale_``, ``n_iter_``, ``history_`` (one record per iteration; ``history`` is a
    read-only alias), ``max_iter_``, ``lr_``; ``query_`` and ``judgment_`` read ``columns_``.
    """

    _FILE_KIND = "DELTR"
    """Model files of this class carry the format marker ``fairltr.<_FILE_KIND>``."""
    _OPTIMISERS = OptimiserChoices(names=("lbfgs", "adam"), max_iter=DEFAULT_MAX_ITER, lr=DEFAULT_LR)
    """The optimisers and their ``max_iter`` / ``lr`` defaults (:mod:`fairltr.ranker_params`)."""
    _PARAM_KINDS = _PARAM_KINDS
    """Each parameter's JSON kind in a model file (:mod:`fairltr.model_file`)."""
    _HISTORY_KEYS = HISTORY_KEYS
    """The keys of each ``history_`` record in a model file."""
    _PARAM_KINDS: dict[str, str]  # the model file's "params" and their JSON types (set below)
    _HISTORY_KEYS: frozenset[str]  # the keys of a history record (set below)

    def __init__(
        self,
        gamma: float,
        protected: str = DEFAULT_COLUMNS.group,
        colorblind: bool = False,
        standardize: bool = True,
        l2: float = 0.0,
        optimizer: str = "lbfgs",
        max_iter: int | None = None,
        lr: float | None = None,
        tol: float = 1e-10,
        seed: int = 0,
        device: str = "auto",
        fairness_loss: str = "exposure_hinge",
        reduce: str = "max",
        dtype: torch.dtype = torch.float64,
        columns: RankingColumns | None = None,
        reference_group: str | int | None = None,
    ) -> None:
        self.gamma = gamma
        self._store_linear_params(protected=protected, colorblind=colorblind, standardize=standardize, l2=l2,
                                  optimizer=optimizer, max_iter=max_iter, lr=lr, tol=tol, reduce=reduce, seed=seed,
                                  device=device, dtype=dtype, columns=columns)
        self.fairness_loss = fairness_loss
        self.reference_group = reference_group

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

    def set_params(self, **params: Any) -> "DELTR":
        """Set constructor parameters by name, stored as given (checked at ``fit``); returns self.
        An unknown name is a :class:`ConfigError`."""
        valid = set(self._param_names())
        for name, value in params.items():
            if name not in valid:
                raise ConfigError(f"invalid parameter {name!r} for DELTR; valid parameters: {sorted(valid)}")
            setattr(self, name, value)
        return self

    def settings(self) -> DELTRSettings:
        """Validate the parameters and fill in the derived defaults (what ``fit`` uses). Every
        problem is a :class:`ConfigError` stating the allowed values; gamma is checked by the
        loss registry's declaration (:data:`~fairltr.losses.builtin.GAMMA`)."""
        gamma = GAMMA.validate(self.gamma)
        shared = self._linear_params()  # columns, l2, tol, max_iter, lr, optimizer, reduce: fairltr.ranker_params
        if get_loss(self.fairness_loss).kind != "ranking":
            raise ConfigError(f"fairness_loss {self.fairness_loss!r} is not a ranking loss")
        return DELTRSettings(gamma=gamma, columns=shared.columns, l2=shared.l2, tol=shared.tol,
                             max_iter=shared.max_iter, lr=shared.lr)

    def effective_params(self) -> dict[str, Any]:
        """The parameters as a model file stores them and MLflow logs them: validated, derived
        defaults filled in (``max_iter``, ``lr``), the group column under ``protected``, device
        and dtype as text; JSON-serialisable; ``reference_group`` only when declared (so model files
        without one are unchanged). The query and judgment columns are the fitted
        ``columns_`` (a model file keeps them beside these)."""
        s = self.settings()
        reference = {} if self._reference() is None else {"reference_group": self._reference()}
        return {
            "gamma": s.gamma, "protected": s.columns.group, "colorblind": self.colorblind,
            "standardize": self.standardize, "l2": s.l2, "optimizer": self.optimizer, "max_iter": s.max_iter,
            "lr": s.lr, "tol": s.tol, "seed": self.seed, "device": str(self.device),
            "fairness_loss": self.fairness_loss, "reduce": self.reduce,
            "dtype": str(self.dtype).replace("torch.", ""), **reference,
        }

    def _reference(self) -> str | int | None:
        """``reference_group`` checked: None, a non-empty string or an integer."""
        ref = self.reference_group
        if ref is None or (isinstance(ref, str) and ref.strip()) or (isinstance(ref, (int, np.integer))
                                                                      and not isinstance(ref, bool)):
            return ref if not isinstance(ref, np.integer) else int(ref)
        raise ConfigError(f"reference_group must be a category (a string or an integer) or None, got {ref!r}")

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"DELTR({args})"

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
    ) -> "DELTR":
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

    def _design(self, df: pd.DataFrame) -> np.ndarray:
        """The model's feature columns of ``df`` as finite float64; errors name file, line, column,
        query and value."""
        missing = [f for f in self.feature_names_ if f not in df.columns]
        if missing:
            where = frame_source(df)
            raise DataError(f"{where + ': ' if where else ''}missing feature column(s) {missing}; "
                            f"the model was trained on {self.feature_names_}")
        query = self.query_ if self.query_ in df.columns else None
        return numeric_matrix(df, self.feature_names_, query=query)

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
    ) -> "DELTR":
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
        c.require("judgment", purpose="DELTR training")
        if c.group not in df.columns:
            where = frame_source(df)
            raise DataError(f"{where + ': ' if where else ''}group column {c.group!r} not in the training "
                            f"table; columns: {list(df.columns)}")
        feature_names = self._select_features(df, c, features)
        data, train_columns = df, c
        if self._reference() is not None:  # the declared reference category gets code 0 (a hidden column)
            check_group_column(df, c.group, query=c.query if c.query in df.columns else None)
            data = df.assign(**{REFERENCE_CODES: category_codes(df[c.group], reference=self._reference())[0]})
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
    ) -> "DELTR":
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

    def _fit_buckets(
        self,
        buckets: BucketedBatch,
        columns: RankingColumns,
        settings: DELTRSettings,
        names: list[str],
        callback: Callable[[int, dict[str, float]], None] | None,
        progress: bool,
    ) -> "DELTR":
        """The training loop over length buckets (see :meth:`fit_batch`); sets the fitted state.
        ``buckets.disposable`` (set by :meth:`fit`): their feature tensors are standardised in
        place (no copy of the table)."""
        device = self._device()
        gen = torch.Generator().manual_seed(self.seed)  # a local generator: the global RNG is left alone
        batches = list(buckets.batches)
        inputs = self._training_inputs(batches, columns, names, settings)
        inputs.owned = buckets.disposable
        w = self._initial_weights(inputs, gen, device)
        terms = self._objective(batches, inputs, w, settings, device)
        step, final = self._optimizer_steps(w, terms, settings.lr)
        labels = LoopLabels(model="DELTR", weight="gamma", desc=f"DELTR gamma={settings.gamma:g}", postfix="loss")
        n_iter, history = run_training_loop(step, final, max_iter=settings.max_iter, tol=settings.tol,
                                            labels=labels, callback=callback, progress=progress)
        return self.set_fitted_state(columns=columns, feature_names=inputs.names, weights=w.detach().cpu().numpy(),
                                     mean=inputs.mean.cpu().numpy(), scale=inputs.std.cpu().numpy(), n_iter=n_iter,
                                     history=history)

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
            raise ConfigError(f"cannot save a DELTR model as {p}: unsupported file type {p.suffix or '(none)'!r}; "
                              f"use one of {list(MODEL_SUFFIXES)}")
        check_writable(p)
        return write_model_file(p, state, {"weights": self.weights_, "mean": self.mean_, "scale": self.scale_})

    @classmethod
    def load(cls, path: str | Path) -> "DELTR":
        """Read a model written by :meth:`save` (format chosen by suffix), validating every field
        (:func:`fairltr.model_file.read_model_file`); messages name the class's format."""
        return read_model_file(cls, path)
