"""Ctrl-C during a Lightning fit stays a Ctrl-C.

Lightning's ``Trainer.fit`` catches ``KeyboardInterrupt``, tears down, sets SIGINT to be ignored
and calls ``sys.exit(1)``: the caller would see exit 1, a FAILED-looking end and a process that
no longer answers Ctrl-C. :func:`fit` turns that exit back into ``KeyboardInterrupt`` (the
fairltr command then ends its MLflow run KILLED and exits 130 with one line) and restores the
SIGINT handler that was installed before the fit.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

__all__ = ["fit"]


def fit(trainer: Any, *args: Any, **kwargs: Any) -> None:
    """``trainer.fit(*args, **kwargs)``; an interrupted fit raises ``KeyboardInterrupt``."""
    main = threading.current_thread() is threading.main_thread()
    handler = signal.getsignal(signal.SIGINT) if main else None
    try:
        trainer.fit(*args, **kwargs)
    except SystemExit as exc:
        if getattr(trainer, "interrupted", False):
            raise KeyboardInterrupt("training interrupted") from exc
        raise
    finally:
        if main and handler is not None and signal.getsignal(signal.SIGINT) is not handler:
            signal.signal(signal.SIGINT, handler)
