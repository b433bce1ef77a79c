"""From a finished (or partial) study to its report: trial table (Optuna's ``trials_dataframe``),
Pareto front (Optuna's ``best_trials``), hypervolume against a stated reference point, best
trade-off under the constraints; CSV + JSON files."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.errors import ConfigError
from tuning.pareto import best_tradeoff_index, hypervolume_2d

__all__ = ["trials_frame", "front_trials", "FrontReport", "front_report", "nadir_reference", "parse_reference",
           "write_report"]

# user attributes that are bookkeeping, not results (set on PRUNED / FAIL trials)
_BOOKKEEPING = ("fairltr_surplus", "fairltr_error")


def trials_frame(study, objectives: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per COMPLETE trial, from ``study.trials_dataframe()``: ``trial``, the objectives
    (by name), the hyper-parameter values used (user attrs set by the search space), every
    metric (one user attribute each), ``worker``, ``constraint_violation`` (max over the
    trial's constraint values, NaN without constraints), ``feasible`` and ``seconds``."""
    names = list(objectives or study.metric_names or study.user_attrs.get("objectives", []))
    if len(names) != len(study.directions):
        raise ConfigError(f"study {study.study_name!r}: {len(study.directions)} objectives but names {names}")
    hp = list(study.user_attrs.get("hyperparameters", []))
    raw = study.trials_dataframe(attrs=("number", "values", "user_attrs", "constraints", "duration", "state"))
    if raw.empty or not (raw["state"] == "COMPLETE").any():
        return pd.DataFrame(columns=["trial", *names, *hp, "feasible"])
    raw = raw[raw["state"] == "COMPLETE"].reset_index(drop=True)
    stored = study.metric_names or list(range(len(names)))  # trials_dataframe's values_<name or index>
    out = pd.DataFrame({"trial": raw["number"].astype(int)})
    for name, key in zip(names, stored):
        out[name] = raw[f"values_{key}"].astype(float)
    attrs = {c[len("user_attrs_"):]: raw[c] for c in raw.columns if c.startswith("user_attrs_")}
    if "metrics" in attrs:  # a study written before metrics were one user attribute each
        legacy = pd.DataFrame([m if isinstance(m, dict) else {} for m in attrs.pop("metrics")])
        attrs.update({k: legacy[k] for k in legacy.columns if k not in attrs})
    for k in hp:
        out[k] = attrs[k].astype(float) if k in attrs else np.nan
    for k, col in attrs.items():
        if k not in out.columns and k not in _BOOKKEEPING and not k.endswith("_n_queries"):
            out[k] = col.to_numpy()
    cons = raw[[c for c in raw.columns if c.startswith("constraints_")]].astype(float)
    out["constraint_violation"] = cons.max(axis=1) if cons.shape[1] else np.nan
    out["feasible"] = (cons <= 0).all(axis=1) if cons.shape[1] else True  # Optuna's definition
    out["seconds"] = raw["duration"].dt.total_seconds()
    return out


def front_trials(study) -> list[int]:
    """Numbers of the study's Pareto-optimal trials: Optuna's ``study.best_trials`` (among the
    feasible trials when the study has constraints)."""
    return sorted(t.number for t in study.best_trials)


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


def front_report(df: pd.DataFrame, front: Sequence[int], *, study: str, method: str, objectives: Sequence[str],
                 directions: Sequence[str], reference: Mapping[str, float], reference_kind: str = "given",
                 constraints: Sequence[str] = ()) -> FrontReport:
    """Report of a study from its trial table ``df`` (:func:`trials_frame`) and the numbers of
    its front trials (:func:`front_trials`): front rows, their hypervolume w.r.t. ``reference``
    and the best trade-off among them."""
    objectives, directions = list(objectives), list(directions)
    feas = df["feasible"].to_numpy(dtype=bool) if len(df) else np.zeros(0, bool)
    rows = df[df["trial"].isin(list(front))] if len(df) else df
    rows = rows.sort_values(objectives[0], ascending=directions[0] == "minimize").reset_index(drop=True)
    hv, best, best_trial = 0.0, None, None
    if len(rows):
        vals = rows[objectives].to_numpy(dtype=float)
        ref = [float(reference[o]) for o in objectives]
        hv = hypervolume_2d(vals, directions, ref) if len(objectives) == 2 else float("nan")
        bi = best_tradeoff_index(vals, directions)
        if bi is not None:
            row = rows.iloc[bi]
            best_trial = int(row["trial"])
            best = {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()
                    if not (isinstance(v, float) and math.isnan(v))}
    return FrontReport(study, method, objectives, directions, dict(reference), reference_kind, float(hv),
                       int(len(df)), int(np.sum(feas)), list(constraints), best_trial, best, rows)


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
