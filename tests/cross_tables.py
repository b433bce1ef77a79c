"""Tables and the independent four-fifths figure shared by the cross-product tests (issue 29):
queries of 12 candidates with a group column of one kind (0/1 integers, several integers, text,
two text attributes) and integer or float features, and the pandas computation of
``impact_ratio_at_k`` from a model's own scores. Importable from any test (tests/conftest.py puts
tests/ on ``sys.path``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

K = 10
TOL = 1e-9


def groups_of(kind: str) -> list[str]:
    return {"binary": ["protected"], "multi_int": ["race"], "text": ["race"], "two": ["race", "sex"]}[kind]


def cross_table(kind: str, ftype: str, n_queries: int, seed: int, first_query: int) -> pd.DataFrame:
    """Queries of 12 candidates; group columns of ``kind`` (attribute values depend on nothing);
    features that track a merit, lowered for one category (a ranking a four-fifths rule can fail)."""
    rng = np.random.default_rng(seed)
    n = n_queries * 12
    qid = np.repeat(np.arange(first_query, first_query + n_queries), 12)
    df = pd.DataFrame({"query_id": qid, "candidate_id": np.arange(n) + 100 * first_query})
    if kind == "binary":
        df["protected"] = (rng.random(n) < 0.35).astype(np.int64)
        low = df["protected"].to_numpy() == 1
    elif kind == "multi_int":
        df["race"] = rng.choice([0, 1, 2, 3], n, p=[0.4, 0.3, 0.2, 0.1]).astype(np.int64)
        low = df["race"].to_numpy() == 2
    else:
        df["race"] = rng.choice(["White", "Black", "Hispanic", "Asian American"], n, p=[0.4, 0.3, 0.2, 0.1])
        low = df["race"].to_numpy() == "Black"
        if kind == "two":
            df["sex"] = rng.choice(["Female", "Male"], n)
    merit = rng.normal(size=n)
    x1 = merit - 0.8 * low + 0.4 * rng.normal(size=n)
    x2 = merit + 0.6 * rng.normal(size=n)
    if ftype == "int":
        x1, x2 = np.round(4 * x1 + 20).astype(np.int64), np.round(4 * x2 + 20).astype(np.int64)
    df["x1"], df["x2"] = x1, x2
    df["judgment"] = np.clip(np.round(merit + 1.5), 0, 3).astype(np.int64)
    # one served week per query (monitor's time column); a few weeks per 28-day window
    df["when"] = (pd.Timestamp("2026-01-05") + pd.to_timedelta(7 * (qid - first_query), unit="D")).strftime("%Y-%m-%d")
    return df


def independent_impact_ratios(df: pd.DataFrame, scores: np.ndarray, attributes: list[str], k: int = K,
                              min_share: float = 0.02) -> dict[str, float]:
    """The four-fifths figures by pandas, from the definition (docs/spec.md 3b): each row's chance
    of the top k of its query with tied scores unordered, pooled selection rate per category,
    over the most-selected non-excluded category; the worst over every attribute and their
    intersection."""
    d = df.assign(_s=np.asarray(scores, dtype=np.float64))
    first = d.groupby("query_id")["_s"].rank(method="min", ascending=False).to_numpy()
    size = d.groupby(["query_id", "_s"])["_s"].transform("size").to_numpy()
    d["_sel"] = np.clip(k - first + 1, 0, size) / size
    out: dict[str, float] = {}
    blocks = [(a, [a]) for a in attributes] + ([(":".join(attributes), attributes)] if len(attributes) > 1 else [])
    for name, cols in blocks:
        key = d[cols].astype(str).agg("\x1f".join, axis=1)
        rate = d.groupby(key)["_sel"].mean()
        share = d.groupby(key).size() / len(d)
        kept = rate[share >= min_share]
        out[f"impact_ratio_at_{k}.{name}"] = float((kept / kept.max()).min())
    out[f"impact_ratio_at_{k}"] = min(out.values())
    return out


def same_figures(got: dict, want: dict, where: str) -> None:
    for key, value in want.items():
        assert key in got, f"{where}: {key} missing; has {sorted(k for k in got if k.startswith('impact'))}"
        assert got[key] == pytest.approx(value, rel=TOL, abs=TOL), f"{where}: {key}"


def ran_ok(res, where: str) -> None:
    assert res.exit_code == 0, f"{where}: exit {res.exit_code}\n{res.output}"
    assert "Traceback" not in res.output, f"{where}:\n{res.output}"


def one_line_refusal(res, where: str, needle: str) -> None:
    assert res.exit_code != 0 and "Traceback" not in res.output, f"{where}:\n{res.output}"
    errors = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and needle in errors[0], f"{where}:\n{res.output}"
