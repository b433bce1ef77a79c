"""Population shift of a window against the training data: the category mix of every group
attribute and the feature means.

* category mix: share of each category among the window's candidates vs the training table's;
  total variation distance TVD = 1/2 sum_c |share_w(c) - share_t(c)| per attribute;
* features: standardised mean difference SMD = (mean_w - mean_t) / std_t per feature.

A window "shifted" when some attribute's TVD exceeds ``tvd_threshold`` (0.1) or some feature's
|SMD| exceeds ``smd_threshold`` (0.25, a common rule of thumb for covariate balance). A failing
window that shifted reads "the pool changed"; one that did not, "the model treats the pool
differently".
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

__all__ = ["TrainingProfile", "population_shift", "shift_summary", "SHIFT_COLUMNS", "PROFILE_FILE"]

PROFILE_FILE = "training_profile.json"
SHIFT_COLUMNS = ("window", "window_start", "kind", "attribute", "name", "window_value", "training_value",
                 "difference")


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


def _shares(values: pd.Series) -> pd.Series:
    labels = values.astype(str) if not pd.api.types.is_numeric_dtype(values) else \
        values.map(lambda v: str(int(v)) if float(v).is_integer() else str(v))
    return labels.value_counts(normalize=True, sort=False)


def population_shift(window: pd.DataFrame, profile: TrainingProfile, *, index: int, start: pd.Timestamp) -> pd.DataFrame:
    """Rows of :data:`SHIFT_COLUMNS`: one per (attribute, category) of the window or the training
    data (``kind="category"``, shares) and one per profiled feature (``kind="feature"``, means;
    ``difference`` = SMD), plus one ``kind="tvd"`` row per attribute."""
    rows = []
    for attribute, train_shares in profile.categories.items():
        if attribute not in window.columns:
            continue
        w = _shares(window[attribute]).to_dict()
        names = sorted(set(train_shares) | set(w))
        tvd = 0.0
        for name in names:
            a, b = float(w.get(name, 0.0)), float(train_shares.get(name, 0.0))
            tvd += abs(a - b) / 2
            rows.append((index, start, "category", attribute, name, a, b, a - b))
        rows.append((index, start, "tvd", attribute, "", tvd, 0.0, tvd))
    for feature, stats in profile.features.items():
        if feature not in window.columns or not pd.api.types.is_numeric_dtype(window[feature]):
            continue
        mean = float(np.nanmean(window[feature].to_numpy(dtype=np.float64)))
        smd = (mean - stats["mean"]) / stats["std"] if stats["std"] > 0 else (0.0 if mean == stats["mean"] else math.inf)
        rows.append((index, start, "feature", "", feature, mean, stats["mean"], smd))
    return pd.DataFrame(rows, columns=list(SHIFT_COLUMNS))


def shift_summary(shift: pd.DataFrame, tvd_threshold: float = 0.1, smd_threshold: float = 0.25) -> dict:
    """Per window of ``shift``: the largest TVD (and its attribute), the largest |SMD| (and its
    feature), and whether the window shifted. Keyed by window index."""
    out: dict[int, dict] = {}
    for index, part in shift.groupby("window", sort=True):
        tvd = part[part["kind"] == "tvd"]
        feat = part[part["kind"] == "feature"]
        worst_tvd = tvd.loc[tvd["difference"].idxmax()] if len(tvd) else None
        worst_smd = feat.loc[feat["difference"].abs().idxmax()] if len(feat) else None
        max_tvd = float(worst_tvd["difference"]) if worst_tvd is not None else 0.0
        max_smd = float(abs(worst_smd["difference"])) if worst_smd is not None else 0.0
        out[int(index)] = {
            "max_tvd": max_tvd, "tvd_attribute": worst_tvd["attribute"] if worst_tvd is not None else None,
            "max_abs_smd": max_smd, "smd_feature": worst_smd["name"] if worst_smd is not None else None,
            "shifted": bool(max_tvd > tvd_threshold or max_smd > smd_threshold),
        }
    return out
