"""fairltr.interrupts: a Ctrl-C inside a deferred block is raised at its end (the outermost one),
at once after MAX_DEFER_SECONDS when the block takes longer, never when SIGINT is ignored; an
exception raised while a KeyboardInterrupt propagated counts as that interrupt. Real SIGINTs
sent to this process (pytest runs tests in the main thread)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from fairltr import interrupts
from fairltr.interrupts import MAX_DEFER_SECONDS, caused_by_interrupt, deferred, hold, release


def _ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.01)  # the handler runs at the next bytecode after the signal arrives


@pytest.fixture(autouse=True)
def _default_sigint():
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)
    assert interrupts._depth == 0


def test_a_ctrl_c_inside_the_block_is_raised_at_its_end():
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with deferred():
            _ctrl_c()
            steps.append("after the signal")  # not cut here
            steps.append("end of block")
        steps.append("after the block")  # never reached
    assert steps == ["after the signal", "end of block"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_nested_blocks_raise_at_the_outermost_end():
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with deferred():
            with deferred():
                _ctrl_c()
            steps.append("inner block ended")
        steps.append("never")
    assert steps == ["inner block ended"]


def test_a_block_without_ctrl_c_changes_nothing():
    with deferred():
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_ctrl_c_is_held_back_at_most_max_defer_seconds():
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        with deferred():
            _ctrl_c()
            while time.monotonic() - t0 < 10 * MAX_DEFER_SECONDS:  # a store that never answers
                time.sleep(0.01)
    assert time.monotonic() - t0 < MAX_DEFER_SECONDS + 0.5
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_section_released_by_an_event_delivers_the_interrupt_just_after():
    opened = hold()
    assert opened
    _ctrl_c()
    release(opened)  # a pool's checkin cannot raise: the interrupt follows from a timer
    with pytest.raises(KeyboardInterrupt):
        time.sleep(1.0)


def test_ignored_sigint_stays_ignored():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with deferred():
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        _ctrl_c()
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_an_error_raised_while_an_interrupt_propagated_is_the_interrupt():
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise OSError(39, "Directory not empty")  # a clean-up cut short
    except OSError as exc:
        cut = exc
    assert caused_by_interrupt(cut)
    assert caused_by_interrupt(KeyboardInterrupt())
    assert not caused_by_interrupt(ValueError("plain error"))
    assert not caused_by_interrupt(None)


def test_releasing_by_an_event_starts_no_thread(monkeypatch):
    """Starting a thread waits until it runs: on a busy host the 'moment later' interrupt then
    landed inside release() itself (the caller that cannot raise). The delivering thread is
    started when the Ctrl-C is recorded, inside the section; release() only sets an event."""
    import threading

    opened = hold()
    _ctrl_c()
    started = []
    real_start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda self: (started.append(self.name), real_start(self)))
    release(opened)
    assert started == []
    with pytest.raises(KeyboardInterrupt):
        time.sleep(1.0)
