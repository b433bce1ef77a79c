"""LambdaMART: LightGBM's ``lambdarank`` objective behind the DELTR estimator's interface
(``fit`` / ``predict`` / ``rank`` / ``save`` / ``load``, the column contract), the
practitioners' baseline of the fair-ranking comparisons. Needs the ``[gbdt]`` extra
(``lightgbm>=4.0``), imported when a model is fitted or loaded.

Relevance labels. LightGBM's lambdarank takes integer grades ``0..len(label_gain)-1`` with gain
``label_gain[grade]``; LightGBM's default ``label_gain`` is ``2^i - 1``, which is fairltr's
``ndcg_at_k`` gain ``2^rel - 1`` (docs/spec.md §3), so on integer judgments both NDCGs are the
same quantity. Judgments that are not integers in ``0..30`` (the Law students' ZFYA, TREC's
1.0, 0.995, ...) are mapped to ``grades`` ordinal grades by the training set's quantiles
(``label_mode = "quantile"``); the model trains on the grades, fairltr still evaluates on the
judgments.

Model file (no pickle): ``model.json`` (format ``fairltr.LambdaMART``: columns, features,
parameters, label mapping, per-iteration training NDCG, the SHA-256 of the booster file) beside
``model.txt``, LightGBM's own text model file (``lightgbm.Booster(model_file="model.txt")``
opens it). :meth:`LambdaMART.load` checks every field and the booster's digest and rejects a
changed or corrupt booster with one :class:`DataError` line.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from fairltr.columns import RankingColumns, resolve_columns
from fairltr.data import NAMES_ONLY, frame_source, numeric_matrix, query_codes, select_features
from fairltr.linear_ranker import rank_frame
from fairltr.errors import ConfigError, DataError, one_line
from fairltr.files import atomic_write_text, check_writable
from fairltr.fitted import FittedRanker
from fairltr.losses import HyperParam

__all__ = ["GBDTParams", "LambdaMART", "LAMBDAMART_SPACE", "INTEGER_PARAMS", "FORMAT", "MAX_GRADE",
           "relevance_grades", "booster_path_for"]

FORMAT = "fairltr.LambdaMART"
FORMAT_VERSION = 1
MAX_GRADE = 30  # LightGBM's default label_gain has 31 entries, 2^i - 1 for i = 0..30
INTEGER_PARAMS = frozenset({"num_leaves", "n_estimators", "min_data_in_leaf"})

# the search space of the ``lambdamart`` sweep method, declared once
LAMBDAMART_SPACE: tuple[HyperParam, ...] = (
    HyperParam("learning_rate", default=0.1, low=0.01, high=0.3, log=True, description="LightGBM shrinkage"),
    HyperParam("num_leaves", default=31, low=4, high=63, log=True, integer=True, description="leaves per tree"),
    HyperParam("min_data_in_leaf", default=20, low=2, high=100, log=True, integer=True,
               description="minimum rows per leaf"),
)


@dataclass(frozen=True)
class GBDTParams:
    """LightGBM settings of a LambdaMART model (the ``fairltr train lambdamart`` options)."""

    num_leaves: int = 31
    learning_rate: float = 0.1
    n_estimators: int = 100
    min_data_in_leaf: int = 20
    grades: int = 5
    num_threads: int = 1

    def __post_init__(self) -> None:
        for name in ("num_leaves", "n_estimators", "min_data_in_leaf", "grades", "num_threads"):
            v = getattr(self, name)
            if isinstance(v, float) and v.is_integer():
                object.__setattr__(self, name, int(v))
                v = int(v)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ConfigError(f"{name} must be an integer, got {v!r}")
        if self.num_leaves < 2:
            raise ConfigError(f"num_leaves must be >= 2, got {self.num_leaves}")
        if self.n_estimators < 1:
            raise ConfigError(f"n_estimators must be >= 1, got {self.n_estimators}")
        if self.min_data_in_leaf < 1:
            raise ConfigError(f"min_data_in_leaf must be >= 1, got {self.min_data_in_leaf}")
        if not 2 <= self.grades <= MAX_GRADE + 1:
            raise ConfigError(f"grades must be in 2..{MAX_GRADE + 1}, got {self.grades}")
        if self.num_threads < 0:
            raise ConfigError(f"num_threads must be >= 0 (0 = LightGBM's default), got {self.num_threads}")
        lr = self.learning_rate
        if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr <= 0:
            raise ConfigError(f"learning_rate must be a finite number > 0, got {lr!r}")
        object.__setattr__(self, "learning_rate", float(lr))

    def with_values(self, values: dict[str, float]) -> "GBDTParams":
        """These settings with sweep values applied (integer parameters rounded)."""
        changes = {k: (int(round(v)) if k in INTEGER_PARAMS else float(v)) for k, v in values.items()
                   if k in asdict(self)}
        return GBDTParams(**{**asdict(self), **changes})


def relevance_grades(judgments: np.ndarray, grades: int) -> tuple[np.ndarray, str, list[float]]:
    """Integer labels for LightGBM: the judgments themselves when they are integers in
    ``0..MAX_GRADE`` (mode ``"integer"``), else ``searchsorted(edges, y, "right")`` with ``edges``
    the distinct inner ``grades``-quantiles of ``judgments`` (mode ``"quantile"``, labels
    ``0..grades-1``, monotone in the judgment). Returns (labels, mode, edges)."""
    y = np.asarray(judgments, dtype=np.float64)
    if y.size and np.all(y == np.round(y)) and y.min() >= 0 and y.max() <= MAX_GRADE:
        return y.astype(np.int64), "integer", []
    edges = np.unique(np.quantile(y, np.linspace(0.0, 1.0, grades + 1)[1:-1]))
    return np.searchsorted(edges, y, side="right").astype(np.int64), "quantile", [float(e) for e in edges]


def booster_path_for(path: str | Path) -> Path:
    """The LightGBM text model file written beside a ``model.json``: ``model.txt``."""
    return Path(path).with_suffix(".txt")


def _lightgbm():
    try:
        import lightgbm
    except ImportError:  # pragma: no cover - the [gbdt] extra is installed in CI
        raise ConfigError("LambdaMART needs LightGBM: pip install 'fairltr[gbdt]'") from None
    return lightgbm


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class LambdaMART(FittedRanker):
    """A LightGBM ``lambdarank`` ranker with the column contract of :class:`fairltr.DELTR`.

    ``colorblind`` drops the group column from the features; ``features=None`` trains on every
    column but the query, judgment and item columns (the group column included, as DELTR's
    standard ranker). Scores are the booster's raw predictions (higher = better).
    """

    _FILE_KIND = "LambdaMART"  # its model files' format marker (fairltr.LambdaMART) and messages; run tags: RANKERS

    def __init__(self, params: GBDTParams | None = None, *, seed: int = 0, colorblind: bool = False,
                 columns: RankingColumns | None = None, record_history: bool = True) -> None:
        self.params = params or GBDTParams()
        self.seed = int(seed)
        self.colorblind = bool(colorblind)
        self.columns = columns
        self.record_history = record_history
        self.fairness_loss = None  # LambdaMART has no fairness term (the loss registry is DELTR's)
        self.gamma = 0.0

    # ------------------------------------------------------------------ fitted state
    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "booster_")

    # check_fitted, query_, judgment_: fairltr.fitted.FittedRanker
    @property
    def history(self) -> list[dict[str, float]]:
        """Per boosting round: ``iteration`` and the training NDCG at 10 (LightGBM's own eval)."""
        self.check_fitted()
        return self.history_

    @property
    def n_iter_(self) -> int:
        self.check_fitted()
        return int(self.booster_.current_iteration())

    def effective_params(self) -> dict[str, Any]:
        """What a model file stores and MLflow logs (JSON-serialisable)."""
        c = self.columns_ if self.__sklearn_is_fitted__() else resolve_columns(self.columns)
        return {"ranker": "lambdamart", **asdict(self.params), "seed": self.seed, "colorblind": self.colorblind,
                "protected": c.group, "objective": "lambdarank"}

    def describe(self, title: str | None = None) -> str:
        """``LambdaMART (LightGBM lambdarank), 100 trees, 31 leaves, learning rate 0.1`` (a run's
        report and version description; ``title`` changes nothing: the heading names no setting)."""
        p = self.params
        return (f"LambdaMART (LightGBM lambdarank), {p.n_estimators} trees, {p.num_leaves} leaves, "
                f"learning rate {p.learning_rate:g}" + (", colorblind" if self.colorblind else ""))

    def __repr__(self) -> str:
        return f"LambdaMART({self.params!r}, seed={self.seed}, colorblind={self.colorblind})"

    def _lgb_params(self) -> dict[str, Any]:
        p = self.params
        return {"objective": "lambdarank", "metric": "ndcg", "eval_at": [10], "num_leaves": p.num_leaves,
                "learning_rate": p.learning_rate, "min_data_in_leaf": p.min_data_in_leaf, "seed": self.seed,
                "deterministic": True, "force_row_wise": True, "num_threads": p.num_threads, "verbose": -1}

    # ------------------------------------------------------------------ fit / predict
    def fit(self, df: pd.DataFrame, features: Sequence[str] | None = None, progress: bool = False) -> "LambdaMART":
        """Train on ``df`` (rows of a query need not be contiguous: they are grouped stably)."""
        lgb = _lightgbm()
        c = resolve_columns(self.columns).require("judgment", purpose="LambdaMART")
        if c.query not in df.columns:
            raise DataError(f"{frame_source(df) or 'the training table'}: query column {c.query!r} not found; "
                            f"columns: {list(df.columns)}")
        feats = select_features(df, columns=c, features=features)
        if self.colorblind:
            feats = [f for f in feats if f != c.group]
        if not feats:
            raise DataError(f"{frame_source(df) or 'the training table'}: no feature columns to train on")
        x = numeric_matrix(df, feats, query=c.query)
        y = numeric_matrix(df, [c.judgment], query=c.query)[:, 0]
        codes, _ = query_codes(df, c.query)
        order = np.argsort(codes, kind="stable")
        labels, mode, edges = relevance_grades(y, self.params.grades)
        sizes = np.bincount(codes)
        data = lgb.Dataset(x[order], label=labels[order], group=sizes, feature_name=[str(f) for f in feats],
                           free_raw_data=True)
        evals: dict = {}
        callbacks = [lgb.record_evaluation(evals)] if self.record_history else []
        booster = lgb.train(self._lgb_params(), data, num_boost_round=self.params.n_estimators,
                            valid_sets=[data] if self.record_history else None,
                            valid_names=["train"] if self.record_history else None, callbacks=callbacks)
        ndcg = evals.get("train", {}).get("ndcg@10", [])
        self._set_state(booster, c, list(feats), mode, edges,
                        [{"iteration": i + 1, "ndcg_at_10": float(v)} for i, v in enumerate(ndcg)])
        return self

    def _set_state(self, booster, columns: RankingColumns, feats: list, mode: str, edges: list[float],
                   history: list[dict[str, float]]) -> None:
        self.booster_ = booster
        self.columns_ = columns
        self.feature_names_ = feats
        self.label_mode_ = mode
        self.grade_edges_ = edges
        self.history_ = history

    def predict(self, df: pd.DataFrame) -> np.ndarray:
        """The booster's score of every row (the query column is not needed)."""
        self.check_fitted()
        x = self._design(df)  # fairltr.fitted.FittedRanker: the feature columns, checked
        return np.asarray(self.booster_.predict(x, num_threads=self.params.num_threads), dtype=np.float64)

    def rank(self, df: pd.DataFrame, query: str | None = None) -> pd.DataFrame:
        """``df`` sorted by score within each query, with ``score`` and 1-based ``rank``."""
        self.check_fitted()
        q = query or self.query_
        if q not in df.columns:
            raise DataError(f"query column {q!r} not in the table; columns: {list(df.columns)}")
        return rank_frame(df, self.predict(df), columns=NAMES_ONLY.replace(query=q))

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> Path:
        """Write ``path`` (``.json``: fairltr's metadata) and :func:`booster_path_for` (LightGBM's
        text model file), each atomically, the booster first."""
        self.check_fitted()
        p = Path(path)
        if p.suffix != ".json":
            raise ConfigError(f"cannot save a LambdaMART model as {p}: use a .json path "
                              "(the LightGBM text model file is written beside it as .txt)")
        check_writable(p)
        booster = booster_path_for(p)
        text = self.booster_.model_to_string()
        atomic_write_text(booster, text)
        state = {
            "format": FORMAT, "format_version": FORMAT_VERSION, "params": asdict(self.params), "seed": self.seed,
            "colorblind": self.colorblind, "query": self.columns_.query, "group": self.columns_.group,
            "judgment": self.columns_.judgment, "feature_names": self.feature_names_,
            "label_mode": self.label_mode_, "grade_edges": self.grade_edges_, "history": self.history_,
            "booster_file": booster.name, "booster_sha256": _sha256(text),
            "lightgbm_version": _lightgbm().__version__,
        }
        atomic_write_text(p, json.dumps(state, indent=1))
        return p

    def saved_files(self, path: str | Path) -> list[Path]:
        """The files :meth:`save` wrote for ``path``: the metadata, then LightGBM's text model file."""
        return [Path(path), booster_path_for(path)]

    @classmethod
    def load_saved(cls, files: Sequence[str | Path]) -> "LambdaMART":
        """The model :meth:`save` wrote, from :meth:`saved_files` (the booster: the second file, else
        the one beside the metadata)."""
        return cls.load(files[0], booster_path=files[1] if len(files) > 1 else None)

    @classmethod
    def load(cls, path: str | Path, booster_path: str | Path | None = None) -> "LambdaMART":
        """Read a model written by :meth:`save`: every field checked, the booster file's SHA-256
        compared with the recorded one before LightGBM parses it, its features compared with
        ``feature_names``. Any defect is one :class:`DataError` naming the file and the field."""
        p = Path(path)
        if not p.is_file():
            raise DataError(f"model file not found: {p}")

        def bad(field: str, problem: str) -> DataError:
            return DataError(f"{p}: not a valid fairltr LambdaMART model file: {field!r} {problem}")

        try:
            state = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise DataError(f"{p}: not a fairltr LambdaMART model file: {one_line(exc)}") from None
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            raise DataError(f"{p}: not a fairltr LambdaMART model file (format {FORMAT!r} expected)")
        if state.get("format_version") != FORMAT_VERSION:
            raise bad("format_version", f"is {state.get('format_version')!r}; this fairltr reads {FORMAT_VERSION}")
        names = state.get("feature_names")
        if (not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names)
                or len(set(names)) != len(names)):
            raise bad("feature_names", "must be a non-empty list of distinct non-empty strings")
        for key in ("query", "judgment", "group", "booster_file", "booster_sha256", "label_mode"):
            if not isinstance(state.get(key), str) or not state[key]:
                raise bad(key, "must be a non-empty string")
        try:
            params = GBDTParams(**state["params"])
            columns = RankingColumns(query=state["query"], group=state["group"], judgment=state["judgment"])
        except (ConfigError, TypeError) as exc:
            raise bad("params", one_line(exc)) from None
        booster_file = Path(booster_path) if booster_path is not None else p.parent / Path(state["booster_file"]).name
        try:
            text = booster_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"{p}: cannot read its LightGBM model file {booster_file}: {one_line(exc)}") from None
        if _sha256(text) != state["booster_sha256"]:
            raise DataError(f"{booster_file} does not match the SHA-256 recorded in {p.name}: the LightGBM model "
                            "file was changed or corrupted")
        lgb = _lightgbm()
        try:
            booster = lgb.Booster(model_str=text)
        except Exception as exc:  # LightGBM raises LightGBMError (and others) for a bad text
            raise DataError(f"{booster_file}: LightGBM cannot read the model: {one_line(exc)}") from None
        if booster.feature_name() != names:
            raise bad("feature_names", f"{names} differ from the booster's {booster.feature_name()}")
        history = state.get("history", [])
        if not isinstance(history, list) or not all(isinstance(h, dict) for h in history):
            raise bad("history", "must be a list of records")
        model = cls(params, seed=int(state.get("seed", 0)), colorblind=bool(state.get("colorblind", False)),
                    columns=columns)
        edges = state.get("grade_edges", [])
        model._set_state(booster, columns, names, state["label_mode"], [float(e) for e in edges], history)
        return model

