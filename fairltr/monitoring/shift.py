"""Population shift of a window against the training data: the category mix of every group
attribute and the feature means, TESTED against sampling noise.

* category mix: share of each category among the window's candidates vs the training table's;
  effect size TVD = 1/2 sum_c |share_w(c) - share_t(c)| per attribute; test: goodness of fit of the
  window's counts to the training shares (Pearson's chi-square; its exact Monte-Carlo p-value from
  :data:`MC_DRAWS` multinomial draws when an expected count is below 5);
* features: effect size SMD = (mean_w - mean_t) / std_t per feature; test: z = SMD * sqrt(n_w),
  two-sided normal p-value.

:func:`shift_summary` applies Holm over every test of the run (attributes and features of every
window) at level 1 - confidence (0.95 unless ``--confidence`` says otherwise): a window "shifted"
only when one of its tests is rejected, so that sampling noise of small weekly pools is not a shift.
A failing window that shifted reads "the pool changed"; one that did not, "the model treats the pool
differently". Labels the window holds and the profile lacks (``African-American`` vs ``Black``)
are named by :func:`label_mismatch`, so that a shift of 1.0 is never silent.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from fairltr.errors import DataError

__all__ = ["TrainingProfile", "population_shift", "shift_summary", "SHIFT_COLUMNS", "PROFILE_FILE", "label_mismatch",
           "MC_DRAWS"]

PROFILE_FILE = "training_profile.json"
SHIFT_COLUMNS = ("window", "window_start", "kind", "attribute", "name", "window_value", "training_value",
                 "difference", "p_value")
MC_DRAWS = 4000
"""Multinomial draws of the exact (Monte-Carlo) goodness-of-fit p-value, p >= 1 / (MC_DRAWS + 1)."""


@dataclass
class TrainingProfile:
    """What the training table looked like: rows, each group attribute's category shares, and
    each numeric feature's mean and standard deviation."""

    n_rows: int
    categories: dict[str, dict[str, float]] = field(default_factory=dict)
    features: dict[str, dict[str, float]] = field(default_factory=dict)

    @classmethod
    def of(cls, df: pd.DataFrame, groups: Sequence[str], features: Sequence[str]) -> "TrainingProfile":
        cats = {g: {str(k): float(v) for k, v in _shares(df[g]).items()} for g in groups if g in df.columns}
        feats = {}
        for f in features:
            if f in df.columns and pd.api.types.is_numeric_dtype(df[f]):
                x = df[f].to_numpy(dtype=np.float64)
                feats[f] = {"mean": float(np.nanmean(x)), "std": float(np.nanstd(x))}
        return cls(n_rows=len(df), categories=cats, features=feats)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, source: str = "training profile") -> "TrainingProfile":
        try:
            raw = json.loads(text)
            return cls(n_rows=int(raw["n_rows"]), categories={str(a): {str(c): float(s) for c, s in m.items()}
                                                             for a, m in raw.get("categories", {}).items()},
                       features={str(f): {"mean": float(v["mean"]), "std": float(v["std"])}
                                 for f, v in raw.get("features", {}).items()})
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DataError(f"{source} is not a fairltr training profile ({type(exc).__name__}: {exc})") from None

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.to_json())
        return path


def _labels(values: pd.Series) -> pd.Series:
    """Category labels as the audit writes them: text as is, whole numbers without a decimal point."""
    return values.astype(str) if not pd.api.types.is_numeric_dtype(values) else \
        values.map(lambda v: str(int(v)) if float(v).is_integer() else str(v))


def _shares(values: pd.Series) -> pd.Series:
    return _labels(values).value_counts(normalize=True, sort=False)


def _fit_pvalue(counts: np.ndarray, shares: np.ndarray, seed: int) -> float:
    """Goodness of fit of ``counts`` to ``shares``: Pearson's chi-square p-value, exact by
    Monte-Carlo when an expected count is below 5; 0 when a count falls where the share is 0."""
    from scipy import stats

    n = int(counts.sum())
    if n == 0:
        return 1.0
    if bool(((shares <= 0) & (counts > 0)).any()):
        return 0.0
    keep = shares > 0
    counts, shares = counts[keep], shares[keep] / shares[keep].sum()
    expected = n * shares
    observed = float(((counts - expected) ** 2 / expected).sum())
    if len(counts) < 2:
        return 1.0
    if bool((expected >= 5).all()):
        return float(stats.chi2.sf(observed, len(counts) - 1))
    draws = np.random.default_rng(seed).multinomial(n, shares, size=MC_DRAWS)
    simulated = ((draws - expected) ** 2 / expected).sum(axis=1)
    return float((1 + np.count_nonzero(simulated >= observed - 1e-9)) / (MC_DRAWS + 1))


