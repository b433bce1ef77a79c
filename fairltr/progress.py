"""Progress of a long step, for a terminal and for a log file alike.

One source (:class:`Progress`, called with ``done`` after each chunk) draws a bar on a TTY and,
off a TTY (output sent to a file, CI logs), writes a line at least every ``every_s`` seconds or
every ``every_fraction`` of the work, whichever comes first, plus one at the end::

    encoding 7944 documents: 1024/7944 (13%), 85.2/s, 1m21s left
"""

from __future__ import annotations

import sys
import time
from typing import Callable

__all__ = ["Progress", "format_seconds"]


def format_seconds(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Progress:
    """``progress(done)`` after each chunk of ``total``; ``tty=None`` asks ``sys.stderr``.

    Off a TTY each line is ``label: done/total (pct%), rate/s, time left`` through ``echo``
    (default: stderr); on a TTY a tqdm bar on stderr shows the same figures."""

    def __init__(self, label: str, total: int, echo: Callable[[str], None] | None = None, *,
                 tty: bool | None = None, every_s: float = 10.0, every_fraction: float = 0.1,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label, self.total = label, max(int(total), 0)
        self.echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
        self.every_s, self.every_fraction, self.clock = every_s, every_fraction, clock
        self.start = self.last_time = clock()
        self.last_done = 0
        self.done = 0
        tty = sys.stderr.isatty() if tty is None else tty
        self._bar = None
        if tty:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=self.total, desc=label, file=sys.stderr, leave=False, dynamic_ncols=True)

    def line(self) -> str:
        elapsed = max(self.clock() - self.start, 1e-9)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        pct = 100.0 * self.done / self.total if self.total else 100.0
        eta = "done" if self.done >= self.total else (f"{format_seconds(left)} left" if left == left else "? left")
        speed = f"{rate:.1f}/s" if rate >= 1 or rate == 0 else f"{format_seconds(1 / rate)} each"  # slow steps: not 0.0/s
        return f"{self.label}: {self.done}/{self.total} ({pct:.0f}%), {speed}, {eta}"

    def __call__(self, done: int, total: int | None = None) -> None:
        if total is not None:
            self.total = int(total)
        step, self.done = done - self.done, int(done)
        if self._bar is not None:
            self._bar.update(step)
            if self.done >= self.total:
                self._bar.close()
            return
        now = self.clock()
        due = (now - self.last_time >= self.every_s
               or self.done - self.last_done >= self.every_fraction * self.total
               or self.done >= self.total)
        if due and self.done > self.last_done:
            self.echo(self.line())
            self.last_time, self.last_done = now, self.done

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
