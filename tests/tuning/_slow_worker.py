"""Test helper run as a subprocess: ``python _slow_worker.py SECONDS sweep ARGS...`` runs the
``fairltr`` CLI with every DELTR trial slowed by SECONDS (so a test can kill it mid-trial, or
let two workers overlap)."""

import sys
import time

import torch

import tuning.objectives as objectives

torch.set_num_threads(1)
DELAY = float(sys.argv[1])
_original = objectives.DeltrRunner.__call__


def _slow(self, values):
    time.sleep(DELAY)
    return _original(self, values)


objectives.DeltrRunner.__call__ = _slow

from fairltr.cli import main  # noqa: E402

main(sys.argv[2:])
