"""What an audit table says to an auditor (docs/spec.md section 3b): a verdict per category,
the worst category, and the words naming the two sides of the section-3 binary figures.

Pure pandas / numpy. The threshold comparison uses one stated tolerance, :data:`GATE_TOLERANCE`,
so that a category selected at exactly four fifths of the top rate passes ``>= 0.8`` although
(4/9) / (5/9) is 0.7999999999999999 in floating point.

Verdict of a row (:func:`category_verdicts`), at ``threshold`` b:

* ``"excluded"``: the row is a small category (``excluded`` true), whatever its value;
* ``"pass"``: the value read is a number and ``value >= b`` (within the tolerance);
* ``"fail"``: the value read is a number below b;
* ``"undefined"``: the value read is NaN (no category of the attribute was selected at all, or
  the bootstrap gave no interval end). Not a pass: a gate on it fails closed.

The value read is the point value, or with ``confidence=True`` the interval's conservative
end ``<column>_ci_low`` (SPEC 3b: ``m >= b`` holds at a confidence when ``m_ci_low >= b``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from fairltr.data import category_codes, is_string_categories
from fairltr.errors import ConfigError, DataError
from fairltr.metrics.compare import GATE_TOLERANCE, holds

__all__ = ["GATE_TOLERANCE", "VERDICTS", "at_least", "at_most", "category_verdicts", "worst_category",
           "BinaryView", "binary_view"]

VERDICTS = ("pass", "fail", "excluded", "undefined")
"""The verdicts a row can get, see the module docstring."""


def at_least(value: float, bound: float, tol: float = GATE_TOLERANCE) -> bool:
    """``value >= bound`` up to the gates' tolerance (:func:`fairltr.metrics.compare.holds`); False with a NaN."""
    return holds(">=", value, bound, tol)


def at_most(value: float, bound: float, tol: float = GATE_TOLERANCE) -> bool:
    """``value <= bound`` up to the gates' tolerance; False with a NaN."""
    return holds("<=", value, bound, tol)


def _column(table: pd.DataFrame, name: str) -> np.ndarray:
    if name not in table.columns:
        raise DataError(f"audit table has no column {name!r}; columns: {list(table.columns)}")
    return pd.to_numeric(table[name], errors="coerce").to_numpy(dtype=np.float64)


def _excluded(table: pd.DataFrame) -> np.ndarray:
    if "excluded" not in table.columns:
        return np.zeros(len(table), dtype=bool)
    return table["excluded"].fillna(False).astype(bool).to_numpy()


