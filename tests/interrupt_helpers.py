"""What every Ctrl-C test shares: the interrupted process gets SIGINT's default handling back.

A process started in the background by a non-interactive shell (``nohup``, ``cmd &`` in a script,
some CI runners) starts with SIGINT ignored, and its children inherit that; a Ctrl-C test run
from there would send a SIGINT that nobody sees and find the command finished (exit 0). So every
process a test interrupts is started with :func:`restore_sigint` as its ``preexec_fn`` (Python's
``restore_signals`` restores SIGPIPE and SIGXFSZ, not SIGINT), and a driver script that sends
itself the signal restores it first (:data:`RESTORE_SIGINT`).
"""

from __future__ import annotations

import signal

__all__ = ["restore_sigint", "RESTORE_SIGINT"]


def restore_sigint() -> None:
    """``preexec_fn`` of an interrupted process: SIGINT's default action (Python then installs its
    KeyboardInterrupt handler at start-up, as in an interactive shell)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


RESTORE_SIGINT = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
"""First line of a ``python -c`` driver that interrupts itself."""
