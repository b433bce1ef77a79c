"""The DELTR estimator: a linear ranker trained on ListNet + gamma * disparate exposure.

Full-batch over queries padded in length buckets (no per-query loop; memory proportional to the rows),
deterministic for a seed, on CPU or CUDA.
Weights are saved as JSON or safetensors (never pickle).

:class:`DELTR` is a :class:`~fairltr.linear_ranker.LinearRanker` (scikit-learn's estimator
contract, prediction, ranking and the model file are there); this module holds its parameters,
their validation and its training loop (the steps: :mod:`fairltr.deltr_fit`).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from fairltr.buckets import BucketedBatch
from fairltr.columns import DEFAULT_COLUMNS, RankingColumns
from fairltr.errors import ConfigError
from fairltr.linear_ranker import REFERENCE_CODES, LinearRanker, rank_frame  # noqa: F401  (re-exported)
from fairltr.losses.builtin import GAMMA
from fairltr.losses.plugins import get_loss
from fairltr.model_file import (ARRAY_KEYS, DTYPES, FORMAT_VERSION, HISTORY_KEYS, MODEL_SUFFIXES,  # noqa: F401
                                PARAM_KINDS as _PARAM_KINDS, STATE_KEYS)
from fairltr.ranker_params import OptimiserChoices
from fairltr.training_loop import LoopLabels, run_training_loop
from fairltr.deltr_fit import DELTRSettings, TrainingInputs, resolve_device  # noqa: F401  (re-exported)

__all__ = ["DELTR", "DELTRSettings", "resolve_device", "rank_frame"]

DEFAULT_MAX_ITER = {"lbfgs": 200, "adam": 3000}
"""``max_iter=None``: iterations of each optimizer."""
DEFAULT_LR = {"lbfgs": 1.0, "adam": 0.01}
"""``lr=None``: step size of each optimizer."""


class DELTR(LinearRanker):
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

    def describe(self, title: str | None = None) -> str:
        """``DELTR, gamma=1000, colorblind, fairness loss exposure_hinge``, without what ``title``
        already says (the words of a run's report and version description)."""
        words = ["DELTR"]
        if not title or f"gamma={self.gamma:g}" not in title:
            words.append(f"gamma={self.gamma:g}")
        if self.colorblind and not (title and "colorblind" in title):
            words.append("colorblind")
        if self.gamma > 0:
            words.append(f"fairness loss {self.fairness_loss}")
        return ", ".join(words)

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

