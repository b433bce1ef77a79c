"""A synthetic table of served rankings over time, for the monitor's tests and docs.

Every window holds ``queries_per_window`` rankings of ``candidates`` people, with a race
attribute in three categories and a sex attribute; the served ranking sorts by a score that is
independent of race and sex, except in ``biased_window``, where candidates of ``biased_category``
lose ``bias`` standard deviations of score (the model starts to push that group down). With
``shifted_window``, that window's pool holds twice the usual share of the biased category
without any change in the scoring (a population shift, not a model change).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["make_served_traffic"]

RACES = ("Black", "Hispanic", "White")
RACE_SHARES = (0.3, 0.2, 0.5)


def make_served_traffic(n_windows: int = 6, queries_per_window: int = 40, candidates: int = 20, *,
                        start: str = "2026-01-07", window_days: int = 7, biased_window: int | None = 3,
                        biased_category: str = "Black", bias: float = 1.5, shifted_window: int | None = None,
                        seed: int = 0) -> pd.DataFrame:
    """Columns: ``query_id``, ``served_at`` (ISO date), ``race``, ``sex``, ``x1``..``x3``,
    ``score``, ``rank`` (1 = top, per query) and ``hired`` (0/1 outcome)."""
    rng = np.random.default_rng(seed)
    frames = []
    origin = pd.Timestamp(start)
    for w in range(n_windows):
        n = queries_per_window * candidates
        shares = np.array(RACE_SHARES)
        if shifted_window is not None and w == shifted_window:
            i = RACES.index(biased_category)
            shares = shares.copy()
            shares[i] = min(0.9, 2 * shares[i])
            shares = shares / shares.sum()
        race = rng.choice(RACES, size=n, p=shares)
        sex = rng.choice(("Female", "Male"), size=n)
        x = rng.normal(size=(n, 3))
        score = x @ np.array([1.0, 0.5, 0.25]) + rng.normal(scale=0.3, size=n)
        if biased_window is not None and w == biased_window:
            score = score - bias * (race == biased_category)
        q = np.repeat(np.arange(queries_per_window) + w * queries_per_window, candidates)
        day = rng.integers(0, window_days, size=queries_per_window)
        served = origin + pd.to_timedelta(w * window_days + np.repeat(day, candidates), unit="D")
        frame = pd.DataFrame({"query_id": q, "served_at": served.strftime("%Y-%m-%d"), "race": race, "sex": sex,
                              "x1": x[:, 0], "x2": x[:, 1], "x3": x[:, 2], "score": score})
        frame["rank"] = frame.groupby("query_id")["score"].rank(ascending=False, method="first").astype(int)
        frame["hired"] = (rng.random(n) < 1 / (1 + np.exp(-x[:, 0]))).astype(int)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)
