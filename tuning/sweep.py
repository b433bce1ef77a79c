"""A Pareto sweep end to end: trial -> study (create or resume) -> worker loop with an MLflow
mirror -> report (front CSV/JSON, plot, hypervolume, best trade-off) on the parent run. The trial
of each method (data in, metrics out) comes from the workflows:
:func:`fairltr.workflows.run_sweep_job` builds it and calls :func:`run_sweep`."""

from __future__ import annotations

import logging
import math
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from fairltr.errors import ConfigError
from fairltr.metrics import key_part
from tuning.objectives import DEFAULT_OBJECTIVES, Constraint, ObjectiveSpec, parse_constraint, parse_objectives
from tuning.plots import plot_fronts
from tuning.report import (
    FrontReport,
    front_report,
    front_trials,
    nadir_reference,
    parse_reference,
    trials_frame,
    write_report,
)
from tuning.storage import set_user_attrs
from tuning.study import WorkerReport, interruptible, make_sampler, make_storage, open_study, run_worker

__all__ = ["SweepConfig", "SweepResult", "run_sweep", "make_objective", "study_reports", "file_stem"]

_log = logging.getLogger(__name__)
_WORKER = f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class SweepConfig:
    """Everything ``fairltr sweep`` takes; see the README section "Pareto sweeps"."""

    method: str
    train: str | Path
    test: str | Path
    n_trials: int
    study: str
    storage: str | None = None
    objectives: str | None = None  # None: the method's default (kendall_tau:max,exposure_disparity:min)
    constraints: Sequence[str] = ()
    sampler: str = "nsga2"
    seed: int = 0
    out: str | Path = "sweep-out"
    compare_with: Sequence[str] = ()
    reference: str | None = None
    tracking_uri: str | None = None
    experiment: str = "fairltr-sweep"
    mlflow: bool = True
    loss: str = "exposure_hinge"
    p_range: tuple[float, float] | None = None
    alpha_range: tuple[float, float] = (0.01, 0.5)
    max_iter: int | None = None
    population_size: int | None = None
    heartbeat_interval: int = 10
    grace_period: int = 30
    max_retry: int = 2
    progress: bool = True
    plot: bool = True
    method_options: dict[str, Any] = field(default_factory=dict)  # passed to the method's trial builder (dpr)
    register_best: str | None = None  # register the best trade-off under this name (fairltr.workflows.sweep)
    # (method: a name registered in fairltr.workflows.sweep_plugins; tuning never builds trials itself)


@dataclass
class SweepResult:
    study: str
    worker: WorkerReport
    report: FrontReport | None
    compared: list[FrontReport] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    parent_run_id: str | None = None
    finished: bool = False
    registered: tuple[str, str, str | None] | None = None  # (model name, version, serving policy)


def file_stem(name: str) -> str:
    """A study or run name made safe as a file-name prefix inside ``--out``: letters, digits,
    ``.``, ``_`` and ``-`` only, no leading dot (``../../x`` -> ``x``)."""
    import re

    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return stem or "study"


def make_objective(runner, objectives: Sequence[ObjectiveSpec], constraints: Sequence[Constraint],
                   tracker=None, extra_params: dict[str, Any] | None = None) -> Callable:
    """Optuna objective: suggest -> train/evaluate -> constraints -> MLflow nested run -> values.

    Each finite metric (not the ``*_n_queries`` counts) and ``train_seconds`` (the runner's time)
    is stored as a user attribute of its own, the worker ``host:pid`` as ``worker``, the
    hyper-parameter values used as ``<name>`` (so optuna-dashboard lists them one per line, and
    reports and MLflow can be rebuilt from the storage alone).
    """
    space = runner.space

    def objective(trial) -> list[float]:
        values = space.suggest(trial)
        t0 = time.perf_counter()
        with interruptible():  # Ctrl-C stops training at once; the storage writes below finish first
            metrics = runner(values)
        seconds = time.perf_counter() - t0
        finite = {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float)) and math.isfinite(v)}
        attrs: dict[str, Any] = {k: v for k, v in finite.items() if not k.endswith("_n_queries") and k not in values}
        attrs.update(train_seconds=seconds, worker=_WORKER)
        set_user_attrs(trial, attrs)  # one storage transaction, not one commit per attribute
        cons = {c.key: c.value(metrics) for c in constraints}
        for k, v in cons.items():
            trial.set_constraint(k, v)
        out = []
        for o in objectives:
            v = float(metrics.get(o.name, math.nan))
            if not math.isfinite(v):
                raise ValueError(f"objective {o.name} is undefined (NaN) for {values}")
            out.append(v)
        if tracker is not None:
            # the values used, and for a parameter with a zero band what Optuna sampled (below the
            # declared low it stands for 0)
            params = {**values, **{f"{s.name}_sampled": trial.params[s.name] for s in space.params if s.zero_band > 0},
                      **(extra_params or {})}
            logged = {**finite, "train_seconds": seconds,
                      "feasible": float(all(v <= 0 for v in cons.values()))}
            logged.update({f"constraint_{i}": v for i, v in enumerate(cons.values())})
            tracker.log_trial(trial.number, params, logged, tags={"fairltr.sweep.objectives": ",".join(o.short for o in objectives)},
                              first=[o.name for o in objectives])
        return out

    objective.scopes_interrupts = True
    return objective


