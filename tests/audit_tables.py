"""A ranking table for the LL144 audit tests: two attributes with unknown values (empty sex cells,
"Decline to state" races), a 1% category, tied scores; shared by tests/fairltr/metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairltr.columns import RankingColumns

C = RankingColumns(query="qid", group=("sex", "race"), judgment="rel")


def table(seed: int = 0, n_queries: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_queries * 25
    race = rng.choice(["White", "Black", "Hispanic", "Asian", "Pacific"], n, p=[0.4, 0.3, 0.19, 0.1, 0.01])
    race = np.where(rng.random(n) < 0.05, "Decline to state", race)
    sex = rng.choice(["Female", "Male"], n).astype(object)
    sex[rng.random(n) < 0.04] = None  # empty cells
    score = np.round(rng.normal(size=n) + 0.4 * (race == "White"), 1)  # ties, at the median too
    return pd.DataFrame({"qid": np.repeat(np.arange(n_queries), 25), "sex": sex, "race": race,
                         "rel": rng.integers(0, 3, n).astype(float), "score": score})




def independent(df: pd.DataFrame, *, median: str = "whole", k: int | None = None) -> dict:
    """The LL144 figures by pandas alone, per attribute (``sex``, ``race``) and their intersection
    (``sex:race``, labels ``Female|White``): ``rate`` (selection rate at ``k``, ties sharing the
    places they straddle; or, with ``k=None``, the scoring rate: score above the median of the whole
    sample (``median="whole"`` or ``"sample"``) or of each query (``"per-query"``), equal is not
    above), ``n`` (members), ``ratio`` (rate over the largest rate of all known categories) and
    ``unknown`` (rows whose category is missing, an empty string or "Decline to state"; left out of
    everything but the median)."""
    if median not in ("whole", "sample", "per-query"):
        raise ValueError(f"median must be 'whole', 'sample' or 'per-query', got {median!r}")
    d = df.copy()
    d["sex_k"] = d["sex"].where(d["sex"].notna() & (d["sex"] != ""), None)
    d["race_k"] = d["race"].where(d["race"].notna() & (d["race"] != "") & (d["race"] != "Decline to state"), None)
    if k is None:
        med = d["score"].median() if median != "per-query" else d.groupby("qid")["score"].transform("median")
        d["hit"] = (d["score"] > med).astype(float)
    else:
        first = d.groupby("qid")["score"].rank(method="min", ascending=False)
        size = d.groupby(["qid", "score"])["score"].transform("size")
        d["hit"] = np.clip(k - first + 1, 0, size) / size
    out = {}
    for name, cols in (("sex", ["sex_k"]), ("race", ["race_k"]), ("sex:race", ["sex_k", "race_k"])):
        known = d[cols].notna().all(axis=1)
        label = d.loc[known, cols].astype(str).agg("|".join, axis=1)
        rate = d.loc[known].groupby(label)["hit"].mean()
        n = d.loc[known].groupby(label).size()
        out[name] = {"rate": rate, "n": n, "unknown": int((~known).sum()), "ratio": rate / rate.max()}
    return out
