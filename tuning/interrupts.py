"""Ctrl-C in a sweep worker: :class:`InterruptGuard` (an interrupt raises at once inside
training, and waits for the next safe point inside Optuna's and MLflow's writes) and
:func:`interruptible`, the block of an objective where it raises at once."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["InterruptGuard", "interruptible"]


class InterruptGuard:
    """Ctrl-C (SIGINT) during a sweep, made reliable. While a trial's objective runs (training),
    the handler raises ``KeyboardInterrupt`` at once: Optuna catches it there and marks the trial
    FAIL. Anywhere else in the worker loop (Optuna's own bookkeeping, whose clean-up code breaks on
    an exception at the wrong line) the interrupt is only recorded, and :meth:`check` raises it at
    the next safe point, a fraction of a second later. Outside the main thread it does nothing."""

    def __init__(self) -> None:
        self.interrupted = False
        self._immediate = False
        self._previous: Any = None

    def __enter__(self) -> "InterruptGuard":
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            self._previous = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, self._handle)
            _ACTIVE_GUARDS.append(self)
        return self

    def __exit__(self, *exc) -> None:
        import signal

        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
        if self in _ACTIVE_GUARDS:
            _ACTIVE_GUARDS.remove(self)

    def _handle(self, signum, frame) -> None:
        self.interrupted = True
        if self._immediate:
            raise KeyboardInterrupt

    @contextmanager
    def immediate(self) -> Iterator[None]:
        """Inside this block an interrupt raises at once (and one that came before raises now)."""
        self.check()
        self._immediate = True
        try:
            yield
        finally:
            self._immediate = False

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` when an interrupt arrived."""
        if self.interrupted:
            raise KeyboardInterrupt


_ACTIVE_GUARDS: list[InterruptGuard] = []  # the guard of the worker running in the main thread


@contextmanager
def interruptible() -> Iterator[None]:
    """Inside a sweep worker, Ctrl-C raises at once in this block (training, evaluation); in the
    rest of an objective that uses it (Optuna and MLflow writes) the interrupt waits for the next
    safe point, a fraction of a second later, so no storage write is cut in half (a write cut
    in half can keep the database locked while the clean-up waits for it). Outside a worker it
    does nothing. An objective that uses it says so with ``objective.scopes_interrupts = True``;
    other objectives are interruptible as a whole."""
    if not _ACTIVE_GUARDS:
        yield
        return
    with _ACTIVE_GUARDS[-1].immediate():
        yield
