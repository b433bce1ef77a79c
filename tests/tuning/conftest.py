"""Fixtures of the tuning tests: small ranking files and ONE MLflow SQLite store per session
(creating an MLflow database costs several seconds)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from fairltr.synthetic import make_biased_rankings


def write_deltr_csv(df: pd.DataFrame, path: Path) -> Path:
    """The DELTR paper's header-less layout: query_id, protected, features..., judgment."""
    cols = ["query_id", "protected", *[c for c in df.columns if c.startswith("x")], "judgment"]
    df[cols].to_csv(path, header=False, index=False)
    return path


@pytest.fixture(scope="session")
def small_rankings() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, test): 16 queries x 12 candidates, 30% protected, biased training judgments."""
    return make_biased_rankings(16, 12, 0.3, bias=1.5, seed=7)


@pytest.fixture(scope="session")
def ranking_files(small_rankings, tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("rankings")
    train, test = small_rankings
    return write_deltr_csv(train, d / "train.csv"), write_deltr_csv(test, d / "test.csv")


@pytest.fixture(scope="session")
def mlflow_sqlite(tmp_path_factory) -> str:
    """A tracking URI shared by the session's tuning tests (tables created once). The store is
    opened from its own folder: MLflow resolves a SQLite store's default artifact root
    (``./mlruns``) once, when the process first opens it, so the session's artifacts land beside
    the database, never in the checkout the tests run from."""
    import os

    from mlflow import MlflowClient

    folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    here = os.getcwd()
    os.chdir(folder)
    try:
        MlflowClient(tracking_uri=uri).search_experiments()  # creates the tables now
    finally:
        os.chdir(here)
    return uri
