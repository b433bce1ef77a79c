"""Options shared by the workflows: where the ranking data comes from and how runs are tracked."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from fairltr.columns import DEFAULT_COLUMNS, RankingColumns
from fairltr.errors import ConfigError

__all__ = ["RankingSource", "TrackingOptions", "read_source"]

FORMATS = ("auto", "deltr", "letor", "csv", "parquet")


@dataclass(frozen=True)
class RankingSource:
    """A ranking file and how to read it: ``fmt`` in auto, deltr, letor, csv, parquet; the
    column contract. A header-less DELTR CSV (query_id, protected, x1..xk, judgment) is renamed
    to the contract's names."""

    path: Path
    fmt: str = "auto"
    columns: RankingColumns = DEFAULT_COLUMNS
    na_values: tuple[str, ...] | None = None  # CSV cells read as missing (None: pandas' defaults)
    duplicates: str = "refuse"  # rows repeating another in every column, no item column: refuse, keep, once

    def __post_init__(self) -> None:
        from fairltr.data import DUPLICATE_POLICIES

        object.__setattr__(self, "path", Path(self.path))
        if self.fmt not in FORMATS:
            raise ConfigError(f"format must be one of {FORMATS}, got {self.fmt!r}")
        if self.duplicates not in DUPLICATE_POLICIES:
            raise ConfigError(f"--duplicate-rows must be one of {DUPLICATE_POLICIES}, got {self.duplicates!r}")
        if self.na_values is not None:
            object.__setattr__(self, "na_values", tuple(str(v) for v in self.na_values))

    def read(self) -> pd.DataFrame:
        return read_source(self)


def read_source(source: RankingSource) -> pd.DataFrame:
    """Read and validate ``source`` (errors name the file, line, column and query; repeated rows
    under ``source.duplicates``: :func:`fairltr.data.check_duplicate_rows`)."""
    from fairltr.data import check_duplicate_rows
    from fairltr.io import LAYOUT_COLUMNS, read_ranking

    c = source.columns
    df = read_ranking(source.path, source.fmt, columns=c, na_values=source.na_values)
    fixed = LAYOUT_COLUMNS
    if fixed.query in df.columns and c.query not in df.columns:  # header-less DELTR CSV / LETOR names
        rename = {fixed.query: c.query, fixed.group: c.group, fixed.judgment: c.judgment}
        attrs = dict(df.attrs)
        df = df.rename(columns={k: v for k, v in rename.items() if k in df.columns and v is not None})
        df.attrs.update(attrs)
    return check_duplicate_rows(df, c, source.duplicates, source=str(source.path))


@dataclass(frozen=True)
class TrackingOptions:
    """MLflow settings of a job: ``enabled`` (False = ``--no-track``), the experiment, a run
    name, the registered model name to register the model under (None = do not), and the
    serving settings recorded with a logged ranker: the policy (``serve_rerank``, e.g.
    ``fair:p=0.3,alpha=0.1``; :func:`fairltr.fair.policy.parse_policy`; None = the model's own
    ranking), the request params allowed to change it (``serve_overrides``: ``none``, ``all`` or
    ``p,k``...; None = the default, none once a policy is recorded) and the ``decision_log``
    (a folder or ``postgresql://`` URI; None = no log); ``serve_sample``: a PLRank pyfunc serves
    Plackett-Luce draws seeded per request id."""

    enabled: bool = True
    experiment: str = "fairltr"
    run_name: str | None = None
    register: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    serve_rerank: str | None = None
    serve_overrides: str | None = None
    decision_log: str | None = None
    serve_sample: bool = False

    def __post_init__(self) -> None:
        from fairltr.fair.policy import NO_POLICY, overrides_text, parse_overrides, parse_policy

        policy = NO_POLICY
        if self.serve_rerank is not None:
            policy = parse_policy(self.serve_rerank)  # a bad spec is a ConfigError before any work
            object.__setattr__(self, "serve_rerank", policy.describe() if policy.active else None)
            if policy.active and not self.enabled:
                raise ConfigError("--serve-rerank is recorded with the logged model: drop --no-track")
        if self.serve_overrides is not None:
            object.__setattr__(self, "serve_overrides", overrides_text(parse_overrides(self.serve_overrides, policy)))
            if not self.enabled:
                raise ConfigError("--serve-overrides is recorded with the logged model: drop --no-track")
        if self.serve_sample and not self.enabled:
            raise ConfigError("--serve-sample is recorded with the logged model: drop --no-track")
        if self.serve_sample and policy.active:
            raise ConfigError("--serve-sample and --serve-rerank exclude each other: a sampled ranking is served as drawn")
        if self.decision_log is not None:
            from fairltr.tracking.models.decision_log import check_recordable_uri

            object.__setattr__(self, "decision_log", check_recordable_uri(self.decision_log))
            if self.decision_log is not None and not self.enabled:
                raise ConfigError("--decision-log is recorded with the logged model: drop --no-track")
        if self.register is not None and not self.register.strip():
            object.__setattr__(self, "register", None)
        if self.register and not self.enabled:
            raise ConfigError("registering a model needs tracking: drop --no-track (or --register)")