def category_verdicts(table: pd.DataFrame, *, threshold: float = 0.8, confidence: bool = False,
                      column: str = "impact_ratio_at_k", tol: float = GATE_TOLERANCE) -> pd.Series:
    """``"pass"`` / ``"fail"`` / ``"excluded"`` / ``"undefined"`` per row of an audit table
    (index kept), reading ``column`` (or, with ``confidence``, ``<column>_ci_low``) against
    ``threshold`` as the module docstring states. ``confidence`` without the interval column
    is a :class:`ConfigError` (the audit was made without intervals)."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise ConfigError(f"verdict threshold must be a finite number, got {threshold!r}")
    read = f"{column}_ci_low" if confidence else column
    if confidence and read not in table.columns:
        raise ConfigError(f"verdicts at a confidence need the interval column {read!r}; the audit has no "
                          "intervals (give a confidence level, e.g. --ci 0.95)")
    values = _column(table, read)
    bound = float(threshold)
    finite = np.isfinite(values)
    with np.errstate(invalid="ignore"):
        ok = values >= bound - tol * np.maximum(np.abs(values), abs(bound))
    out = np.where(_excluded(table), "excluded", np.where(~finite, "undefined", np.where(ok, "pass", "fail")))
    return pd.Series(out, index=table.index, name="verdict", dtype=object)


def _number_or_none(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def worst_category(table: pd.DataFrame, *, attribute: str | None = None,
                   column: str = "impact_ratio_at_k") -> dict[str, Any] | None:
    """The non-excluded row with the lowest finite ``column`` (ties: the first in table order),
    over every attribute (and the intersection) or only ``attribute``, as ``{"attribute",
    "category", "value", "ci_low", "ci_high"}`` (interval ends None without intervals); None
    when no row qualifies."""
    values = _column(table, column)
    keep = np.isfinite(values) & ~_excluded(table)
    if attribute is not None:
        keep &= (table["attribute"].astype(str) == str(attribute)).to_numpy()
    if not keep.any():
        return None
    candidates = np.flatnonzero(keep)
    i = int(candidates[np.argmin(values[candidates])])  # argmin: the first of equal minima
    row = table.iloc[i]
    return {"attribute": str(row["attribute"]), "category": str(row["category"]), "value": float(values[i]),
            "ci_low": _number_or_none(row.get(f"{column}_ci_low")),
            "ci_high": _number_or_none(row.get(f"{column}_ci_high"))}


@dataclass(frozen=True)
class BinaryView:
    """The two sides of section 3's binary figures (``exposure_ratio``, ``selection_ratio_at_k``,
    DELTR Figure 2) for the group attribute ``attribute``: ``reference`` (code 0) against every
    category of ``compared`` (codes >= 1). ``coding``: ``"integer"`` (integer categories as
    written: 0 = non-protected, >= 1 protected), ``"most frequent"`` (text categories, the
    reference chosen as the most frequent one) or ``"declared"`` (a reference given by the user)."""

    attribute: str
    reference: str
    compared: tuple[str, ...]
    coding: str = "integer"

    def _names(self, limit: int) -> str:
        shown = list(self.compared[:limit])
        more = len(self.compared) - len(shown)
        return ", ".join(shown) + (f" and {more} more" if more else "")

    @property
    def protected_words(self) -> bool:
        """True for the integer 0 / >= 1 coding, which keeps the words protected / non-protected."""
        return self.coding == "integer" and self.reference == "0"

    def reference_words(self) -> str:
        """``the reference category (race = African-American, the most frequent)``."""
        if self.protected_words:
            return f"the non-protected group ({self.attribute} = 0)"
        why = {"most frequent": ", the most frequent", "declared": ", as declared"}.get(self.coding, "")
        return f"the reference category ({self.attribute} = {self.reference}{why})"

    def compared_words(self, limit: int = 6) -> str:
        """``the compared categories (race = Asian, Caucasian, ...)``; one category: singular."""
        if self.protected_words:
            cats = f" = {self.compared[0]}" if len(self.compared) == 1 else f" >= 1: {self._names(limit)}"
            return f"the protected group ({self.attribute}{cats})"
        noun = "category" if len(self.compared) == 1 else "categories"
        return f"the compared {noun} ({self.attribute} = {self._names(limit)})"

    @property
    def compared_is_plural(self) -> bool:
        """Whether :meth:`compared_words` takes a plural verb."""
        return not self.protected_words and len(self.compared) != 1

    def reference_label(self) -> str:
        """A legend entry: ``reference: race = African-American`` (``non-protected: sex = 0``)."""
        side = "non-protected" if self.protected_words else "reference"
        return f"{side}: {self.attribute} = {self.reference}"

    def compared_label(self) -> str:
        """A legend entry: ``compared: race = Caucasian`` or ``compared: the other 5 categories``
        (``protected: sex >= 1``)."""
        if self.protected_words:
            return f"protected: {self.attribute} " + (f"= {self.compared[0]}" if len(self.compared) == 1 else ">= 1")
        if len(self.compared) == 1:
            return f"compared: {self.attribute} = {self.compared[0]}"
        return f"compared: the other {len(self.compared)} categories"


def binary_view(values: pd.Series | np.ndarray | Sequence[Any], *, attribute: str,
                reference: object = None) -> BinaryView:
    """The :class:`BinaryView` of a group column's ``values`` as :func:`fairltr.data.category_codes`
    codes it (integer categories keep 0 = non-protected unless a ``reference`` is declared; text
    categories take the most frequent one, ties to the first in sorted order, or ``reference``).
    A declared reference that does not occur is a :class:`ConfigError` (from ``category_codes``)."""
    s = values if isinstance(values, pd.Series) else pd.Series(list(values))
    if s.isna().any():
        raise DataError(f"group column {attribute!r} has a missing value at row {int(np.flatnonzero(s.isna())[0])}")
    codes, order = category_codes(s, reference)
    if is_string_categories(s) or reference is not None:
        coding = "declared" if reference is not None else "most frequent"
        ref, compared = str(order[0]), tuple(str(v) for v in order[1:])
    else:
        coding = "integer"
        found = sorted(set(int(v) for v in np.unique(codes)))
        ref = "0"
        compared = tuple(str(v) for v in found if v >= 1)
    return BinaryView(attribute=str(attribute), reference=ref, compared=compared, coding=coding)
