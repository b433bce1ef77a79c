"""Shared test fixtures: paths to ../shared/data, thread limits, the fairness-loss registry
(``loss_registry``), and the service fixtures (MLflow server, PostgreSQL) from
``tests/mlflow_fixtures.py``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
torch.set_num_threads(1)
# fairltr's small state folder (runs to end after a lost tracking server): never the user's ~/.local
os.environ.setdefault("FAIRLTR_STATE_DIR", str(Path(__import__("tempfile").mkdtemp(prefix="fairltr-test-state-"))))
# fairltr's cache (adjusted mtables, compiled kernels): a fresh folder, never the user's ~/.cache
os.environ.setdefault("FAIRLTR_CACHE_DIR", str(Path(__import__("tempfile").mkdtemp(prefix="fairltr-test-cache-"))))

REPO_ROOT = Path(__file__).resolve().parents[1]
# --import-mode=importlib leaves sys.path alone: make tests/ importable for the fixture modules
sys.path.insert(0, str(Path(__file__).resolve().parent))
SHARED_DATA = Path(os.environ.get("FAIRLTR_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
DELTR_DATA = SHARED_DATA / "deltr-experiments"
DDTP_DATA = SHARED_DATA / "ddtp-mlir"


@pytest.fixture(scope="session")
def deltr_data() -> Path:
    """The DELTR paper's splits (../shared/data/deltr-experiments); skips where absent."""
    if not DELTR_DATA.is_dir():
        pytest.skip(f"DELTR paper data not found at {DELTR_DATA} (set FAIRLTR_SHARED_DATA)")
    return DELTR_DATA


@pytest.fixture(scope="session")
def ddtp_data() -> Path:
    """The ddtp-mlir parallel-query retrieval set; skips where absent."""
    if not DDTP_DATA.is_dir():
        pytest.skip(f"ddtp-mlir data not found at {DDTP_DATA} (set FAIRLTR_SHARED_DATA)")
    return DDTP_DATA


@pytest.fixture
def loss_registry():
    """The fairness-loss registry module, restored after the test (everything the test
    registered, removed or loaded from entry points is undone): see
    :func:`fairltr.losses.plugins.registry_snapshot`."""
    from fairltr.losses import plugins as registry

    with registry.registry_snapshot():
        yield registry


from mlflow_fixtures import *  # noqa: E402,F401,F403  (service fixtures: mlflow_server, postgres_uri, ...)
from netns import netns_cluster  # noqa: E402,F401  (slow tests: hosts in network namespaces)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> str:
    """A tiny random BERT with its tokenizer, saved with save_pretrained (tests/tiny_models.py)."""
    from tiny_models import build_tiny_bert

    return str(build_tiny_bert(tmp_path_factory.mktemp("tiny-bert")))


@pytest.fixture(scope="session")
def parallel_dir(tmp_path_factory) -> Path:
    """A tiny parallel-query folder in the ddtp-mlir layout (tests/tiny_models.py)."""
    from tiny_models import write_parallel_layout

    return write_parallel_layout(tmp_path_factory.mktemp("parallel") / "data")
