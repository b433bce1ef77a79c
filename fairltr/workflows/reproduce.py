"""``fairltr reproduce deltr``: the DELTR paper's table on its own splits, ours beside the
paper's numbers, its required qualitative results, Figure 1, optionally logged to MLflow."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from fairltr.errors import DataError
from fairltr.workflows.deltr_paper import DATASETS, METRIC_COLUMNS, check_bounds, figure1, run_reproduction, to_markdown
from fairltr.workflows.options import TrackingOptions
from fairltr.workflows.outputs import OutputSet

__all__ = ["ReproduceConfig", "ReproduceResult", "reproduce_deltr", "reproduction_metrics"]

Echo = Callable[[str], None]


@dataclass(frozen=True)
class ReproduceConfig:
    data_dir: Path
    out_dir: Path = Path("outputs/reproduce-deltr")
    datasets: tuple[str, ...] = ("law-gender", "law-race", "trec")
    with_fair: bool = True
    fair_alpha: float = 0.1
    seed: int = 0
    tracking: TrackingOptions = field(default_factory=lambda: TrackingOptions(enabled=False,
                                                                              experiment="fairltr-reproduce"))

    def __post_init__(self) -> None:
        object.__setattr__(self, "data_dir", Path(self.data_dir))
        unknown = [d for d in self.datasets if d not in DATASETS]
        if unknown:
            raise DataError(f"unknown dataset(s) {unknown}; choose from {sorted(DATASETS)}")
        if not self.datasets:
            raise DataError(f"no dataset given; choose from {sorted(DATASETS)}")


@dataclass
class ReproduceResult:
    table: pd.DataFrame
    checks: list[tuple[str, bool, str]]
    markdown: str
    files: dict[str, Path]
    run_id: str | None = None

    @property
    def passed(self) -> bool:
        return all(ok for _, ok, _ in self.checks)


def reproduction_metrics(table: pd.DataFrame) -> dict[str, float]:
    """``<dataset>/<setting key>/<metric>`` -> value, e.g. ``law-race/fair_post_p_plus/exposure_ratio``
    (valid MLflow names, one per setting), for the finite values of the table."""
    out: dict[str, float] = {}
    for _, r in table.iterrows():
        for c in METRIC_COLUMNS:
            out[f"{r['dataset']}/{r['key']}/{c}"] = float(r[c])
    return out


def _check_inputs(cfg: ReproduceConfig) -> None:
    if not cfg.data_dir.is_dir():
        raise DataError(f"data directory not found: {cfg.data_dir}")
    for name in cfg.datasets:
        for train, test in DATASETS[name].folds:
            for rel in (train, test):
                if not (cfg.data_dir / rel).is_file():
                    raise DataError(f"{name}: expected the paper's file layout under {cfg.data_dir}; missing "
                                    f"{cfg.data_dir / rel}")


def reproduce_deltr(cfg: ReproduceConfig, echo: Echo = lambda _: None) -> ReproduceResult:
    """Validate inputs, outputs and tracking first; run every setting; write the output set
    (CSV, Markdown with the required results, Figure 1); log it when tracking is on."""
    from fairltr.tracking.runs.config import check_tracking_uri
    from fairltr.tracking.evaluation.plots import figure_to_png

    out = OutputSet(cfg.out_dir, managed=["reproduction.csv", "reproduction.md", "relevance_vs_exposure.png"])
    _check_inputs(cfg)
    import matplotlib  # noqa: F401  (Figure 1; a missing [plots] extra fails now, not after the run)
    if cfg.tracking.enabled:
        check_tracking_uri()
    table = run_reproduction(cfg.data_dir, cfg.datasets, with_fair=cfg.with_fair, fair_alpha=cfg.fair_alpha,
                             seed=cfg.seed, progress=echo)
    checks = check_bounds(table)
    md = to_markdown(table) + "\n| required result | holds | measured |\n|---|---|---|\n" + "".join(
        f"| {c} | {'yes' if ok else 'NO'} | {m} |\n" for c, ok, m in checks)
    png = figure_to_png(figure1(table))
    with out:
        table.to_csv(out.path("reproduction.csv"), index=False)
        out.path("reproduction.md").write_text(md)
        out.path("relevance_vs_exposure.png").write_bytes(png)
        files = out.commit()
    result = ReproduceResult(table, checks, md, files)
    if cfg.tracking.enabled:
        import mlflow

        from fairltr.tracking.runs.life_cycle import job_run, log_metrics, log_params

        with job_run(cfg.tracking.experiment, cfg.tracking.run_name or "reproduce deltr", tags=cfg.tracking.tags) as run:
            log_params(run.info.run_id, {"datasets": ",".join(cfg.datasets), "with_fair": cfg.with_fair,
                                         "fair_alpha": cfg.fair_alpha, "seed": cfg.seed})
            log_metrics(run.info.run_id, {**reproduction_metrics(table),
                                          "required_results_held": float(sum(ok for _, ok, _ in checks)),
                                          "required_results": float(len(checks))})
            for path in files.values():
                mlflow.log_artifact(str(path))
            result.run_id = run.info.run_id
    return result