def population_shift(window: pd.DataFrame, profile: TrainingProfile, *, index: int, start: pd.Timestamp) -> pd.DataFrame:
    """Rows of :data:`SHIFT_COLUMNS`: one per (attribute, category) of the window or the training
    data (``kind="category"``, shares), one ``kind="tvd"`` row per attribute (its goodness-of-fit
    ``p_value``) and one per profiled feature (``kind="feature"``, means; ``difference`` = SMD,
    ``p_value`` of the mean's z test)."""
    from scipy import stats

    rows = []
    for attribute, train_shares in profile.categories.items():
        if attribute not in window.columns:
            continue
        labels = _labels(window[attribute])
        counts_w = labels.value_counts(sort=False)
        w = (counts_w / max(len(labels), 1)).to_dict()
        names = sorted(set(train_shares) | set(w))
        tvd = 0.0
        for name in names:
            a, b = float(w.get(name, 0.0)), float(train_shares.get(name, 0.0))
            tvd += abs(a - b) / 2
            rows.append((index, start, "category", attribute, name, a, b, a - b, math.nan))
        counts = np.array([float(counts_w.get(name, 0)) for name in names])
        shares = np.array([float(train_shares.get(name, 0.0)) for name in names])
        rows.append((index, start, "tvd", attribute, "", tvd, 0.0, tvd, _fit_pvalue(counts, shares, seed=index)))
    for feature, st in profile.features.items():
        if feature not in window.columns or not pd.api.types.is_numeric_dtype(window[feature]):
            continue
        x = window[feature].to_numpy(dtype=np.float64)
        x = x[np.isfinite(x)]
        if not len(x):
            continue
        mean = float(x.mean())
        smd = (mean - st["mean"]) / st["std"] if st["std"] > 0 else (0.0 if mean == st["mean"] else math.inf)
        p = float(2 * stats.norm.sf(abs(smd) * math.sqrt(len(x)))) if math.isfinite(smd) else 0.0
        rows.append((index, start, "feature", "", feature, mean, st["mean"], smd, p))
    return pd.DataFrame(rows, columns=list(SHIFT_COLUMNS))


def label_mismatch(shift: pd.DataFrame) -> dict[str, list[str]]:
    """Per attribute, the category labels the windows hold and the training profile lacks (a
    training share of 0 where the window has some): e.g. ``{"race": ["Black"]}`` when training said
    ``African-American``. Empty when the labels match."""
    if not len(shift):
        return {}
    cats = shift[(shift["kind"] == "category") & (shift["training_value"] <= 0) & (shift["window_value"] > 0)]
    return {str(a): sorted(set(part["name"].astype(str))) for a, part in cats.groupby("attribute", sort=True)}


def shift_summary(shift: pd.DataFrame, confidence: float | None = None) -> dict:
    """Per window of ``shift``: the largest TVD (and its attribute), the largest |SMD| (and its
    feature), the smallest Holm-adjusted p-value of its tests and whether the window shifted (some
    test rejected by Holm over every test of the run at 1 - confidence, default 0.95). Keyed by
    window index."""
    from fairltr.monitoring.selection_tests import holm
    from fairltr.monitoring.window_verdicts import holm_adjusted

    level = 0.95 if confidence is None else float(confidence)
    tested = shift[shift["kind"].isin(["tvd", "feature"])].copy()
    p = tested["p_value"].to_numpy(dtype=np.float64)
    tested["rejected"] = holm(p, 1.0 - level)
    tested["p_adjusted"] = holm_adjusted(p)
    out: dict[int, dict] = {}
    for index, part in tested.groupby("window", sort=True):
        tvd = part[part["kind"] == "tvd"]
        feat = part[part["kind"] == "feature"]
        worst_tvd = tvd.loc[tvd["difference"].idxmax()] if len(tvd) else None
        worst_smd = feat.loc[feat["difference"].abs().idxmax()] if len(feat) else None
        max_tvd = float(worst_tvd["difference"]) if worst_tvd is not None else 0.0
        max_smd = float(abs(worst_smd["difference"])) if worst_smd is not None else 0.0
        out[int(index)] = {
            "max_tvd": max_tvd, "tvd_attribute": worst_tvd["attribute"] if worst_tvd is not None else None,
            "max_abs_smd": max_smd, "smd_feature": worst_smd["name"] if worst_smd is not None else None,
            "min_p_adjusted": float(part["p_adjusted"].min()) if len(part) else 1.0,
            "shifted": bool(part["rejected"].any()), "level": level,
        }
    return out