def study_reports(storage, names: Sequence[str], objectives: Sequence[ObjectiveSpec],
                  constraints: Sequence[Constraint], reference: str | None) -> tuple[list[FrontReport], dict[str, pd.DataFrame]]:
    """Reports of several studies in one storage with one shared reference point (given, or the
    observed nadir over all of their trials, moved out by 10% of each objective's range)."""
    import optuna

    onames = [o.name for o in objectives]
    dirs = [o.direction for o in objectives]
    frames: dict[str, pd.DataFrame] = {}
    fronts: dict[str, list[int]] = {}
    methods: dict[str, str] = {}
    for name in names:
        try:
            st = optuna.load_study(study_name=name, storage=storage)
        except KeyError:
            raise ConfigError(f"study {name!r} not found in the storage (for --compare-with)") from None
        stored = list(st.user_attrs.get("objectives", []))
        if stored and stored != onames:
            raise ConfigError(f"study {name!r} optimises {stored}, not {onames}: fronts are not comparable")
        frames[name] = trials_frame(st, onames)
        fronts[name] = front_trials(st)
        methods[name] = st.user_attrs.get("method", name)
    ref = parse_reference(reference, onames)
    kind = "given"
    if ref is None:
        ref = nadir_reference(list(frames.values()), onames, dirs)
        kind = "observed nadir of all plotted trials + 10% of each range"
    ckeys = [c.key for c in constraints]
    reports = [front_report(frames[n], fronts[n], study=n, method=methods[n], objectives=onames, directions=dirs,
                            reference=ref, reference_kind=kind, constraints=ckeys) for n in names]
    return reports, frames


def _report(cfg: SweepConfig, study, storage, worker: WorkerReport, objectives, constraints, runner, tracker,
            out: Path) -> tuple[SweepResult, FrontReport, list[FrontReport]]:
    """Front CSV/JSON, plot, comparison table; the summary on the MLflow parent run."""
    result = SweepResult(cfg.study, worker, None, parent_run_id=tracker.parent_run_id if tracker else None)
    result.finished = worker.n_complete >= cfg.n_trials

    names = [cfg.study, *[n for n in cfg.compare_with if n != cfg.study]]
    reports, frames = study_reports(storage, names, objectives, constraints, cfg.reference)
    rep = reports[0]
    result.report, result.compared = rep, reports[1:]
    stem = file_stem(cfg.study)
    files = write_report(rep, out, prefix=f"{stem}_")
    if cfg.plot:
        files.append(plot_fronts(reports, frames, out / f"{stem}_pareto.png",
                                 title=f"{cfg.study}: Pareto fronts ({', '.join(r.method for r in reports)})"))
    if len(reports) > 1:
        comp = pd.DataFrame([{"study": r.study, "method": r.method, "n_complete": r.n_complete,
                              "n_front": len(r.front), "hypervolume": r.hypervolume,
                              **{f"reference_{k}": v for k, v in r.reference.items()}} for r in reports])
        path = out / f"{stem}_comparison.csv"
        from fairltr.files import atomic_path

        with atomic_path(path) as tmp:
            comp.to_csv(tmp, index=False)
        files.append(path)
    result.files = files
    if tracker is not None:
        deleted = tracker.reconcile(study)
        if deleted:
            _log.info("deleted %d MLflow runs of failed/surplus trials", deleted)
        summary = {"hypervolume": rep.hypervolume, "n_complete": rep.n_complete, "n_feasible": rep.n_feasible,
                   "n_front": len(rep.front),
                   **{f"reference_{k}": v for k, v in rep.reference.items()}}
        if rep.best is not None:
            summary["best_trial"] = rep.best_trial
            summary.update({f"best_{k}": rep.best[k] for k in [*rep.objectives, *runner.space.names] if k in rep.best})
        for r in reports[1:]:  # study names may hold characters MLflow keys do not allow (lambdamart+fair)
            summary[f"hypervolume_{key_part(r.study)}"] = r.hypervolume
        front = [int(x) for x in rep.front["trial"]] if len(rep.front) else []
        tracker.log_summary(summary, files, finished=result.finished, front_trials=front, best_trial=rep.best_trial,
                            description=sweep_description(cfg, rep, runner.space.names))
    return result, rep, reports


