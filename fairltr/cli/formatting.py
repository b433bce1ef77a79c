"""Plain-text tables for the terminal, and the warning printed beside a table of test metrics.

A metric with a bootstrap interval (``<metric>_ci_low`` / ``<metric>_ci_high`` beside it in the
row) is shown as ``value [low, high]``. Tables fit in :data:`TABLE_WIDTH` characters: the columns
that do not fit are left out and named on a last line (``wide=True`` prints them all).
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

__all__ = ["metrics_table", "cell", "warn_constant_model", "TABLE_WIDTH", "CI_LOW", "CI_HIGH"]

TABLE_WIDTH = 120
CI_LOW, CI_HIGH = "_ci_low", "_ci_high"


def _fmt(value) -> str:
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.4f}"
    return str(value)


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def cell(row: Mapping[str, float], key: str) -> str:
    """``0.8512 [0.7410, 0.9320]`` when the row holds the interval of ``key``, else ``0.8512``
    (``n/a`` when missing or NaN)."""
    value = row.get(key, float("nan"))
    low, high = row.get(key + CI_LOW), row.get(key + CI_HIGH)
    text = _fmt(value)
    if _finite(value) and _finite(low) and _finite(high):
        text += f" [{float(low):.4f}, {float(high):.4f}]"
    return text


def metrics_table(rows: Mapping[str, Mapping[str, float]], columns: Sequence[str], *, wide: bool = False,
                  width: int = TABLE_WIDTH) -> str:
    """One line per named result, one column per metric (missing -> n/a), intervals as
    ``value [low, high]``. Without ``wide`` the columns stop where the next would pass ``width``
    characters, and a last line names those left out."""
    cols = [c for c in dict.fromkeys(columns) if any(c in r for r in rows.values())]
    names = list(rows)
    w0 = max([len("model")] + [len(n) for n in names])
    cells = {n: [cell(rows[n], c) for c in cols] for n in names}
    widths = [max([len(c), 7] + [len(cells[n][i]) for n in names]) for i, c in enumerate(cols)]
    shown = len(cols)
    if not wide:
        used = w0
        for i, w in enumerate(widths):
            if used + 2 + w > width and i > 0:
                shown = i
                break
            used += 2 + w
    head = "model".ljust(w0) + "  " + "  ".join(c.rjust(w) for c, w in zip(cols[:shown], widths[:shown]))
    lines = [head, "-" * len(head)]
    for n in names:
        lines.append(n.ljust(w0) + "  " + "  ".join(x.rjust(w) for x, w in zip(cells[n][:shown], widths[:shown])))
    if shown < len(cols):
        left = cols[shown:]
        import textwrap

        lines += textwrap.wrap(f"(+{len(left)} more: {', '.join(left)}; --wide prints them)", width)
    return "\n".join(lines)


def warn_constant_model(metrics: Mapping[str, float] | None) -> None:
    """Print :func:`fairltr.workflows.audit.constant_model_warning`'s line on stderr when the model's scores
    are all tied within every query (the one call of ``evaluate``, ``evaluate-model`` and every
    ``train`` command that prints test metrics); nothing otherwise."""
    import click

    from fairltr.workflows.audit import constant_model_warning

    if metrics and (warning := constant_model_warning(metrics)) is not None:
        click.echo(warning, err=True)
