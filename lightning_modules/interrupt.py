"""Ctrl-C during a Lightning fit stays a Ctrl-C.

Lightning's ``Trainer.fit`` catches ``KeyboardInterrupt``, tears down, sets SIGINT to be ignored
and calls ``sys.exit(1)``: the caller would see exit 1, a FAILED-looking end and a process that
no longer answers Ctrl-C. :func:`fit` turns that exit back into ``KeyboardInterrupt`` (the
fairltr command then ends its MLflow run KILLED and exits 130 with one line) and restores the
SIGINT handler that was installed before the fit.

:func:`exit_when_stuck` covers what a KeyboardInterrupt cannot reach: the main thread blocked in
C++ (torch's DDP rendezvous and collectives wait for the other nodes for up to ``--ddp-timeout``,
600 s by default, and Python runs no signal handler meanwhile). A Ctrl-C that the main thread has
not turned into a KeyboardInterrupt within ``grace`` seconds ends the process: ``interrupted``
and exit 130.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["fit", "exit_when_stuck", "STUCK_GRACE_SECONDS"]

STUCK_GRACE_SECONDS = 1.0
"""How long a Ctrl-C may wait for the main thread before :func:`exit_when_stuck` ends the process."""


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


@contextmanager
def exit_when_stuck(grace: float = STUCK_GRACE_SECONDS) -> Iterator[None]:
    """Inside this block, a Ctrl-C that is not handled (the block has not ended) within ``grace``
    seconds writes ``interrupted`` and ends the process with exit 130 (``os._exit``: only for code
    that holds nothing a clean exit must close, such as a multi-node fit, whose MLflow run opens
    after training). Python's C signal handler writes every signal number to the wakeup file
    descriptor from whichever thread receives it, so a watcher thread sees the Ctrl-C while the
    main thread is blocked in C++. A no-op outside the main thread, or when SIGINT has no Python
    handler (ignored: then a Ctrl-C is meant to do nothing)."""
    if threading.current_thread() is not threading.main_thread() or not callable(signal.getsignal(signal.SIGINT)):
        yield
        return
    read, write = os.pipe()
    os.set_blocking(write, False)
    previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    done = threading.Event()
    watcher = threading.Thread(target=_watch, args=(read, done, grace), name="fairltr-stuck-interrupt", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        signal.set_wakeup_fd(previous)
        os.write(write, b"\0")  # wakes the watcher, which sees done
        watcher.join(timeout=grace + 1.0)
        os.close(write)
        if not watcher.is_alive():
            os.close(read)


def _watch(read: int, done: threading.Event, grace: float) -> None:
    while not done.is_set():
        try:
            data = os.read(read, 64)
        except OSError:
            return
        if done.is_set() or not data:
            return
        if signal.SIGINT in data and not done.wait(grace):
            os.write(2, b"interrupted\n")
            os._exit(130)