def sweep_description(cfg: SweepConfig, rep: FrontReport, params: Sequence[str]) -> str:
    """The parent run's description (Markdown): what was searched, the front, the best trade-off."""
    goals = ", ".join(f"{o} ({'max' if d == 'maximize' else 'min'})" for o, d in zip(rep.objectives, rep.directions))
    lines = [f"**Sweep {rep.study}** ({rep.method}): {rep.n_complete} complete trials of {cfg.n_trials}, "
             f"{rep.n_feasible} feasible; objectives {goals}.", "",
             f"- Pareto front: {len(rep.front)} trial(s) (nested runs tagged `fairltr.sweep.front = true`); "
             f"hypervolume {rep.hypervolume:.4g} against the {rep.reference_kind} reference "
             + ", ".join(f"{k}={v:.4g}" for k, v in rep.reference.items())]
    if rep.best is not None and rep.best_trial is not None:
        values = ", ".join(f"{k}={float(rep.best[k]):.4g}" for k in [*rep.objectives, *params]
                           if k in rep.best and isinstance(rep.best[k], (int, float)))
        lines.append(f"- Best trade-off: trial {rep.best_trial} (tag `fairltr.sweep.best_tradeoff = true`): {values}")
    if rep.constraints:
        lines.append("- Constraints: " + "; ".join(rep.constraints))
    return "\n".join(lines)


def run_sweep(cfg: SweepConfig, echo: Callable[[str], None] = print, *, runner=None,
              default_objectives: str = DEFAULT_OBJECTIVES) -> SweepResult:
    """Run (or resume, or join as another worker) the sweep described by ``cfg``.

    ``runner`` is the trial: ``runner(values) -> metrics`` with its search space as
    ``runner.space``; the workflows build it (``fairltr.workflows.ranking_trial`` /
    ``dpr_trial``), and :func:`fairltr.workflows.run_sweep_job` does all of it from ``cfg``.
    ``default_objectives`` applies when ``cfg.objectives`` is not given."""
    if runner is None:
        raise ConfigError("run_sweep needs the trial (runner=...): call fairltr.workflows.run_sweep_job(cfg), "
                          "which builds it for cfg.method, or pass fairltr.workflows.ranking_trial(...)")
    if not os.environ.get("FAIRLTR_VERBOSE"):
        import optuna

        # the bar and the nested runs replace Optuna's per-trial lines; a failed trial is reported
        # in one line by the worker loop instead of Optuna's warning with a traceback
        optuna.logging.set_verbosity(optuna.logging.ERROR)
    objectives = parse_objectives(cfg.objectives or default_objectives)
    constraints = [parse_constraint(c) for c in cfg.constraints]
    parse_reference(cfg.reference, [o.name for o in objectives])  # a typo fails now, not after the trials
    if cfg.n_trials < 1:
        raise ConfigError(f"--trials must be >= 1, got {cfg.n_trials}")
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    storage, study, created, checked = _open_sweep_study(cfg, runner, objectives, constraints, out, echo)
    tracker = _attach_tracker(cfg, runner, study, created, checked, echo) if cfg.mlflow else None
    bar, on_progress = _progress_bar(cfg)
    objective = make_objective(runner, objectives, constraints, tracker,
                               {"method": cfg.method, "seed": cfg.seed})
    try:
        try:
            worker = run_worker(study, objective, cfg.n_trials, storage=storage, grace_period=cfg.grace_period,
                                max_retry=cfg.max_retry, on_progress=on_progress)
        finally:
            if bar is not None:
                bar.close()
        result, rep, reports = _report(cfg, study, storage, worker, objectives, constraints, runner, tracker, out)
    except BaseException as exc:
        if tracker is not None:  # no run this worker touched stays RUNNING; a resumed sweep reopens the parent
            tracker.abort(exc)
        raise
    _echo_outcome(echo, rep, reports, runner.space.names)
    return result


