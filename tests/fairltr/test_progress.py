"""Progress lines off a TTY: done/total, percentage, rate and time left; a slow step (under one
per second) shows its duration (``42s each``), never a rate of ``0.0/s``."""

from __future__ import annotations

from fairltr.progress import Progress


def _lines(seconds_per_item: float, n: int) -> list[str]:
    now = [0.0]
    out: list[str] = []
    progress = Progress("training 4 steps", n, out.append, tty=False, every_fraction=0.25, clock=lambda: now[0])
    for done in range(1, n + 1):
        now[0] += seconds_per_item
        progress(done)
    return out


def test_fast_items_show_a_rate_per_second():
    assert _lines(0.01, 4)[0] == "training 4 steps: 1/4 (25%), 100.0/s, 0s left"


def test_slow_steps_show_seconds_each_instead_of_zero_per_second():
    lines = _lines(42.0, 4)
    assert lines[0] == "training 4 steps: 1/4 (25%), 42s each, 2m06s left"
    assert lines[-1] == "training 4 steps: 4/4 (100%), 42s each, done"
    assert not any("0.0/s" in line for line in lines)
