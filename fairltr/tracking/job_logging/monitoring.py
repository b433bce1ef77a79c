"""MLflow side of ``fairltr monitor``: the training profile recorded with a model, the plot over
time, the HTML report, the monitoring run (worst-case metrics as time series) and the
"monitored through" tag on the model version."""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

__all__ = ["recorded_training_profile", "log_training_profile", "monitor_plot_png", "monitor_report_html",
           "log_monitor_run", "tag_monitored_version", "MONITOR_TAG", "MONITOR_LINE"]

MONITOR_TAG = "fairltr.monitored_through"
MONITOR_LINE = "Monitored through"


def log_training_profile(train_df: pd.DataFrame, groups: Sequence[str], features: Sequence[str], folder: Path) -> Path:
    """Write ``training_profile.json`` (category shares, feature means) into ``folder`` (the
    run's artifact staging folder): what ``fairltr monitor`` compares served traffic with."""
    from fairltr.monitoring.shift import PROFILE_FILE, TrainingProfile

    return TrainingProfile.of(train_df, groups, features).write(Path(folder) / PROFILE_FILE)


def recorded_training_profile(vm: Any):
    """The :class:`~fairltr.monitoring.TrainingProfile` logged by the model's training run, or
    None when that run logged none (or the model is not a registered version)."""
    import mlflow
    from mlflow.exceptions import MlflowException

    from fairltr.monitoring.shift import PROFILE_FILE, TrainingProfile

    if vm is None or not vm.name:
        return None
    client = mlflow.MlflowClient()
    run_id = client.get_model_version(vm.name, vm.version).run_id
    if not run_id:
        return None
    try:
        local = client.download_artifacts(run_id, PROFILE_FILE)
    except (MlflowException, OSError):
        return None
    return TrainingProfile.from_json(Path(local).read_text(), source=f"run {run_id} {PROFILE_FILE}")


def _impact_columns(table: pd.DataFrame) -> bool:
    return "impact_ratio_at_k" in table.columns


def monitor_plot_png(windows: Sequence[Any], k: int, threshold: float = 0.8) -> bytes:
    """One panel per attribute (and the intersection): each audited category's impact ratio at k
    per window, its interval as a band, the four-fifths line, and each window's verdict as its
    background (red: fail, grey: insufficient evidence)."""
    from fairltr.tracking.evaluation.plots import _pyplot, figure_to_png

    plt = _pyplot()
    rows = []
    for w in windows:
        t = w.table[~w.table["excluded"].astype(bool)]
        for rec in t.itertuples(index=False):
            rows.append({"start": w.start, "attribute": rec.attribute, "category": rec.category,
                         "ir": rec.impact_ratio_at_k, "low": getattr(rec, "impact_ratio_at_k_ci_low", math.nan),
                         "high": getattr(rec, "impact_ratio_at_k_ci_high", math.nan)})
    frame = pd.DataFrame(rows)
    attributes = list(dict.fromkeys(frame["attribute"])) if len(frame) else ["(no data)"]
    fig, axes = plt.subplots(len(attributes), 1, figsize=(9, 3.2 * len(attributes)), squeeze=False, sharex=True)
    shade = {"fail": ("#f4b6b6", "fail"), "insufficient evidence": ("#d9d9d9", "insufficient evidence")}
    for ax, attribute in zip(axes[:, 0], attributes):
        seen: set[str] = set()
        for w in windows:
            colour, label = shade.get(getattr(w, "verdict", "pass"), (None, None))
            if colour:
                ax.axvspan(w.start, w.end, color=colour, alpha=0.6, zorder=0,
                           label=None if label in seen else f"window: {label}")
                seen.add(label)
        part = frame[frame["attribute"] == attribute] if len(frame) else frame
        for category, line in part.groupby("category", sort=True):
            line = line.sort_values("start")
            ax.plot(line["start"], line["ir"], marker="o", label=str(category))
            if line["low"].notna().any():
                ax.fill_between(line["start"], line["low"], line["high"], alpha=0.15)
        ax.axhline(threshold, color="crimson", linestyle="--", linewidth=1.2, label=f"four-fifths ({threshold:g})")
        ax.set_ylim(0, 1.05)
        ax.set_ylabel(f"impact ratio @ {k}")
        ax.set_title(f"{attribute}: pooled selection rate at {k} / the most-selected category's, per window")
        ax.legend(fontsize=8, ncol=4, loc="lower left")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("window start")
    fig.autofmt_xdate()
    fig.tight_layout()
    return figure_to_png(fig)


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.3f}"
    return html.escape(str(v))


