"""The DELTR estimator: a linear ranker trained on ListNet + gamma * disparate exposure.

Full-batch over padded queries (no per-query loop), deterministic for a seed, on CPU or CUDA.
Weights are saved as JSON or safetensors (never pickle).
"""

from __future__ import annotations

import json
import math
import numbers
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import torch

from fairltr.data import RankingBatch, query_codes, to_batch
from fairltr.errors import ConfigError, DataError
from fairltr.losses.linear import LinearDELTRObjective, fused_variant
from fairltr.losses.objective import deltr_objective
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
    return out.reset_index(drop=True)


class DELTR:
    """Disparate Exposure Learning to Rank (Zehlike et al.) with a linear scoring function.

    Objective: sum_q ListNet_q + gamma * U_q + l2 * ||w||^2 (SPEC §2); ``gamma=0`` is standard
    ListNet; ``colorblind=True`` removes the group column from the features.
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
    def _select_features(self, df: pd.DataFrame, query: str, judgment: str, features: Sequence[str] | None) -> list[str]:
        if features is None:
            skip = {query, judgment}
            features = [c for c in df.columns if c not in skip and pd.api.types.is_numeric_dtype(df[c])]
        features = list(features)
        if self.colorblind:
            features = [f for f in features if f != self.protected]
        if not features:
            raise DataError("no feature columns to train on (after dropping the group column for colorblind)")
        return features

    def _design(self, df: pd.DataFrame) -> np.ndarray:
        missing = [f for f in self.feature_names_ if f not in df.columns]
        if missing:
            raise DataError(f"missing feature column(s) {missing}; the model was trained on {self.feature_names_}")
        x = df[self.feature_names_].to_numpy(dtype=np.float64)
        bad = ~np.isfinite(x)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise DataError(f"non-finite value in column {self.feature_names_[c]!r} at row {r}")
        return x

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
    ) -> "DELTR":
        """Train on a ranking table; ``callback(iteration, terms)`` sees every iteration."""
        if self.protected not in df.columns:
            raise DataError(f"group column {self.protected!r} not in the training table; columns: {list(df.columns)}")
        self.query_, self.judgment_ = query, judgment
        self.feature_names_ = self._select_features(df, query, judgment, features)
        batch = to_batch(df, query=query, group=self.protected, judgment=judgment,
                         features=self.feature_names_, dtype=self.dtype)
        return self.fit_batch(batch, callback=callback, progress=progress)

    def fit_batch(
        self,
        batch: RankingBatch,
        callback: Callable[[int, dict[str, float]], None] | None = None,
        progress: bool = False,
    ) -> "DELTR":
        """Train on an already padded batch (its ``feature_names`` become the model's; with
        ``colorblind=True`` a feature named like the group column is dropped here too)."""
        device = self._device()
        torch.manual_seed(self.seed)
        gen = torch.Generator().manual_seed(self.seed)
        names = list(batch.feature_names) or list(self.feature_names_)
        x = batch.features.to(self.dtype)
        if self.colorblind and self.protected in names:
            keep = [i for i, name in enumerate(names) if name != self.protected]
            if not keep:
                raise DataError("no feature columns to train on after dropping the group column (colorblind)")
            x, names = x[..., keep], [names[i] for i in keep]
        self.feature_names_ = names
        m = batch.mask
        if self.standardize:
            real = x[m]
            mean = real.mean(0)
            std = real.std(0, unbiased=False)
            std = torch.where(std > 0, std, torch.ones_like(std))
        else:
            mean = torch.zeros(x.shape[-1], dtype=self.dtype)
            std = torch.ones(x.shape[-1], dtype=self.dtype)
        x = ((x - mean) / std).masked_fill(~m.unsqueeze(-1), 0.0).to(device)
        y, g, m = batch.judgments.to(device, self.dtype), batch.groups.to(device), m.to(device)
        n_groups = max(2, int(batch.groups[batch.mask].max()) + 1)
        w = (0.01 * torch.randn(x.shape[-1], generator=gen, dtype=self.dtype)).to(device).requires_grad_(True)

        fused, variant = fused_variant(self.fairness_loss)
        if fused:  # analytic gradient: one X w and one X^T g pass per evaluation
            objective = LinearDELTRObjective(x, y, g, m, self.gamma, variant=variant,
                                             reduce=self.reduce, n_groups=n_groups)
            del x

            def evaluate():
                return objective(w)
        else:  # a plugin fairness loss: autograd through the scores

            def evaluate():
                return deltr_objective(x @ w, y, g, m, self.gamma, fairness_loss=self.fairness_loss,
                                       reduce=self.reduce, n_groups=n_groups)

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
        """Write ``.json`` (everything as text) or ``.safetensors`` (tensors + JSON metadata)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        state = self._state()
        if p.suffix == ".safetensors":
            from safetensors.numpy import save_file
            save_file(
                {"weights": self.weights_, "mean": self.mean_, "scale": self.scale_},
                str(p), metadata={"fairltr": json.dumps(state)},
            )
        else:
            state.update(weights=self.weights_.tolist(), mean=self.mean_.tolist(), scale=self.scale_.tolist())
            p.write_text(json.dumps(state, indent=1))
        return p

    @classmethod
    def load(cls, path: str | Path) -> "DELTR":
        """Read a model written by :meth:`save` (format chosen by suffix)."""
        p = Path(path)
        if not p.exists():
            raise DataError(f"model file not found: {p}")
        try:
            if p.suffix == ".safetensors":
                from safetensors import safe_open
                with safe_open(str(p), framework="numpy") as fh:
                    state = json.loads(fh.metadata()["fairltr"])
                    arrays = {k: fh.get_tensor(k) for k in ("weights", "mean", "scale")}
            else:
                state = json.loads(p.read_text())
                arrays = {k: np.asarray(state[k], dtype=np.float64) for k in ("weights", "mean", "scale")}
        except (KeyError, ValueError, json.JSONDecodeError) as exc:
            raise DataError(f"{p} is not a fairltr DELTR model file: {exc}") from None
        if state.get("format") != "fairltr.DELTR":
            raise DataError(f"{p} is not a fairltr DELTR model file")
        params = dict(state["params"])
        params["dtype"] = getattr(torch, params.get("dtype", "float64"))
        model = cls(**params)
        model.feature_names_ = list(state["feature_names"])
        model.query_ = state.get("query", "query_id")
        model.judgment_ = state.get("judgment", "judgment")
        model.n_iter_ = int(state.get("n_iter", 0))
        model.history = list(state.get("history", []))
        model.weights_ = np.asarray(arrays["weights"], dtype=np.float64)
        model.mean_ = np.asarray(arrays["mean"], dtype=np.float64)
        model.scale_ = np.asarray(arrays["scale"], dtype=np.float64)
        return model
