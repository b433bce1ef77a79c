"""Lightning's banners and warnings that do not apply to fairltr's training loops, silenced in
one place (the DELTR engine and the bi-encoder recipe use it; ``--verbose`` turns it off)."""

from __future__ import annotations

import contextlib
import logging
import os
import warnings

__all__ = ["quiet_lightning", "quiet_weight_loading"]

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


@contextlib.contextmanager
def quiet_weight_loading(enabled: bool | None = None):
    """transformers' load report (``BertModel LOAD REPORT ... MISSING``: the pooler a sentence
    encoder checkpoint does not ship, which fairltr never uses) and its advisory warnings,
    silenced while a model loads, on the Python API paths as in the CLI. ``enabled=None``: on
    unless the fairltr command runs with ``--verbose``."""
    if enabled is None:
        enabled = not os.environ.get("FAIRLTR_VERBOSE")
    if not enabled:
        yield
        return
    from transformers.utils import logging as hf_logging

    level, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()  # "Loading weights: 100%|..." on every load
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()
