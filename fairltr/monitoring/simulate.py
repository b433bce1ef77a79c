"""Simulated years of weekly served traffic, audited as ``fairltr monitor`` audits them: the
false-alarm rate and the power of the per-window verdicts (docs/monitoring.md,
``benchmarks/monitor_power.py``, tests/fairltr/monitoring/test_false_alarms.py).

A window holds ``queries`` rankings of ``candidates`` each; a candidate's category is drawn from
``shares``; the ranker scores every candidate with independent noise, plus ``-bias`` for the
``biased`` category in the biased week (a fair ranker: bias 0); its top ``k`` per ranking are
selected. Each window's audit table (candidates and selections per category, their impact ratio)
is what the audit computes from such a ranking, and the verdicts come from
:func:`fairltr.monitoring.window_verdicts.judge_windows`, the code ``fairltr monitor`` runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from fairltr.monitoring.audit_windows import WindowAudit
from fairltr.monitoring.window_verdicts import judge_windows

__all__ = ["TrafficModel", "simulate_year", "year_verdicts"]


@dataclass(frozen=True)
class TrafficModel:
    """Weekly traffic: rankings per window, candidates per ranking, selection cut-off, category shares."""

    queries: int = 20
    candidates: int = 20
    k: int = 10
    shares: tuple[tuple[str, float], ...] = (("A", 0.5), ("B", 0.3), ("C", 0.2))
    weeks: int = 52


def _window_table(cats: np.ndarray, selected: np.ndarray, names: Sequence[str]) -> pd.DataFrame:
    n = np.bincount(cats.ravel(), minlength=len(names)).astype(float)
    x = np.bincount(cats.ravel(), weights=selected.ravel().astype(float), minlength=len(names))
    rate = np.divide(x, n, out=np.zeros_like(x), where=n > 0)
    top = rate.max() if rate.max() > 0 else 1.0
    present = n > 0
    return pd.DataFrame({"attribute": "group", "category": np.asarray(names)[present], "n_candidates": n[present],
                         "selected_at_k": x[present], "impact_ratio_at_k": (rate / top)[present],
                         "excluded": False})


def simulate_year(model: TrafficModel, rng: np.random.Generator, *, biased_week: int | None = None,
                  biased: str = "C", bias: float = 0.0) -> list[WindowAudit]:
    """One year of windows (vectorised over the year's rankings), each as a :class:`WindowAudit`."""
    names = [c for c, _ in model.shares]
    p = np.array([s for _, s in model.shares], dtype=float)
    shape = (model.weeks, model.queries, model.candidates)
    cats = rng.choice(len(names), size=shape, p=p / p.sum())
    scores = rng.standard_normal(shape)
    if biased_week is not None:
        week = scores[biased_week]
        week[cats[biased_week] == names.index(biased)] -= bias
    order = np.argsort(-scores, axis=-1)
    selected = np.zeros(shape, dtype=bool)
    np.put_along_axis(selected, order[..., : model.k], True, axis=-1)
    start = pd.Timestamp("2026-01-05")
    return [WindowAudit(index=i, start=start + pd.Timedelta(weeks=i), end=start + pd.Timedelta(weeks=i + 1),
                        n_rows=model.queries * model.candidates, n_queries=model.queries,
                        table=_window_table(cats[i], selected[i], names), metrics={}, k=model.k)
            for i in range(model.weeks)]


def year_verdicts(windows: list[WindowAudit], gates: Sequence, confidence: float | None,
                  reference: dict | None = None) -> list[str]:
    """Each window's verdict (``pass`` / ``fail`` / ``insufficient evidence``)."""
    ref = reference if reference is not None else {"group": sorted({c for w in windows for c in w.table["category"]})}
    verdicts, _ = judge_windows(windows, gates, confidence, ref)
    return [v.verdict for v in verdicts]
