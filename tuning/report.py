"""From a finished (or partial) study to its report: trial table, Pareto front, hypervolume
against a stated reference point, best trade-off under the constraints; CSV + JSON files."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.errors import ConfigError
from tuning.pareto import best_tradeoff_index, hypervolume_2d, pareto_mask

__all__ = ["trials_frame", "FrontReport", "front_report", "nadir_reference", "parse_reference", "write_report"]


def trials_frame(study, objectives: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per COMPLETE trial: ``trial``, the objectives (by name), the hyper-parameter values
    (user attrs set by the search space), every logged metric, ``constraint_violation`` (max over
    the trial's constraint values, NaN without constraints) and ``feasible``."""
    from optuna.trial import TrialState

    names = list(objectives or study.user_attrs.get("objectives", []))
    if len(names) != len(study.directions):
        raise ConfigError(f"study {study.study_name!r}: {len(study.directions)} objectives but names {names}")
    hp = list(study.user_attrs.get("hyperparameters", []))
    rows = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        row: dict[str, Any] = {"trial": t.number}
        row.update({n: float(v) for n, v in zip(names, t.values)})
        row.update({k: t.user_attrs.get(k) for k in hp})
        metrics = t.user_attrs.get("metrics", {})
        row.update({k: v for k, v in metrics.items() if k not in row and not k.endswith("_n_queries")})
        cons = list(t.constraints.values())  # Optuna's trial.set_constraint values
        row["constraint_violation"] = float(max(cons)) if cons else float("nan")
        row["feasible"] = bool(max(cons) <= 0) if cons else True
        row["seconds"] = t.duration.total_seconds() if t.duration is not None else float("nan")
        rows.append(row)
    cols = ["trial", *names, *hp]
    return pd.DataFrame(rows, columns=None if rows else cols + ["feasible"])


def parse_reference(text: str | None, objectives: Sequence[str]) -> dict[str, float] | None:
    """``"kendall_tau=0,exposure_gap=0.05"`` -> dict; every objective must be given."""
    if not text:
        return None
    ref: dict[str, float] = {}
    for item in text.split(","):
        k, sep, v = item.partition("=")
        if not sep:
            raise ConfigError(f"--reference item {item!r} must look like metric=value")
        try:
            ref[k.strip()] = float(v)
        except ValueError:
            raise ConfigError(f"--reference item {item!r}: {v!r} is not a number") from None
    if set(ref) != set(objectives):
        raise ConfigError(f"--reference must give exactly the objectives {list(objectives)}, got {sorted(ref)}")
    return ref


def nadir_reference(frames: Sequence[pd.DataFrame], objectives: Sequence[str], directions: Sequence[str],
                    margin: float = 0.1) -> dict[str, float]:
    """The observed nadir (worst finite value of each objective over all trials of all frames)
    moved further out by ``margin`` times the objective's observed range, so that the extreme
    points of a front still enclose some area (at the bare nadir they contribute none)."""
    ref = {}
    for name, d in zip(objectives, directions):
        vals = np.concatenate([f[name].to_numpy(dtype=float) for f in frames if len(f)] or [np.array([])])
        vals = vals[np.isfinite(vals)]
        if vals.size == 0:
            raise ConfigError(f"no finite {name} values to derive a reference point from")
        span = float(vals.max() - vals.min()) or max(abs(float(vals[0])), 1.0) * 1e-3
        ref[name] = float(vals.min() - margin * span if d == "maximize" else vals.max() + margin * span)
    return ref


@dataclass
class FrontReport:
    """A study's Pareto summary (front rows, hypervolume, best trade-off) in objective units."""

    study: str
    method: str
    objectives: list[str]
    directions: list[str]
    reference: dict[str, float]
    reference_kind: str
    hypervolume: float
    n_complete: int
    n_feasible: int
    constraints: list[str]
    best_trial: int | None
    best: dict[str, Any] | None
    front: pd.DataFrame = field(repr=False)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("front")
        d["front_trials"] = [int(x) for x in self.front["trial"]] if len(self.front) else []
        return d


def front_report(df: pd.DataFrame, *, study: str, method: str, objectives: Sequence[str],
                 directions: Sequence[str], reference: Mapping[str, float], reference_kind: str = "given",
                 constraints: Sequence[str] = ()) -> FrontReport:
    """Front of the feasible trials, its hypervolume w.r.t. ``reference`` and the best trade-off."""
    objectives, directions = list(objectives), list(directions)
    if len(df):
        vals = df[objectives].to_numpy(dtype=float)
        feas = df["feasible"].to_numpy(dtype=bool)
        mask = pareto_mask(vals, directions, feas)
        front = df[mask].sort_values(objectives[0], ascending=directions[0] == "minimize").reset_index(drop=True)
        ref = [float(reference[o]) for o in objectives]
        hv = hypervolume_2d(vals[mask], directions, ref) if len(objectives) == 2 else float("nan")
        bi = best_tradeoff_index(vals, directions, feas)
    else:
        front, hv, bi, feas = df, 0.0, None, np.zeros(0, bool)
    best = None
    best_trial = None
    if bi is not None:
        row = df.iloc[bi]
        best_trial = int(row["trial"])
        best = {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()
                if not (isinstance(v, float) and math.isnan(v))}
    return FrontReport(study, method, objectives, directions, dict(reference), reference_kind, float(hv),
                       int(len(df)), int(np.sum(feas)), list(constraints), best_trial, best, front)


def write_report(rep: FrontReport, out: Path, prefix: str = "") -> list[Path]:
    """``<prefix>pareto_front.csv`` (front rows + hypervolume and reference columns) and
    ``<prefix>sweep_summary.json``; returns the paths."""
    out.mkdir(parents=True, exist_ok=True)
    front = rep.front.copy()
    front.insert(0, "study", rep.study)
    front.insert(1, "method", rep.method)
    front["on_front"] = True
    front["best_tradeoff"] = front["trial"] == rep.best_trial if len(front) else []
    front["hypervolume"] = rep.hypervolume
    for k, v in rep.reference.items():
        front[f"reference_{k}"] = v
    from fairltr.files import atomic_path, atomic_write_text

    csv = out / f"{prefix}pareto_front.csv"
    with atomic_path(csv) as tmp:
        front.to_csv(tmp, index=False)
    js = out / f"{prefix}sweep_summary.json"
    atomic_write_text(js, json.dumps(rep.to_json(), indent=1, default=float))
    return [csv, js]
