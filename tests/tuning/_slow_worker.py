"""Test helper run as a subprocess: ``python _slow_worker.py SECONDS sweep ARGS...`` runs the
``fairltr`` CLI with every DELTR trial slowed by SECONDS (so a test can kill it mid-trial, or
let two workers overlap). Optional environment variables (file paths):

* ``SWEEP_TEST_READY`` / ``SWEEP_TEST_GO``: touch the first when imported and wait for the
  second before starting, so several workers start together.
* ``SWEEP_TEST_HOLD``: this worker holds a trial for the test to kill: once it has trained
  ``SWEEP_TEST_HOLD_AFTER`` trials (default 0; a worker trains one trial at a time, so these
  have ended), the next trial it trains (its parameters already
  suggested and stored, no MLflow run created yet) writes its trial number into the file (whole,
  by rename) and then sleeps until the process is killed. The Optuna heartbeat keeps running
  meanwhile, so the trial stays RUNNING until the kill.
* ``SWEEP_TEST_WAIT``: this worker runs its first trial freely, then waits for the file to exist
  before training each later trial, so it cannot finish the study before another worker (the one
  given ``SWEEP_TEST_HOLD``) has started the trial it holds.
"""

import os
import sys
import time
from pathlib import Path

import mlflow  # noqa: F401  (imported before the start signal, so workers start together)
import optuna  # noqa: F401
import torch

import tuning.sweep
from fairltr.workflows import sweep as workflow_sweep

torch.set_num_threads(1)
DELAY = float(sys.argv[1])
HOLD = os.environ.get("SWEEP_TEST_HOLD")
HOLD_AFTER = int(os.environ.get("SWEEP_TEST_HOLD_AFTER", "0"))
WAIT = os.environ.get("SWEEP_TEST_WAIT")
_current = {"trial": None, "trained": 0}  # the trial this worker's objective runs; trials it trained
_original_call = workflow_sweep.RankingTrial.__call__
_original_make_objective = tuning.sweep.make_objective


def _hold(number: int) -> None:
    """Publish ``number`` in the HOLD file, then block until killed."""
    tmp = Path(f"{HOLD}.tmp")
    tmp.write_text(str(number))
    os.replace(tmp, HOLD)
    print(f"_slow_worker: holding trial {number} until killed", flush=True)
    while True:
        time.sleep(60)


def _slow(self, values):
    if HOLD and _current["trained"] >= HOLD_AFTER:
        _hold(_current["trial"])
    if WAIT and _current["trained"] >= 1:
        while not Path(WAIT).exists():
            time.sleep(0.05)
    _current["trained"] += 1
    time.sleep(DELAY)
    return _original_call(self, values)


def _make_objective(*args, **kwargs):
    """``tuning.sweep.make_objective`` whose objective records the trial number it runs."""
    inner = _original_make_objective(*args, **kwargs)

    def objective(trial):
        _current["trial"] = trial.number
        return inner(trial)

    objective.__dict__.update(inner.__dict__)  # scopes_interrupts
    return objective


workflow_sweep.RankingTrial.__call__ = _slow
tuning.sweep.make_objective = _make_objective

from fairltr.cli import main  # noqa: E402

# optional start barrier: announce readiness, then wait for the test's "go" file
if os.environ.get("SWEEP_TEST_READY"):
    Path(os.environ["SWEEP_TEST_READY"]).touch()
if os.environ.get("SWEEP_TEST_GO"):
    while not Path(os.environ["SWEEP_TEST_GO"]).exists():
        time.sleep(0.02)
main(sys.argv[2:])
