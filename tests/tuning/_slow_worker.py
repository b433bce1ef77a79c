"""Test helper run as a subprocess: ``python _slow_worker.py SECONDS sweep ARGS...`` runs the
``fairltr`` CLI with every DELTR trial slowed by SECONDS (so a test can kill it mid-trial, or
let two workers overlap). ``SWEEP_TEST_READY`` / ``SWEEP_TEST_GO`` (file paths) make it touch
the first when imported and wait for the second before starting, so several workers start
together."""

import os
import sys
import time
from pathlib import Path

import mlflow  # noqa: F401  (imported before the start signal, so workers start together)
import optuna  # noqa: F401
import torch

import tuning.sweep  # noqa: F401
from fairltr.workflows import sweep as workflow_sweep

torch.set_num_threads(1)
DELAY = float(sys.argv[1])
_original = workflow_sweep.RankingTrial.__call__


def _slow(self, values):
    time.sleep(DELAY)
    return _original(self, values)


workflow_sweep.RankingTrial.__call__ = _slow

from fairltr.cli import main  # noqa: E402

# optional start barrier: announce readiness, then wait for the test's "go" file
if os.environ.get("SWEEP_TEST_READY"):
    Path(os.environ["SWEEP_TEST_READY"]).touch()
if os.environ.get("SWEEP_TEST_GO"):
    while not Path(os.environ["SWEEP_TEST_GO"]).exists():
        time.sleep(0.02)
main(sys.argv[2:])