def _open_sweep_study(cfg: SweepConfig, runner, objectives: Sequence[ObjectiveSpec],
                      constraints: Sequence[Constraint], out: Path, echo: Callable[[str], None]):
    """Storage, sampler and the study (created, or resumed when its stored configuration
    matches): ``(storage, study, created, checked)``, ``checked`` being that configuration."""
    storage = make_storage(cfg.storage, out=out, heartbeat_interval=cfg.heartbeat_interval,
                           grace_period=cfg.grace_period, max_retry=cfg.max_retry)
    sampler = make_sampler(cfg.sampler, cfg.seed, n_trials=cfg.n_trials, population_size=cfg.population_size)
    checked = {
        "method": cfg.method,
        "objectives": [o.name for o in objectives],
        "constraints": [c.key for c in constraints],
        "hyperparameters": runner.space.names,
        "search_space": repr(runner.space),
        "loss": getattr(runner, "study_loss", ""),  # the loss a method trains with (deltr's --loss), else ""
        **{f"option_{k}": v for k, v in cfg.method_options.items()},
    }
    if cfg.compare_with:
        import optuna

        have = set(optuna.study.get_all_study_names(storage))
        missing = [n for n in cfg.compare_with if n != cfg.study and n not in have]
        if missing:
            raise ConfigError(f"--compare-with: no study {missing} in the storage; it has {sorted(have)}")
    study, created = open_study(cfg.study, storage, [o.direction for o in objectives], sampler, checked,
                                metric_names=[o.name for o in objectives])
    if created:
        study.set_user_attr("sampler", cfg.sampler)
        study.set_user_attr("train", str(cfg.train))
        study.set_user_attr("test", str(cfg.test))
    echo(f"study {cfg.study!r} ({'created' if created else 'resumed'}): {cfg.method}, "
         f"{runner.space!r}, objectives {[o.short for o in objectives]}"
         + (f", constraints {[c.key for c in constraints]}" if constraints else ""))
    return storage, study, created, checked


def _attach_tracker(cfg: SweepConfig, runner, study, created: bool, checked: dict[str, Any],
                    echo: Callable[[str], None]):
    """The MLflow mirror: create (first worker) or join the study's parent run."""
    from fairltr.tracking import SweepTracker, redact_uri

    tracker = SweepTracker(cfg.tracking_uri, cfg.experiment, cfg.study)
    try:
        tracker.attach(study, created, {
            **{k: v for k, v in checked.items() if k != "search_space"}, "sampler": cfg.sampler,
            "seed": cfg.seed, "n_trials": cfg.n_trials, "train": cfg.train, "test": cfg.test,
            "search_space": repr(runner.space),
        })
    except BaseException as exc:
        tracker.abort(exc)
        raise
    echo(f"MLflow: parent run {tracker.parent_run_id} in {redact_uri(tracker.tracking_uri)}")
    return tracker


def _progress_bar(cfg: SweepConfig) -> tuple[Any, Callable[[int, int], None]]:
    """A tqdm bar of COMPLETE trials (None with ``cfg.progress`` off) and the worker's progress
    callback that moves it."""
    bar = None
    if cfg.progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.n_trials, desc=f"sweep {cfg.study}", unit="trial")

    def on_progress(done: int, total: int) -> None:
        if bar is not None:
            bar.n = min(done, total)
            bar.refresh()

    return bar, on_progress


def _echo_outcome(echo: Callable[[str], None], rep: FrontReport, reports: Sequence[FrontReport],
                  params: Sequence[str]) -> None:
    """The closing lines: counts, front and hypervolume, best trade-off, compared studies."""
    echo(f"{rep.n_complete} complete trials ({rep.n_feasible} feasible); front of {len(rep.front)}; "
         f"hypervolume {rep.hypervolume:.6g} w.r.t. {rep.reference} ({rep.reference_kind})")
    if rep.best is not None:
        echo("best trade-off: trial {} ".format(rep.best_trial)
             + ", ".join(f"{k}={rep.best[k]:.6g}" for k in [*params, *rep.objectives] if k in rep.best))
    for r in reports[1:]:
        echo(f"  compare {r.study} ({r.method}): hypervolume {r.hypervolume:.6g}, front of {len(r.front)}")
