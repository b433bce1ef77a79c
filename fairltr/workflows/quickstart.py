"""The main job on its embedded defaults (``fairltr quickstart``): synthetic rankings whose
training judgments push a protected group down -> standard, colorblind and DELTR rankers ->
one comparison table; every model is a run in MLflow."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from fairltr.columns import DEFAULT_COLUMNS
from fairltr.errors import ConfigError
from fairltr.workflows.options import TrackingOptions
from fairltr.workflows.outputs import OutputSet
from fairltr.workflows.ranking import RankerOutcome, RankerSpec, train_and_evaluate

__all__ = ["QuickstartConfig", "QuickstartResult", "quickstart", "quickstart_specs"]

Echo = Callable[[str], None]


@dataclass(frozen=True)
class QuickstartConfig:
    queries: int = 60
    candidates: int = 40
    protected_share: float = 0.3
    bias: float = 1.0
    gamma: float = 1e3
    seed: int = 0
    out_dir: Path = Path("outputs/quickstart")
    tracking: TrackingOptions = field(default_factory=lambda: TrackingOptions(experiment="fairltr-quickstart"))
    progress: bool = False

    def __post_init__(self) -> None:
        if self.gamma <= 0:
            raise ConfigError(f"--gamma must be > 0 for the DELTR model of the comparison, got {self.gamma:g}")


@dataclass
class QuickstartResult:
    results: dict[str, dict[str, float]]          # model label -> test metrics
    outcomes: dict[str, RankerOutcome]
    files: dict[str, Path]
    run_ids: dict[str, str] = field(default_factory=dict)
    tracking_uri: str | None = None

    @property
    def standard(self) -> dict[str, float]:
        return next(iter(self.results.values()))

    @property
    def fair(self) -> dict[str, float]:
        return list(self.results.values())[-1]


def quickstart_specs(gamma: float, seed: int) -> dict[str, RankerSpec]:
    """The three rankers of the comparison, by label."""
    return {
        "standard (gamma=0)": RankerSpec(gamma=0.0, seed=seed),
        "colorblind": RankerSpec(gamma=0.0, colorblind=True, seed=seed),
        f"DELTR (gamma={gamma:g})": RankerSpec(gamma=gamma, seed=seed),
    }


def _slug(label: str) -> str:
    return label.split(" ")[0].lower()


def quickstart(cfg: QuickstartConfig, echo: Callable[[str], None] = lambda _: None) -> QuickstartResult:
    """Generate the data, train and evaluate the three rankers, write the output set, log runs."""
    from fairltr.io import write_table
    from fairltr.synthetic import make_biased_rankings
    from fairltr.tracking.runs.config import check_tracking_uri

    train, test = make_biased_rankings(cfg.queries, cfg.candidates, cfg.protected_share, bias=cfg.bias, seed=cfg.seed)
    specs = quickstart_specs(cfg.gamma, cfg.seed)
    managed = ["train.csv", "test.csv", "comparison.json"] + [
        f"{kind}_{_slug(label)}.{ext}" for label in specs for kind, ext in (("model", "json"), ("predictions", "csv"))]
    out = OutputSet(cfg.out_dir, managed=managed)
    uri = check_tracking_uri() if cfg.tracking.enabled else None
    echo(f"synthetic data: {cfg.queries} queries x {cfg.candidates} candidates, protected share "
         f"{cfg.protected_share}, training bias {cfg.bias} (equal merit, protected placed below)")
    outcomes = {label: train_and_evaluate(train, test, spec, DEFAULT_COLUMNS, progress=cfg.progress)
                for label, spec in specs.items()}
    results = {label: o.metrics for label, o in outcomes.items()}
    with out:
        write_table(train, out.path("train.csv"))
        write_table(test, out.path("test.csv"))
        for label, o in outcomes.items():
            o.model.save(out.path(f"model_{_slug(label)}.json"))
            write_table(o.ranked, out.path(f"predictions_{_slug(label)}.csv"))
        out.path("comparison.json").write_text(json.dumps(results, indent=1))
        files = out.commit()
    result = QuickstartResult(results, outcomes, files, tracking_uri=uri)
    if cfg.tracking.enabled:
        result.run_ids = _track(cfg, train, test, specs, outcomes, files)
    return result


def _track(cfg: QuickstartConfig, train: pd.DataFrame, test: pd.DataFrame, specs: dict[str, RankerSpec],
           outcomes: dict[str, RankerOutcome], files: dict[str, Path]) -> dict[str, str]:
    """One run per model (nested under the run ``mlflow run`` created, when there is one)."""
    import os

    from fairltr.tracking.job_logging.ranker_logging import log_ranker_into_run
    from fairltr.tracking.runs.life_cycle import child_run, job_run

    ids: dict[str, str] = {}
    data_paths = {"train": files["train.csv"], "test": files["test.csv"]}
    params = {"synthetic_bias": cfg.bias, "synthetic_queries": cfg.queries, "synthetic_candidates": cfg.candidates,
              "synthetic_protected_share": cfg.protected_share}
    if os.environ.get("MLFLOW_RUN_ID"):  # inside `mlflow run`: its run is the parent of the three
        with job_run(cfg.tracking.experiment, "quickstart", tags=cfg.tracking.tags):
            for label, o in outcomes.items():
                with child_run(label) as run:
                    log_ranker_into_run(run.info.run_id, o.model, train_df=train, test_df=test, test_metrics=o.metrics,
                                        params={**params, **specs[label].model_params()}, title=label,
                                        data_paths=data_paths)
                    ids[label] = run.info.run_id
        return ids
    for label, o in outcomes.items():
        with job_run(cfg.tracking.experiment, label, tags=cfg.tracking.tags) as run:
            log_ranker_into_run(run.info.run_id, o.model, train_df=train, test_df=test, test_metrics=o.metrics,
                                params={**params, **specs[label].model_params()}, title=label, data_paths=data_paths)
            ids[label] = run.info.run_id
    return ids
