"""Ctrl-C where a KeyboardInterrupt at an arbitrary line would leave something half-made.

A Ctrl-C is a ``KeyboardInterrupt`` raised at whatever line the main thread runs. Inside a store
write that is the wrong line: a run created but not yet in the block that ends it (left
RUNNING), a database transaction whose clean-up is cut (a traceback, a lock), a download whose
threads still write into the folder being removed. So:

* :func:`deferred` is a block a Ctrl-C does not cut: the interrupt is held back and raised when the
  block ends (blocks nest; the outermost one raises). The wait is bounded: an interrupt held back
  for :data:`MAX_DEFER_SECONDS` is raised where the main thread is, so Ctrl-C always ends the
  command within a couple of seconds, even against a store that no longer answers.
* :func:`hold` / :func:`release` are the same as calls, for code that opens and closes a section
  in two places (the database pool's checkout and checkin, :mod:`fairltr.tracking.runs.store_interrupts`);
  a section released with an interrupt pending raises it a moment later from outside the code
  that released it.
* :func:`caused_by_interrupt`: an exception raised while a KeyboardInterrupt was propagating (a
  clean-up that failed because its work was cut short) is that interrupt, not a new error.

Only the main thread is ever interrupted, and only it holds interrupts back; elsewhere these
are no-ops. When SIGINT is ignored or has no Python handler, nothing is changed.
"""

from __future__ import annotations

import _thread
import signal
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

__all__ = ["deferred", "hold", "release", "caused_by_interrupt", "interrupt_pending", "MAX_DEFER_SECONDS"]

MAX_DEFER_SECONDS = 1.0
"""The longest a Ctrl-C is held back (seconds) before it is raised wherever the main thread is."""

_depth = 0  # open sections in the main thread
_pending = False  # a Ctrl-C arrived inside a section
_forced = False  # held back too long: raise at once
_previous: Any = None  # SIGINT's handler before the outermost section
_episode = 0  # counts held-back interrupts: a delivering thread acts only on the one it was started for
_released: threading.Event | None = None  # set when the section of the current episode is released
_deliver_later = 0  # the episode whose release asked the delivering thread to interrupt the main thread

DELIVERY_DELAY_SECONDS = 0.01
"""How long after a section released by an event (not raising) the held-back interrupt arrives."""


def _main() -> bool:
    return threading.current_thread() is threading.main_thread()


def _handler(signum: int, frame: Any) -> None:
    """SIGINT while a section is open: remember it, and start the one thread that delivers it
    (after the section is released, or after MAX_DEFER_SECONDS, whichever comes first)."""
    global _pending, _forced, _episode, _released
    if _forced or _depth == 0:
        _forced = False
        _pending = False
        _call_previous(signum, frame)
        return
    if not _pending:
        _pending = True
        _episode += 1
        _released = threading.Event()
        # Started here, inside the section, where a second Ctrl-C is only recorded: starting a
        # thread waits for it to run, and on a busy host that wait is long enough for a delivery
        # to land inside the caller that released the section (a database pool's checkin).
        thread = threading.Thread(target=_deliver, args=(_episode, _released), daemon=True,
                                  name="fairltr-deferred-interrupt")
        thread.start()


def _call_previous(signum: int, frame: Any) -> None:
    previous = _previous if callable(_previous) else signal.default_int_handler
    previous(signum, frame)


def _deliver(episode: int, released: threading.Event) -> None:
    """The delivering thread of one held-back interrupt: when the section is released by an event
    (``release(raise_now=False)``), interrupt the main thread :data:`DELIVERY_DELAY_SECONDS` later,
    outside the code that released it; when it is still held after MAX_DEFER_SECONDS, force it."""
    global _forced
    if released.wait(MAX_DEFER_SECONDS):
        if _deliver_later == episode:
            time.sleep(DELIVERY_DELAY_SECONDS)
            _thread.interrupt_main()
        return
    if _pending and _depth > 0 and episode == _episode:
        _forced = True
        _thread.interrupt_main()


def interrupt_pending() -> bool:
    """Whether a Ctrl-C is being held back."""
    return _pending


def hold() -> bool:
    """Open a section (main thread only); returns whether one was opened (pass it to :func:`release`)."""
    global _depth, _previous
    if not _main():
        return False
    if _depth == 0:
        current = signal.getsignal(signal.SIGINT)
        if current is _handler:  # left behind by code that saved it in a section and restored it later
            current = signal.default_int_handler
        if not callable(current):  # ignored, the default action, or not Python's: leave it
            return False
        _previous = current
        signal.signal(signal.SIGINT, _handler)
    _depth += 1
    return True


def release(opened: bool, *, raise_now: bool = False) -> None:
    """Close a section opened by :func:`hold`. When it was the outermost one and a Ctrl-C came
    inside, the interrupt is delivered: raised here (``raise_now``) or a moment later from the
    delivering thread (for callers that cannot raise, such as a database pool's event)."""
    global _depth, _previous, _pending, _forced, _deliver_later
    if not opened:
        return
    _depth -= 1
    if _depth > 0:
        return
    signal.signal(signal.SIGINT, _previous)
    _previous = None
    came, _pending, _forced = _pending, False, False
    if not came:
        return
    _deliver_later = 0 if raise_now else _episode
    if _released is not None:
        _released.set()  # never waits: the delivering thread already runs
    if raise_now:
        signal.getsignal(signal.SIGINT)(signal.SIGINT, None)  # the handler there (Python's: raise)


@contextmanager
def deferred() -> Iterator[None]:
    """A block that a Ctrl-C does not cut (module docstring); the interrupt is raised at its end."""
    opened = hold()
    try:
        yield
    except BaseException:
        release(opened)  # already leaving by an exception: a held-back Ctrl-C follows at once
        raise
    release(opened, raise_now=True)


def caused_by_interrupt(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a KeyboardInterrupt or was raised while one propagated (its
    ``__context__`` / ``__cause__`` chain holds one)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False
