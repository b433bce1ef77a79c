"""Fixtures: the tiny random BERT and the tiny parallel-query data set of ``tests/tiny_models.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_models import build_tiny_bert, write_parallel_layout


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> str:
    return str(build_tiny_bert(tmp_path_factory.mktemp("tiny-bert")))


@pytest.fixture(scope="session")
def parallel_dir(tmp_path_factory) -> Path:
    return write_parallel_layout(tmp_path_factory.mktemp("parallel") / "data")
