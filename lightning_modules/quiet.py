"""Lightning's banners and warnings that do not apply to fairltr's training loops, silenced in
one place (the DELTR engine and the bi-encoder recipe use it; ``--verbose`` turns it off)."""

from __future__ import annotations

import contextlib
import logging
import os
import warnings

__all__ = ["quiet_lightning"]

_QUIET_ENV = "FAIRLTR_QUIET_LIGHTNING"
_LOGGERS = ("lightning.pytorch", "lightning.fabric", "pytorch_lightning")
_NOISE = (".*validation_step.*val_dataloader.*", ".*IterableDataset.*__len__.*", ".*LeafSpec.*",
          ".*does not have many workers.*", ".*smaller than the logging interval.*")


def _silence() -> None:
    for name in _LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    for msg in _NOISE:
        warnings.filterwarnings("ignore", message=msg)


@contextlib.contextmanager
def quiet_lightning(enabled: bool | None = None):
    """Silence Lightning's banners (GPU/TPU available, tips, DDP set-up, "stopped" notes) and its
    warnings that do not apply here (no validation loader, an IterableDataset with a length).
    Spawned DDP workers inherit the request through an environment variable. ``enabled=None``:
    on unless the fairltr command runs with ``--verbose``."""
    if enabled is None:
        enabled = not os.environ.get("FAIRLTR_VERBOSE")
    if not enabled:
        yield
        return
    levels = [logging.getLogger(n).level for n in _LOGGERS]
    before = os.environ.get(_QUIET_ENV)
    with warnings.catch_warnings():
        try:
            _silence()
            os.environ[_QUIET_ENV] = "1"
            yield
        finally:
            for name, level in zip(_LOGGERS, levels):
                logging.getLogger(name).setLevel(level)
            if before is None:
                os.environ.pop(_QUIET_ENV, None)
            else:
                os.environ[_QUIET_ENV] = before


if os.environ.get(_QUIET_ENV) == "1":  # imported while unpickling a DDP worker of a quiet call
    _silence()
