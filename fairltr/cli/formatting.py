"""Plain-text tables for the terminal."""

from __future__ import annotations

import math
from typing import Mapping, Sequence

__all__ = ["metrics_table"]


def _fmt(value) -> str:
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.4f}"
    return str(value)


def metrics_table(rows: Mapping[str, Mapping[str, float]], columns: Sequence[str]) -> str:
    """One line per named result, one column per metric (missing -> n/a)."""
    cols = [c for c in columns if any(c in r for r in rows.values())]
    names = list(rows)
    w0 = max([len("model")] + [len(n) for n in names])
    widths = [max(len(c), 7) for c in cols]
    head = "model".ljust(w0) + "  " + "  ".join(c.rjust(w) for c, w in zip(cols, widths))
    lines = [head, "-" * len(head)]
    for n in names:
        cells = [_fmt(rows[n].get(c, float("nan"))).rjust(w) for c, w in zip(cols, widths)]
        lines.append(n.ljust(w0) + "  " + "  ".join(cells))
    return "\n".join(lines)