def monitor_report_html(record: Mapping[str, Any], windows: Sequence[Any], shift: Mapping[int, Mapping],
                        png: bytes) -> str:
    """A self-contained page: the verdict, one row per window (worst-case figures with intervals,
    the gates' verdict, whether the pool shifted), the failing lines, and the plot."""
    k = record["k"]
    key = f"impact_ratio_at_{k}"
    failing = {f["window"] for f in record["failures"]}
    verdicts = record.get("window_verdicts", {})
    head = ["window start", "queries", "candidates", f"impact ratio @ {k}", "exposure ratio (worst)", "gates",
            "pool changed (TVD / |SMD|)"]
    body = []
    for w in windows:
        ir = w.metrics.get(key, math.nan)
        lo, hi = w.metrics.get(f"{key}_ci_low"), w.metrics.get(f"{key}_ci_high")
        ir_text = _cell(ir) + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else "")
        s = shift.get(w.index)
        moved = ("yes" if s["shifted"] else "no") + f" ({s['max_tvd']:.2f} / {s['max_abs_smd']:.2f})" if s else "n/a"
        verdict = verdicts.get(w.label) or ("fail" if w.index in failing else "pass")
        verdict = verdict if record["gates"] or verdict != "pass" else "no gates"
        cells = [w.label, w.n_queries, w.n_rows, ir_text, _cell(w.metrics.get("exposure_ratio_worst", math.nan)),
                 verdict, moved]
        style = (' style="background:#fde2e2"' if verdict == "fail" else
                 ' style="background:#eeeeee"' if verdict == "insufficient evidence" else "")
        body.append(f"<tr{style}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    lines = "".join(f"<li><code>{html.escape(f['line'])}</code>"
                    + (" — the pool changed" if f.get("pool_changed") else
                       " — the pool did not change: the model treats it differently" if f.get("pool_changed") is False
                       else "") + "</li>" for f in record["failures"]) or "<li>none</li>"
    notes = "".join(f"<li><code>{html.escape(line)}</code></li>" for line in record.get("insufficient", [])) \
        or "<li>none</li>"
    family = record.get("family") or {}
    if family.get("method") == "holm":
        stats_text = (f"With confidence {family.get('confidence')}, a window fails only when a one-sided test of "
                      f"the four-fifths gates rejects after Holm's correction over the run's {family.get('n_tests')} "
                      "tests (the chance of any false FAIL in the run is at most 1 - confidence); below the bound "
                      "but not significant, or too small to test, is 'insufficient evidence' (docs/monitoring.md).")
    else:
        stats_text = ("Without --confidence the point estimates decide; a category below the bound in a window too "
                      "small to test it (fewer than 5 expected selections) is 'insufficient evidence', not a FAIL.")
    img = base64.b64encode(png).decode("ascii")
    model = html.escape(record.get("model_version") or record.get("model_uri") or "scored traffic table")
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>fairltr monitor</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1100px}}td,th{{border:1px solid #ccc;padding:4px 8px}}
table{{border-collapse:collapse}}th{{background:#f3f3f3}}</style></head><body>
<h1>Fairness over time: {html.escape(record['verdict'])}</h1>
<p>{model} · {html.escape(record['data'])} · windows of {html.escape(record['window'])} on
<code>{html.escape(record['time_column'])}</code> · groups {html.escape(', '.join(record['groups']))} ·
gates {html.escape(', '.join(record['gates']) or 'none')}{' at confidence ' + str(record['confidence']) if record['confidence'] else ''}
· monitored through {html.escape(str(record['through']))}</p>
<p>Each window is audited on its own rows: pooled selection rate at {k} per category, its ratio to the
most-selected category (the four-fifths rule reads impact ratio &ge; 0.8), with {int(record['ci'] * 100) if record['ci'] else 'no'}%
bootstrap intervals over the window's queries. {html.escape(stats_text)} "Pool changed" tests the window's
category mix (goodness of fit) and feature means (z test) against the training data, Holm-corrected over the
run (total variation distance and standardised mean difference shown as effect sizes).</p>
<h2>Windows</h2><table><tr>{''.join(f'<th>{h}</th>' for h in head)}</tr>{''.join(body)}</table>
<h2>Failing windows and categories</h2><ul>{lines}</ul>
<h2>Insufficient evidence</h2><ul>{notes}</ul>
<h2>Impact ratio per category over time</h2><img alt="impact ratio over time" src="data:image/png;base64,{img}">
</body></html>"""


def log_monitor_run(tracking: Any, record: Mapping[str, Any], windows: Sequence[Any], files: Mapping[str, Path]) -> str:
    """One run: params, the worst-case metrics of every window as time series (step = window
    index, timestamp = window start), the output files as artifacts, a description with the
    verdict. Returns the run id."""
    import mlflow
    from mlflow.entities import Metric

    from fairltr.tracking.runs.life_cycle import job_run, log_params

    description = (f"fairltr monitor: {record['verdict']} ({record['n_windows']} windows of {record['window']}, "
                   f"through {record['through']}); gates: {', '.join(record['gates']) or 'none'}")
    name = f"monitor {record.get('model_version') or Path(record['data']).name}"
    with job_run(tracking.experiment, tracking.run_name or name, tags=tracking.tags, description=description) as run:
        run_id = run.info.run_id
        log_params(run_id, {k: record[k] for k in ("data", "time_column", "window", "k", "ci", "n_boot", "seed",
                                                   "confidence", "model_uri", "model_version")}
                   | {"groups": ",".join(record["groups"]), "gates": ";".join(record["gates"])})
        metrics = [Metric(key=key, value=value, timestamp=int(w.start.value // 1_000_000), step=w.index)
                   for w in windows for key, value in window_series(w).items()]
        client = mlflow.MlflowClient()
        for start in range(0, len(metrics), 1000):  # MLflow's batch limit
            client.log_batch(run_id, metrics=metrics[start:start + 1000])
        mlflow.set_tags({"fairltr.monitor.verdict": record["verdict"][:250],
                         "fairltr.monitor.through": str(record["through"])})
        for path in files.values():
            mlflow.log_artifact(str(path))
    return run_id


def _key(metric: str) -> str:
    """An MLflow-legal key (letters, digits, ``_ - . / :`` and spaces are kept)."""
    import re

    return re.sub(r"[^\w\-./: ]", "_", metric)


_VERDICT_VALUE = {"pass": 1.0, "insufficient evidence": 0.5, "fail": 0.0}


def window_series(w: Any) -> dict[str, float]:
    """One window's points of the run's time series, named so that MLflow's chart view groups them
    (``monitor/<metric>`` for the worst case over every attribute, ``monitor/<metric>/<attribute>``,
    ``monitor/<metric>/<attribute>/<category>`` per audited category; the interval ends stay in the
    artifacts, not as charts of their own), plus ``monitor/verdict`` (1 pass, 0.5 insufficient
    evidence, 0 fail), ``monitor/failing_categories``, ``monitor/queries`` and ``monitor/candidates``."""
    out: dict[str, float] = {}
    for key, value in w.metrics.items():
        if key.endswith(("_ci_low", "_ci_high")) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            continue
        base, _, attribute = key.partition(".")
        out[_key(f"monitor/{base}" + (f"/{attribute}" if attribute else ""))] = float(value)
    t = w.table[~w.table["excluded"].astype(bool)] if "excluded" in w.table.columns else w.table
    if "impact_ratio_at_k" in t.columns:
        for attribute, category, value in zip(t["attribute"], t["category"], t["impact_ratio_at_k"].astype(float)):
            if math.isfinite(value):
                out[_key(f"monitor/impact_ratio_at_{w.k}/{attribute}/{category}")] = float(value)
    out["monitor/verdict"] = _VERDICT_VALUE.get(getattr(w, "verdict", "pass"), 1.0)
    out["monitor/failing_categories"] = float(len(w.failures))
    out["monitor/queries"] = float(w.n_queries)
    out["monitor/candidates"] = float(w.n_rows)
    return out


def tag_monitored_version(name: str, version: str, record: Mapping[str, Any]) -> None:
    """Tag the version (``fairltr.monitored_through``: "<date>: <verdict>") and keep ONE line
    "Monitored through <date>: <verdict>" at the end of its description (replacing an older one)."""
    import mlflow

    client = mlflow.MlflowClient()
    text = f"{record['through']}: {record['verdict']}"
    client.set_model_version_tag(name, version, MONITOR_TAG, text[:5000])
    mv = client.get_model_version(name, version)
    kept = [line for line in (mv.description or "").splitlines() if not line.startswith(MONITOR_LINE)]
    first = record["failures"][0]["line"] if record["failures"] else ""
    kept.append(f"{MONITOR_LINE} {text}" + (f" (first: {first})" if first else "") + ".")
    client.update_model_version(name, version, description="\n".join(kept).strip())
