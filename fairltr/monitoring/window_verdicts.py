"""Each window's verdict, ``pass``, ``fail`` or ``insufficient evidence``, from its audit and the
run's gates (docs/monitoring.md).

* A *selection-rate gate* (a lower bound on ``impact_ratio_at_<k>`` or ``scoring_impact_ratio``:
  ``four_fifths``, ``four_fifths@5``, ``scoring_four_fifths``) is judged per category from the
  window's pooled counts. Without a confidence level, a category below the bound fails, unless the
  window is too small for it (fewer than :data:`~fairltr.monitoring.selection_tests.MIN_EXPECTED`
  expected selections for it or for the category it is compared with): then the window says
  ``insufficient evidence``. With ``confidence``, every (category, other category) pair of every
  window and gate is one test of the run's family (:mod:`fairltr.monitoring.selection_tests`):
  Holm at 1 - confidence; a category fails only when one of its pairs is rejected; below the bound
  but not significant is ``insufficient evidence``.
* Any other gate is checked as the promotion gates are (on the interval's conservative end with
  ``confidence``): per window, not family-wise (the verdict line says so).
* A category the reference holds (the training profile's, else the run's pooled categories) that a
  window lacks makes that window ``insufficient evidence`` (its impact ratio of 1.0 says nothing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.metrics.compare import holds
from fairltr.monitoring.audit_windows import category_column_of, failing_categories
from fairltr.monitoring.selection_tests import MIN_EXPECTED, holm, ratio_test_pvalues

__all__ = ["WindowVerdict", "judge_windows", "selection_threshold", "pair_tests", "holm_adjusted",
           "pooled_categories"]


@dataclass
class WindowVerdict:
    """A window's verdict, its FAIL records (each with the printed ``line``) and the lines saying
    why the evidence is insufficient."""

    verdict: str = "pass"
    failures: list[dict] = field(default_factory=list)
    insufficient: list[str] = field(default_factory=list)


def selection_threshold(gate) -> float | None:
    """tau of a selection-rate gate (one absolute lower bound on an impact ratio), else None."""
    column, _ = category_column_of(gate.metric)
    if column not in ("impact_ratio_at_k", "scoring_impact_ratio") or gate.two_sided or gate.relative:
        return None
    return float(gate.value) if gate.op in (">=", ">") else None


def _counts(table: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    n = table["n_candidates"].to_numpy(dtype=np.float64)
    if column == "impact_ratio_at_k":
        return table["selected_at_k"].to_numpy(dtype=np.float64), n
    return table["scoring_rate"].to_numpy(dtype=np.float64) * n, n


def pair_tests(table: pd.DataFrame, gate, tau: float) -> pd.DataFrame:
    """Every ordered pair (category, reference) of the audited categories of each attribute the
    gate reads: counts, the one-sided p-value of p_c >= tau p_r, and whether the pair is testable
    (both expect >= MIN_EXPECTED selections at the attribute's pooled rate)."""
    column, attribute = category_column_of(gate.metric)
    rows = table[~table["excluded"].astype(bool)]
    if attribute is not None:
        rows = rows[rows["attribute"] == attribute]
    parts = []
    for attr, part in rows.groupby("attribute", sort=False):
        x, n = _counts(part, column)
        rate = x.sum() / n.sum() if n.sum() > 0 else 0.0
        c, r = np.meshgrid(np.arange(len(part)), np.arange(len(part)), indexing="ij")
        keep = c != r
        c, r = c[keep], r[keep]
        expected = n * rate
        testable = (expected[c] >= MIN_EXPECTED) & (expected[r] >= MIN_EXPECTED)
        cats = part["category"].to_numpy()
        parts.append(pd.DataFrame({
            "attribute": attr, "category": cats[c], "reference": cats[r], "x_c": x[c], "n_c": n[c], "x_r": x[r],
            "n_r": n[r], "expected_c": expected[c], "expected_r": expected[r], "testable": testable,
            "p_value": np.where(testable, ratio_test_pvalues(x[c], n[c], x[r], n[r], tau), 1.0)}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["attribute", "category", "reference", "x_c", "n_c", "x_r", "n_r", "expected_c", "expected_r",
                 "testable", "p_value"])


def holm_adjusted(pvalues: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values: max over j <= i of min(1, (m - j + 1) p_(j)) in sorted order."""
    p = np.asarray(pvalues, dtype=np.float64)
    m = len(p)
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out


def _where(cat: Mapping) -> str:
    return f"{cat['attribute']}={cat['category']}" if cat["attribute"] else str(cat["category"])


def _interval(cat: Mapping) -> str:
    low = cat.get("ci_low", math.nan)
    return "" if low is None or math.isnan(low) else f" [{low:.3f}, {cat['ci_high']:.3f}]"


def _passes(gate, confidence: float | None):
    """Whether a category's (low, high) — or (value, value) — passes ``gate`` (the gates' own check)."""
    from fairltr.gates import check_gates

    def ok(bounds: tuple[float, float]) -> bool:
        low, high = bounds
        values = {gate.metric: (low + high) / 2, f"{gate.metric}_ci_low": low, f"{gate.metric}_ci_high": high}
        return check_gates([gate], values, None, confidence=confidence)[0].passed

    return ok


def _other_gate(w, gate, confidence: float | None) -> list[dict]:
    """FAIL records of a gate that is not a selection-rate gate (as the promotion gates check it)."""
    from fairltr.gates import check_gates

    res = check_gates([gate], w.metrics, None, confidence=confidence)[0]
    if res.passed:
        return []
    cats = failing_categories(w.table_at(gate.metric), gate.metric, _passes(gate, confidence), confidence is not None)
    if not cats:
        cats = [{"attribute": "", "category": "(worst case)", "value": res.value if res.value is not None else math.nan,
                 "ci_low": w.metrics.get(f"{gate.metric}_ci_low", math.nan),
                 "ci_high": w.metrics.get(f"{gate.metric}_ci_high", math.nan)}]
    return [{"window": w.index, "window_start": w.label, "gate": gate.text, **cat,
             "line": f"{w.label} FAIL {gate.text} {_where(cat)} {cat['value']:.3f}{_interval(cat)}"} for cat in cats]


def _category_rows(w, gate) -> pd.DataFrame:
    column, attribute = category_column_of(gate.metric)
    t = w.table_at(gate.metric)
    rows = t[~t["excluded"].astype(bool)]
    return rows if attribute is None else rows[rows["attribute"] == attribute]


def _selection_records(w, gate, tau: float, tests: pd.DataFrame, confidence: float | None, n_tests: int):
    """(FAIL records, insufficient-evidence lines) of one selection-rate gate in one window."""
    column, _ = category_column_of(gate.metric)
    fails, notes = [], []
    level = f"{confidence:g}" if confidence is not None else ""
    empty = tests.iloc[:0]
    by_category = {key: part for key, part in tests.groupby(["attribute", "category"], sort=False)} if len(tests) else {}
    for rec in _category_rows(w, gate).to_dict("records"):
        value = float(rec[column])
        cat = {"attribute": rec["attribute"], "category": rec["category"], "value": value,
               "ci_low": float(rec.get(f"{column}_ci_low", math.nan)), "ci_high": float(rec.get(f"{column}_ci_high", math.nan))}
        mine = by_category.get((rec["attribute"], rec["category"]), empty)
        below = not holds(">=" if gate.op == ">=" else ">", value, tau)
        untestable = mine[~mine["testable"]]
        if confidence is not None:
            rejected = mine[mine["rejected"]]
            if len(rejected):
                worst = rejected.loc[rejected["p_adjusted"].idxmin()]
                fails.append({"window": w.index, "window_start": w.label, "gate": gate.text, **cat,
                              "reference": worst["reference"], "p_adjusted": float(worst["p_adjusted"]),
                              "line": f"{w.label} FAIL {gate.text} {_where(cat)} {value:.3f}{_interval(cat)} "
                                      f"(below {tau:g} x {worst['reference']}'s rate: Holm p = "
                                      f"{float(worst['p_adjusted']):.2g} over the run's {n_tests} tests)"})
                continue
            if below:
                why = (f"expects {float(untestable['expected_c'].min()):.1f} selections (or its comparison does), "
                       f"{MIN_EXPECTED:g} needed" if len(untestable) else
                       f"not significant at {level} over the run's {n_tests} tests")
                notes.append(f"{w.label} INSUFFICIENT EVIDENCE {gate.text} {_where(cat)} {value:.3f}: below {tau:g}, {why}")
        elif below:
            if len(untestable):
                notes.append(f"{w.label} INSUFFICIENT EVIDENCE {gate.text} {_where(cat)} {value:.3f}: below {tau:g}, "
                             f"but the window expects {float(untestable['expected_c'].min()):.1f} selections of it (or of "
                             f"its comparison), {MIN_EXPECTED:g} needed")
            else:
                fails.append({"window": w.index, "window_start": w.label, "gate": gate.text, **cat,
                              "line": f"{w.label} FAIL {gate.text} {_where(cat)} {value:.3f}{_interval(cat)}"})
        if len(untestable) and not below and confidence is not None:
            notes.append(f"{w.label} INSUFFICIENT EVIDENCE {gate.text} {_where(cat)} {value:.3f}: too few candidates "
                         f"to test ({float(untestable['expected_c'].min()):.1f} expected selections, "
                         f"{MIN_EXPECTED:g} needed)")
    return fails, notes


def _vanished(w, reference: Mapping[str, Sequence[str]]) -> list[str]:
    """Lines naming each reference category of an attribute absent from the window's audit table."""
    present = {(a, str(c)) for a, c in zip(w.table["attribute"], w.table["category"])}
    lines = []
    for attribute, cats in reference.items():
        gone = [c for c in cats if (attribute, str(c)) not in present]
        if gone:
            lines.append(f"{w.label} INSUFFICIENT EVIDENCE {attribute}: {', '.join(map(str, gone))} absent from this "
                         "window (present in the reference): its impact ratios say nothing about them")
    return lines


def pooled_categories(windows: Sequence, attributes: Sequence[str]) -> dict[str, list]:
    """The categories of each attribute (not their intersection: a cell may be empty by chance)
    seen in any window, in order of appearance."""
    reference: dict[str, list] = {a: [] for a in attributes}
    for w in windows:
        for a, c in zip(w.table["attribute"], w.table["category"]):
            if a in reference and str(c) not in map(str, reference[a]):
                reference[a].append(c)
    return reference


def judge_windows(windows: Sequence, gates: Sequence, confidence: float | None,
                  reference: Mapping[str, Sequence[str]]) -> tuple[list[WindowVerdict], pd.DataFrame]:
    """Every window's :class:`WindowVerdict` and the table of the run's pair tests (with Holm's
    adjusted p-values and rejections when ``confidence`` is given). ``reference``: the categories
    of each attribute every window should hold (the training profile's, or
    :func:`pooled_categories`)."""
    parts = []
    for w in windows:
        for gi, gate in enumerate(gates):
            tau = selection_threshold(gate)
            if tau is not None:
                t = pair_tests(w.table_at(gate.metric), gate, tau)
                parts.append(t.assign(window=w.index, gate_index=gi))
    tests = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["window", "gate_index", "testable",
                                                                                    "p_value"])
    family = tests["testable"].to_numpy(dtype=bool) if len(tests) else np.zeros(0, dtype=bool)
    n_tests = int(family.sum())
    tests["p_adjusted"] = 1.0
    tests["rejected"] = False
    if confidence is not None and n_tests:
        p = tests["p_value"].to_numpy(dtype=np.float64)[family]
        tests.loc[family, "p_adjusted"] = holm_adjusted(p)
        tests.loc[family, "rejected"] = holm(p, 1.0 - confidence)
    verdicts = []
    empty = tests.iloc[:0]
    by_window = {key: part for key, part in tests.groupby(["window", "gate_index"], sort=False)} if len(tests) else {}
    for w in windows:
        v = WindowVerdict()
        for gi, gate in enumerate(gates):
            tau = selection_threshold(gate)
            if tau is None:
                v.failures += _other_gate(w, gate, confidence)
                continue
            mine = by_window.get((w.index, gi), empty)
            fails, notes = _selection_records(w, gate, tau, mine, confidence, n_tests)
            v.failures += fails
            v.insufficient += notes
        v.insufficient += _vanished(w, reference)
        v.verdict = "fail" if v.failures else ("insufficient evidence" if v.insufficient else "pass")
        verdicts.append(v)
    return verdicts, tests
