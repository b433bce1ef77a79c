"""The DELTR estimator: a linear ranker trained on ListNet + gamma * disparate exposure.

Full-batch over queries padded in length buckets (no per-query loop; memory proportional to the rows),
deterministic for a seed, on CPU or CUDA.
Weights are saved as JSON or safetensors (never pickle).
"""

from __future__ import annotations

import functools
import json
import math
import numbers
import struct
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import torch

from fairltr.buckets import BucketedBatch, split_batch, to_buckets
from fairltr.data import (ORIGIN_KEY, RankingBatch, check_column_roles, frame_source, numeric_matrix, query_codes,
                          select_features, show_value)
from fairltr.errors import ConfigError, DataError, one_line
from fairltr.files import atomic_write_bytes, atomic_write_text, check_writable
from fairltr.losses.linear import LinearDELTRObjective, fused_variant
from fairltr.losses.objective import ObjectiveTerms, deltr_objective
from fairltr.losses.registry import get_loss

__all__ = ["DELTR", "resolve_device", "rank_frame"]

FORMAT_VERSION = 1


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` -> CUDA when present, else CPU."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def rank_frame(df: pd.DataFrame, scores: np.ndarray, query: str, score_col: str = "score") -> pd.DataFrame:
    """``df`` with ``score`` and 1-based ``rank`` columns, sorted by decreasing score within each
    query; queries stay in order of first appearance and are never mixed; ties keep input order."""
    codes, _ = query_codes(df, query)
    order = np.lexsort((np.arange(len(df)), -np.asarray(scores, dtype=np.float64), codes))
    out = df.iloc[order].copy()
    out[score_col] = np.asarray(scores, dtype=np.float64)[order]
    out["rank"] = out.groupby(codes[order], sort=False).cumcount().to_numpy() + 1
    out.attrs.pop(ORIGIN_KEY, None)  # rows are re-ordered and re-indexed: the reader's line map no longer applies
    return out.reset_index(drop=True)


class DELTR:
    """Disparate Exposure Learning to Rank (Zehlike et al.) with a linear scoring function.

    Objective: sum_q ListNet_q + gamma * U_q + l2 * ||w||^2 (SPEC §2); ``gamma=0`` is standard
    ListNet. The group column (``protected``) is a feature by default, as in the paper's
    "standard" ranker; ``colorblind=True`` removes it from the features. Every other column
    except the query, judgment and item columns must be numeric (see :meth:`fit`).
    """

    def __init__(
        self,
        gamma: float,
        protected: str = "protected",
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
    ) -> None:
        if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real) or not math.isfinite(gamma) or gamma < 0:
            raise ConfigError(f"gamma must be a finite number >= 0, got {gamma!r}")
        if not isinstance(tol, numbers.Real) or not tol >= 0:
            raise ConfigError(f"tol must be a number >= 0, got {tol!r}")
        if optimizer not in ("lbfgs", "adam"):
            raise ConfigError(f"optimizer must be 'lbfgs' or 'adam', got {optimizer!r}")
        if l2 < 0:
            raise ConfigError(f"l2 must be >= 0, got {l2}")
        if max_iter is not None and max_iter < 1:
            raise ConfigError(f"max_iter must be >= 1, got {max_iter}")
        if lr is not None and not lr > 0:
            raise ConfigError(f"lr must be > 0, got {lr}")
        if reduce not in ("max", "mean"):
            raise ConfigError(f"reduce must be 'max' or 'mean', got {reduce!r}")
        if get_loss(fairness_loss).kind != "ranking":
            raise ConfigError(f"fairness_loss {fairness_loss!r} is not a ranking loss")
        self.gamma = float(gamma)
        self.protected = protected
        self.colorblind = colorblind
        self.standardize = standardize
        self.l2 = float(l2)
        self.optimizer = optimizer
        self.max_iter = max_iter if max_iter is not None else (200 if optimizer == "lbfgs" else 3000)
        self.lr = lr if lr is not None else (1.0 if optimizer == "lbfgs" else 0.01)
        self.tol = float(tol)
        self.seed = seed
        self.device = device
        self.fairness_loss = fairness_loss
        self.reduce = reduce
        self.dtype = dtype
        self.history: list[dict[str, float]] = []
        self.weights_: np.ndarray | None = None
        self.feature_names_: list[str] = []
        self.mean_: np.ndarray | None = None
        self.scale_: np.ndarray | None = None
        self.query_: str = "query_id"
        self.judgment_: str = "judgment"
        self.n_iter_: int = 0

    # ------------------------------------------------------------------ config
    def get_params(self) -> dict[str, Any]:
        """Constructor arguments (JSON-serialisable), as logged to MLflow."""
        return {
            "gamma": self.gamma, "protected": self.protected, "colorblind": self.colorblind,
            "standardize": self.standardize, "l2": self.l2, "optimizer": self.optimizer,
            "max_iter": self.max_iter, "lr": self.lr, "tol": self.tol, "seed": self.seed,
            "device": str(self.device), "fairness_loss": self.fairness_loss, "reduce": self.reduce,
            "dtype": str(self.dtype).replace("torch.", ""),
        }

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"DELTR({args})"

    # ------------------------------------------------------------------ features
    def _select_features(
        self, df: pd.DataFrame, query: str, judgment: str, features: Sequence[str] | None, item: str | None = None
    ) -> list[str]:
        """:func:`fairltr.data.select_features`, minus the group column when colorblind."""
        chosen = select_features(df, query=query, judgment=judgment, item=item, group=self.protected,
                                 features=features)
        if self.colorblind:
            chosen = [f for f in chosen if f != self.protected]
        if not chosen:
            raise DataError(f"{frame_source(df) or 'the training table'}: no feature columns to train on "
                            f"(colorblind drops the group column {self.protected!r})")
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

    def _check_fairness_signal(self, batches: RankingBatch | Sequence[RankingBatch], where: str | None) -> None:
        """With gamma > 0 the fairness term needs protected (group >= 1) and non-protected
        candidates, and the exposure losses a query holding both; else it is 0 everywhere.
        ``batches``: one padded batch or the length buckets of one table."""
        if self.gamma == 0 or self.fairness_loss == "none":
            return
        if isinstance(batches, RankingBatch):
            batches = [batches]
        any_protected = any_unprotected = any_mixed = False
        for batch in batches:
            m = batch.mask.cpu()
            protected = batch.groups.cpu() >= 1
            has_p, has_u = (protected & m).any(dim=1), (~protected & m).any(dim=1)
            any_protected |= bool(has_p.any())
            any_unprotected |= bool(has_u.any())
            any_mixed |= bool((has_p & has_u).any())
        prefix = f"{where}: " if where else ""
        advice = f"use gamma 0 or a different group column (--group; now {self.protected!r})"
        useless = f"so the fairness term would be 0 everywhere and gamma={self.gamma:g} would do nothing; {advice}"
        if not any_protected:
            raise DataError(f"{prefix}no protected candidate (group column {self.protected!r} >= 1) in the "
                            f"training data, {useless}")
        if not any_unprotected:
            raise DataError(f"{prefix}every candidate is protected (group column {self.protected!r} >= 1) in the "
                            f"training data, {useless}")
        if fused_variant(self.fairness_loss)[0] and not any_mixed:
            raise DataError(f"{prefix}no query has both protected and non-protected candidates (group column "
                            f"{self.protected!r}), {useless}")

    # ------------------------------------------------------------------ training
    def _device(self) -> torch.device:
        return resolve_device(self.device)

    def fit(
        self,
        df: pd.DataFrame,
        query: str = "query_id",
        judgment: str = "judgment",
        features: Sequence[str] | None = None,
        callback: Callable[[int, dict[str, float]], None] | None = None,
        progress: bool = False,
        item: str | None = None,
    ) -> "DELTR":
        """Train on a ranking table; ``callback(iteration, terms)`` sees every iteration.

        ``features=None`` takes every column except query, judgment and ``item`` (an optional
        document id column, unique within a query); the group column is a feature too unless
        ``colorblind``. Every feature must be numeric: a non-numeric cell is a DataError naming
        the file, line, column, query and value. The query, judgment, group and item columns
        must be distinct; gamma > 0 needs protected and non-protected candidates.
        """
        check_column_roles(query=query, group=self.protected, judgment=judgment, item=item)
        if self.protected not in df.columns:
            where = frame_source(df)
            raise DataError(f"{where + ': ' if where else ''}group column {self.protected!r} not in the training "
                            f"table; columns: {list(df.columns)}")
        feature_names = self._select_features(df, query, judgment, features, item)
        buckets = to_buckets(df, query=query, group=self.protected, judgment=judgment, item=item,
                             features=feature_names, dtype=self.dtype)
        self._check_fairness_signal(buckets.batches, frame_source(df))
        self.query_, self.judgment_ = query, judgment
        self.feature_names_ = feature_names
        return self.fit_batch(buckets, callback=callback, progress=progress)

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
        one bucket and is trained exactly as one batch."""
        device = self._device()
        torch.manual_seed(self.seed)
        gen = torch.Generator().manual_seed(self.seed)
        batches = list((split_batch(batch) if isinstance(batch, RankingBatch) else batch).batches)
        names = list(batches[0].feature_names) or list(self.feature_names_)
        xs = [b.features.to(self.dtype) for b in batches]
        if self.colorblind and self.protected in names:
            keep = [i for i, name in enumerate(names) if name != self.protected]
            if not keep:
                raise DataError("no feature columns to train on after dropping the group column (colorblind)")
            xs, names = [x[..., keep] for x in xs], [names[i] for i in keep]
        n_features = xs[0].shape[-1]
        if not names or n_features != len(names):
            raise DataError(f"the batch has {n_features} feature(s) but {len(names)} feature name(s)")
        self._check_fairness_signal(batches, None)
        self.feature_names_ = names
        if self.standardize:
            real = xs[0][batches[0].mask] if len(xs) == 1 else torch.cat([x[b.mask] for x, b in zip(xs, batches)])
            mean = real.mean(0)
            std = real.std(0, unbiased=False)
            std = torch.where(std > 0, std, torch.ones_like(std))
            del real
        else:
            mean = torch.zeros(n_features, dtype=self.dtype)
            std = torch.ones(n_features, dtype=self.dtype)
        real_groups = [b.groups[b.mask] for b in batches if bool(b.mask.any())]
        n_groups = max(2, max((int(gr.max()) + 1 for gr in real_groups), default=1))
        w = (0.01 * torch.randn(n_features, generator=gen, dtype=self.dtype)).to(device).requires_grad_(True)

        fused, variant = fused_variant(self.fairness_loss)
        # buckets without a real candidate contribute nothing (keep one so that the sum is defined)
        used = [i for i, b in enumerate(batches) if bool(b.mask.any())] or [0]
        parts = []  # per bucket: a fused objective, or the standardised tensors for autograd
        for i in used:
            b = batches[i]
            x = ((xs[i] - mean) / std).masked_fill(~b.mask.unsqueeze(-1), 0.0).to(device)
            xs[i] = None  # type: ignore[call-overload]  # release the (colorblind) copy early
            y, g, m = b.judgments.to(device, self.dtype), b.groups.to(device), b.mask.to(device)
            if fused:  # analytic gradient: one X w and one X^T g pass per evaluation
                parts.append(LinearDELTRObjective(x, y, g, m, self.gamma, variant=variant,
                                                  reduce=self.reduce, n_groups=n_groups))
            else:
                parts.append((x, y, g, m))
            del x
        del xs

        def bucket_terms(part) -> ObjectiveTerms:
            if fused:  # analytic gradient: one X w and one X^T g pass per evaluation
                return part(w)
            x, y, g, m = part  # a plugin fairness loss: autograd through the scores
            return deltr_objective(x @ w, y, g, m, self.gamma, fairness_loss=self.fairness_loss,
                                   reduce=self.reduce, n_groups=n_groups)

        def evaluate() -> ObjectiveTerms:
            t = bucket_terms(parts[0])
            for part in parts[1:]:  # the objective is a sum over queries: add the buckets' sums
                u = bucket_terms(part)
                t = ObjectiveTerms(t.total + u.total, t.listnet + u.listnet, t.exposure + u.exposure)
            return t

        if fused and len(parts) == 1:  # one bucket (e.g. equal-length queries): call the objective directly
            evaluate = functools.partial(parts[0], w)  # noqa: F811

        def terms():
            t = evaluate()
            total = t.total + self.l2 * (w * w).sum() if self.l2 else t.total
            return total, t

        self.history = []
        if self.optimizer == "lbfgs":
            opt: torch.optim.Optimizer = torch.optim.LBFGS(
                [w], lr=self.lr, max_iter=1, max_eval=25, history_size=20, line_search_fn="strong_wolfe",
                tolerance_grad=0.0, tolerance_change=0.0,
            )
        else:
            opt = torch.optim.Adam([w], lr=self.lr)

        # The first closure call of every optimizer step is made at the current weights, so it
        # gives the objective after the previous iteration (line-search trials are not recorded).
        last: dict[str, torch.Tensor] = {}

        def closure():
            opt.zero_grad()
            total, t = terms()
            total.backward()
            if not last:
                last.update(total=total.detach(), listnet=t.listnet.detach(), exposure=t.exposure.detach())
            return total

        def record(iteration: int) -> dict[str, float]:
            rec = {"iteration": iteration, "total": float(last["total"]), "listnet": float(last["listnet"]),
                   "exposure": float(last["exposure"])}
            if not math.isfinite(rec["total"]):
                raise FloatingPointError(
                    f"DELTR objective became {rec['total']} at iteration {iteration}; try a smaller lr or gamma"
                )
            self.history.append(rec)
            if callback is not None:
                callback(iteration, rec)
            return rec

        bar = None
        if progress:
            from tqdm.auto import tqdm
            bar = tqdm(total=self.max_iter, desc=f"DELTR gamma={self.gamma:g}", unit="it", leave=False)
        # history[i] is the objective after i optimizer steps; the last entry is always the
        # objective at the returned weights, and n_iter_ is the number of steps taken.
        prev = math.inf
        it = 0
        while it < self.max_iter:
            last.clear()
            opt.step(closure)
            rec = record(it)
            it += 1
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{rec['total']:.6g}")
            if abs(prev - rec["total"]) <= self.tol * max(1.0, abs(rec["total"])):
                break
            prev = rec["total"]
        last.clear()
        closure()  # objective at the final weights
        record(it)
        if bar is not None:
            bar.close()
        self.n_iter_ = it
        self.weights_ = w.detach().cpu().numpy().copy()
        self.mean_ = mean.cpu().numpy()
        self.scale_ = std.cpu().numpy()
        return self

    # ------------------------------------------------------------------ inference
    def _check_fitted(self) -> None:
        if self.weights_ is None:
            raise ConfigError("this DELTR model is not fitted yet: call fit() or DELTR.load()")

    @property
    def coef_(self) -> np.ndarray:
        """Weights in the original (unstandardised) feature units: s = x @ coef_ + const."""
        self._check_fitted()
        return self.weights_ / self.scale_

    def predict(self, df: pd.DataFrame) -> np.ndarray:
        """Score every row (a linear function of its features; the query is not needed)."""
        self._check_fitted()
        x = self._design(df)
        return ((x - self.mean_) / self.scale_) @ self.weights_

    def predict_batch(self, batch: RankingBatch) -> torch.Tensor:
        """Scores (Q, N) of a padded batch with this model's features; 0 on padding."""
        self._check_fitted()
        w = torch.as_tensor(self.weights_, dtype=batch.features.dtype, device=batch.features.device)
        mean = torch.as_tensor(self.mean_, dtype=w.dtype, device=w.device)
        std = torch.as_tensor(self.scale_, dtype=w.dtype, device=w.device)
        return (((batch.features - mean) / std) @ w).masked_fill(~batch.mask, 0.0)

    def rank(self, df: pd.DataFrame, query: str | None = None) -> pd.DataFrame:
        """``df`` sorted by predicted score within each query, with ``score`` and 1-based ``rank``."""
        q = query or self.query_
        if q not in df.columns:
            raise DataError(f"query column {q!r} not in the table; columns: {list(df.columns)}")
        return rank_frame(df, self.predict(df), q)

    # ------------------------------------------------------------------ persistence
    def _state(self) -> dict[str, Any]:
        self._check_fitted()
        return {
            "format": "fairltr.DELTR", "format_version": FORMAT_VERSION, "params": self.get_params(),
            "feature_names": self.feature_names_, "query": self.query_, "judgment": self.judgment_,
            "n_iter": self.n_iter_, "history": self.history,
        }

    def save(self, path: str | Path) -> Path:
        """Write ``.json`` (everything as text) or ``.safetensors`` (tensors + JSON metadata),
        atomically: a failure or Ctrl-C midway leaves the previous file intact. Another suffix
        is a :class:`ConfigError`."""
        p = Path(path)
        state = self._state()
        if p.suffix not in MODEL_SUFFIXES:
            raise ConfigError(f"cannot save a DELTR model as {p}: unsupported file type {p.suffix or '(none)'!r}; "
                              f"use one of {list(MODEL_SUFFIXES)}")
        check_writable(p)
        if p.suffix == ".safetensors":
            from safetensors.numpy import save as to_bytes

            tensors = {k: np.ascontiguousarray(v, dtype=np.float64)
                       for k, v in (("weights", self.weights_), ("mean", self.mean_), ("scale", self.scale_))}
            atomic_write_bytes(p, to_bytes(tensors, metadata={"fairltr": json.dumps(state)}))
        else:
            state.update(weights=self.weights_.tolist(), mean=self.mean_.tolist(), scale=self.scale_.tolist())
            atomic_write_text(p, json.dumps(state, indent=1))
        return p

    @classmethod
    def load(cls, path: str | Path) -> "DELTR":
        """Read a model written by :meth:`save` (format chosen by suffix), validating every field:
        known keys only, the format marker and version, parameter types (``dtype`` from
        {float32, float64}), distinct feature names, weights/mean/scale as finite float32/float64
        vectors of one value per feature, scale > 0, the history records. Any defect is a
        :class:`DataError` naming the file and the field."""
        p = Path(path)
        if not p.exists():
            raise DataError(f"model file not found: {p}")
        if not p.is_file():
            raise DataError(f"{p}: not a fairltr DELTR model file: not a regular file")
        try:
            data = p.read_bytes()
        except OSError as exc:
            raise DataError(f"{p}: cannot read the model file: {exc.strerror or exc}") from None
        try:
            if p.suffix == ".safetensors":
                state, arrays = _read_safetensors(p, data)
                _check_state(p, state, STATE_KEYS, "the 'fairltr' metadata")
            else:
                state = _json_object(p, data, "the file")
                _check_state(p, state, STATE_KEYS | set(ARRAY_KEYS), "the file")
                arrays = {k: _json_vector(p, k, state[k]) for k in ARRAY_KEYS}
            params = _params(p, state["params"])
            names = state["feature_names"]
            if (not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names)
                    or len(set(names)) != len(names)):
                raise _bad(p, "feature_names", "must be a non-empty list of distinct non-empty strings")
            for key in ("query", "judgment"):
                if not isinstance(state[key], str) or not state[key]:
                    raise _bad(p, key, f"must be a non-empty string, got {show_value(state[key])}")
                if state[key] in names:
                    raise _bad(p, key, f"{state[key]!r} is also a feature in 'feature_names'")
            if state["query"] == state["judgment"]:
                raise _bad(p, "judgment", f"the query and judgment columns must differ, both are {state['query']!r}")
            if params["colorblind"] and params["protected"] in names:
                raise _bad(p, "feature_names",
                           f"a colorblind model cannot use the group column {params['protected']!r}")
            for key, arr in arrays.items():
                if arr.shape != (len(names),):
                    raise _bad(p, key, f"shape {tuple(arr.shape)}, expected ({len(names)},): one value per feature "
                                       f"in 'feature_names'")
                if not np.all(np.isfinite(arr)):
                    raise _bad(p, key, "holds a non-finite value (NaN or infinity)")
            if not np.all(arrays["scale"] > 0):
                raise _bad(p, "scale", f"must be > 0, got {show_value(float(arrays['scale'].min()))}")
            n_iter = state["n_iter"]
            if not _is_int(n_iter) or n_iter < 0:
                raise _bad(p, "n_iter", f"must be an integer >= 0, got {show_value(n_iter)}")
            history = _history(p, state["history"])
            try:
                model = cls(**params)
            except ConfigError as exc:
                raise _bad(p, "params", str(exc)) from None
        except DataError:
            raise
        except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError, RecursionError) as exc:
            raise DataError(f"{p}: not a fairltr DELTR model file: {one_line(exc)}") from None
        model.feature_names_ = list(names)
        model.query_ = state["query"]
        model.judgment_ = state["judgment"]
        model.n_iter_ = int(n_iter)
        model.history = history
        model.weights_ = arrays["weights"].astype(np.float64)
        model.mean_ = arrays["mean"].astype(np.float64)
        model.scale_ = arrays["scale"].astype(np.float64)
        return model


# ---------------------------------------------------------------------------- model file checks
MODEL_SUFFIXES = (".json", ".safetensors")
STATE_KEYS = frozenset({"format", "format_version", "params", "feature_names", "query", "judgment", "n_iter",
                        "history"})
ARRAY_KEYS = ("weights", "mean", "scale")
HISTORY_KEYS = frozenset({"iteration", "total", "listnet", "exposure"})
DTYPES = {"float32": torch.float32, "float64": torch.float64}
_PARAM_KINDS = {
    "gamma": "number", "protected": "str", "colorblind": "bool", "standardize": "bool", "l2": "number",
    "optimizer": "str", "max_iter": "int", "lr": "number", "tol": "number", "seed": "int", "device": "str",
    "fairness_loss": "str", "reduce": "str", "dtype": "str",
}
# safetensors dtype codes accepted in a model file (little-endian floats only)
_SAFETENSORS_DTYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8")}


def _bad(p: Path, field: str, problem: str) -> DataError:
    return DataError(f"{p}: not a fairltr DELTR model file: field {field!r}: {problem}")


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: object) -> bool:
    """A finite JSON number (not a boolean; integers beyond float range are not numbers here)."""
    if isinstance(v, float):
        return math.isfinite(v)
    return _is_int(v) and abs(v) < 2 ** 1023


def _json_object(p: Path, data: bytes, what: str) -> dict:
    try:
        obj = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataError(f"{p}: not a fairltr DELTR model file: {what} is not UTF-8 text "
                        f"(byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{p}: not a fairltr DELTR model file: {what} is not valid JSON "
                        f"(line {exc.lineno} column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise DataError(f"{p}: not a fairltr DELTR model file: {what} is nested too deeply") from None
    if not isinstance(obj, dict):
        raise DataError(f"{p}: not a fairltr DELTR model file: {what} holds a JSON {type(obj).__name__}, "
                        "not an object")
    return obj


def _check_state(p: Path, state: dict, expected: frozenset | set, what: str) -> None:
    """The format marker and version first (another program's JSON says so), then the keys."""
    if "format" not in state:
        raise _bad(p, "format", f"missing from {what}; expected 'fairltr.DELTR'")
    _check_format(p, state)
    _check_keys(p, state, expected, what)


def _check_keys(p: Path, state: dict, expected: frozenset | set, what: str) -> None:
    missing = sorted(set(expected) - set(state))
    extra = sorted(str(k) for k in set(state) - set(expected))
    if missing:
        raise _bad(p, missing[0], f"missing from {what} (missing: {missing})")
    if extra:
        raise _bad(p, extra[0], f"unknown field in {what} (unknown: {extra})")


def _check_format(p: Path, state: dict) -> None:
    if state.get("format") != "fairltr.DELTR":
        raise _bad(p, "format", f"{show_value(state.get('format'))}, expected 'fairltr.DELTR'")
    version = state.get("format_version")
    if not _is_int(version) or version != FORMAT_VERSION:
        raise _bad(p, "format_version", f"unsupported version {show_value(version)}; this fairltr reads "
                                        f"version {FORMAT_VERSION}")


def _json_vector(p: Path, field: str, value: object) -> np.ndarray:
    # NaN / infinity (Python's json reads them) pass here and are reported as non-finite later
    if not isinstance(value, list) or not all(_is_number(v) or isinstance(v, float) for v in value):
        raise _bad(p, field, "must be a flat list of numbers")
    return np.asarray(value, dtype=np.float64)


def _params(p: Path, params: object) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise _bad(p, "params", f"must be an object, got {type(params).__name__}")
    missing = sorted(set(_PARAM_KINDS) - set(params))
    extra = sorted(str(k) for k in set(params) - set(_PARAM_KINDS))
    if missing or extra:
        raise _bad(p, "params", f"missing {missing}, unknown {extra}" if missing and extra
                   else f"missing {missing}" if missing else f"unknown key(s) {extra}")
    out: dict[str, Any] = {}
    for key, kind in _PARAM_KINDS.items():
        v = params[key]
        ok = {"number": _is_number, "int": _is_int, "bool": lambda x: isinstance(x, bool),
              "str": lambda x: isinstance(x, str)}[kind](v)
        if not ok:
            raise _bad(p, f"params.{key}", f"must be a {'finite number' if kind == 'number' else kind}, "
                                           f"got {show_value(v)}")
        out[key] = v
    if out["dtype"] not in DTYPES:  # never getattr(torch, <text from the file>)
        raise _bad(p, "params.dtype", f"{out['dtype']!r} is not one of {sorted(DTYPES)}")
    out["dtype"] = DTYPES[out["dtype"]]
    if out["device"] != "auto":
        try:
            torch.device(out["device"])
        except (RuntimeError, ValueError):
            raise _bad(p, "params.device", f"{out['device']!r} is not a torch device") from None
    return out


def _history(p: Path, history: object) -> list[dict[str, float]]:
    if not isinstance(history, list):
        raise _bad(p, "history", f"must be a list of records, got {type(history).__name__}")
    out = []
    for i, rec in enumerate(history):
        if not isinstance(rec, dict) or set(rec) != HISTORY_KEYS:
            raise _bad(p, "history", f"record {i} must have exactly the keys {sorted(HISTORY_KEYS)}")
        if not _is_int(rec["iteration"]) or not all(_is_number(rec[k]) for k in ("total", "listnet", "exposure")):
            raise _bad(p, "history", f"record {i} must hold an integer iteration and finite numbers")
        out.append(dict(rec))
    return out


def _read_safetensors(p: Path, data: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    """Parse and check a safetensors file by its published layout (8-byte little-endian header
    length, JSON header, contiguous little-endian buffers). Done here rather than by the
    safetensors package so that every defect becomes a DataError naming the field (the package
    raises SafetensorError or panics on some malformed files)."""
    if len(data) < 8:
        raise DataError(f"{p}: not a fairltr DELTR model file: truncated ({len(data)} bytes; a safetensors file "
                        "starts with an 8-byte header length)")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise DataError(f"{p}: not a fairltr DELTR model file: truncated (the header needs {n} bytes, "
                        f"{len(data) - 8} follow)")
    header = _json_object(p, data[8:8 + n], "the safetensors header")
    body = memoryview(data)[8 + n:]
    meta = header.pop("__metadata__", None)
    if not isinstance(meta, dict) or set(meta) != {"fairltr"} or not isinstance(meta["fairltr"], str):
        raise _bad(p, "__metadata__", "must hold exactly one entry, 'fairltr' (the model state as JSON text)")
    _check_keys(p, header, set(ARRAY_KEYS), "the tensors")
    arrays: dict[str, np.ndarray] = {}
    spans = []
    for name in ARRAY_KEYS:
        info = header[name]
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise _bad(p, name, "tensor entry must have exactly 'dtype', 'shape' and 'data_offsets'")
        dtype = _SAFETENSORS_DTYPES.get(info["dtype"]) if isinstance(info["dtype"], str) else None
        if dtype is None:
            raise _bad(p, name, f"dtype {show_value(info['dtype'])}; only F32 and F64 (float32, float64) are accepted")
        shape, offsets = info["shape"], info["data_offsets"]
        if not isinstance(shape, list) or len(shape) != 1 or not _is_int(shape[0]) or shape[0] < 0:
            raise _bad(p, name, f"shape {show_value(shape)}; expected a vector [n]")
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_int(o) for o in offsets)
                or not 0 <= offsets[0] <= offsets[1] <= len(body)):
            raise _bad(p, name, f"data_offsets {show_value(offsets)} lie outside the {len(body)}-byte data "
                                "(truncated file?)")
        if offsets[1] - offsets[0] != shape[0] * dtype.itemsize:
            raise _bad(p, name, f"data_offsets {offsets} do not hold {shape[0]} {info['dtype']} value(s)")
        arrays[name] = np.frombuffer(body, dtype=dtype, count=shape[0], offset=offsets[0]).astype(np.float64)
        spans.append(tuple(offsets))
    end = 0
    for begin, stop in sorted(spans):
        if begin != end:
            raise DataError(f"{p}: not a fairltr DELTR model file: tensor data overlap or leave a gap at byte {end}")
        end = stop
    if end != len(body):
        raise DataError(f"{p}: not a fairltr DELTR model file: {len(body) - end} unexpected byte(s) after the tensor "
                        "data")
    state = _json_object(p, meta["fairltr"].encode("utf-8"), "the 'fairltr' metadata")
    return state, arrays
