"""Pareto plot (matplotlib, headless): several studies' trials and fronts on one figure.

Not ``optuna.visualization.matplotlib.plot_pareto_front``: it draws one study per figure and has
no reference point, hypervolume, best trade-off or dominated-region boundary, which is what this
comparison plot is for."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from tuning.report import FrontReport

__all__ = ["plot_fronts"]


def plot_fronts(
    reports: Sequence[FrontReport],
    trials: Mapping[str, pd.DataFrame],
    path: str | Path,
    *,
    title: str | None = None,
    dpi: int = 110,
    markers: Mapping[str, tuple[float, float]] | None = None,
) -> Path:
    """Draw every study's trials (faint; ``x`` = infeasible), its front (boundary of the dominated
    region + markers), its best trade-off (star) and the shared reference point; one colour per
    study. ``markers`` adds labelled grey points in objective units (e.g. a paper's reported
    results). The legend, below the axes so that it covers no data, explains every symbol.
    Returns the PNG path."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    if not reports:
        raise ValueError("nothing to plot: no study reports")
    x, y = reports[0].objectives
    dx, dy = reports[0].directions
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    any_infeasible = False
    handles: list = []
    for i, rep in enumerate(reports):
        c = colors[i % len(colors)]
        handle, infeasible = _draw_study(ax, rep, trials.get(rep.study), c, x, y, dx)
        any_infeasible |= infeasible
        handles.append(handle)
    for label, (mx, my) in (markers or {}).items():
        ax.plot([mx], [my], "D", color="0.35", ms=4, mfc="none")
        ax.annotate(label, (mx, my), fontsize=6, color="0.3", xytext=(3, 3), textcoords="offset points")
    ref = reports[0].reference
    ax.plot([ref[x]], [ref[y]], "s", color="black", ms=6)
    handles += _symbol_keys(reports[0], x, y, any_infeasible, bool(markers))
    ax.set_xlabel(f"{x} ({'higher' if dx == 'maximize' else 'lower'} is better)")
    ax.set_ylabel(f"{y} ({'higher' if dy == 'maximize' else 'lower'} is better)")
    ax.set_title(title or "Pareto fronts", fontsize=10)
    ax.grid(alpha=0.3)
    # below the axes: inside it the legend hid the reference point and parts of the fronts
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.13), ncol=1, frameon=False,
              borderaxespad=0.0)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    from fairltr.files import atomic_path

    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=dpi, format="png", bbox_inches="tight")
    plt.close(fig)
    return out


def _draw_study(ax, rep: FrontReport, df: pd.DataFrame | None, c, x: str, y: str, dx: str):
    """One study in colour ``c``: its trials, its front and its best trade-off. Returns the
    legend handle of its front and whether any of its trials is infeasible."""
    from matplotlib.lines import Line2D

    any_infeasible = False
    if df is not None and len(df):
        feas = df["feasible"].astype(bool)
        any_infeasible = bool((~feas).any())
        ax.scatter(df.loc[feas, x], df.loc[feas, y], s=12, color=c, alpha=0.25, linewidths=0)
        ax.scatter(df.loc[~feas, x], df.loc[~feas, y], s=14, color=c, alpha=0.35, marker="x", linewidths=0.8)
    f = rep.front.sort_values(x)
    label = f"{rep.method or rep.study} front (HV {rep.hypervolume:.4g}, {rep.n_complete} trials)"
    if len(f):
        # boundary of the dominated region: sorted by x, the y of the next point applies on
        # (x_i, x_i+1] when x is maximised ("pre"), the y of the current point when minimised
        ax.step(f[x], f[y], where="pre" if dx == "maximize" else "post", color=c, lw=1.4, alpha=0.9)
        ax.plot(f[x], f[y], "o", color=c, ms=4.5)
    else:
        label += " — no feasible trial"
    if rep.best is not None:
        ax.plot([rep.best[x]], [rep.best[y]], "*", color=c, ms=13, mec="black", mew=0.6)
    return Line2D([], [], color=c, marker="o", ms=4.5, lw=1.4, label=label), any_infeasible


def _symbol_keys(first: FrontReport, x: str, y: str, any_infeasible: bool, markers: bool) -> list:
    """Legend entries that explain the symbols shared by all studies."""
    from matplotlib.lines import Line2D

    ref = first.reference
    return [
        Line2D([], [], ls="", marker="o", color="0.5", alpha=0.35, ms=4, label="trial (faint)"),
        *([Line2D([], [], ls="", marker="x", color="0.5", ms=5, label="infeasible trial (constraint violated)")]
          if any_infeasible else []),
        Line2D([], [], ls="", marker="*", color="0.85", mec="black", mew=0.6, ms=11,
               label="best trade-off: front point nearest the ideal (each objective scaled 0-1 over the front)"),
        Line2D([], [], ls="", marker="s", color="black", ms=6,
               label=f"hypervolume reference point ({ref[x]:.3g}, {ref[y]:.3g}; {first.reference_kind})"),
        *([Line2D([], [], ls="", marker="D", color="0.35", mfc="none", ms=4, label="reported result (labelled)")]
          if markers else []),
    ]
