"""Console script ``fairltr``. Each command family lives in its own module and registers on
:data:`fairltr.cli.app.cli`; a command parses its options, calls one workflow
(:mod:`fairltr.workflows`) and prints. Heavy libraries are imported inside the workflows only."""

from __future__ import annotations

from fairltr.cli import (  # noqa: F401
    audit_commands, deltr_commands, dpr_commands, fair_commands, gbdt_commands, monitor_commands, plrank_commands, sweep_commands,
    tracking_commands,
)
from fairltr.cli import model_registry_commands  # noqa: F401,E402  (verify-alias, webhook-receiver)
from fairltr.cli.app import cli, run


EXIT_GRACE_SECONDS = 3.0


def _exit_watchdog(code: int, seconds: float = EXIT_GRACE_SECONDS) -> None:
    """After Ctrl-C, the interpreter waits for non-daemon threads at exit (a library's heartbeat
    or upload thread may never end): leave with ``code`` after ``seconds`` whatever they do. Runs
    and trials are already closed by then."""
    import os
    import threading

    timer = threading.Timer(seconds, os._exit, (code,))
    timer.daemon = True
    timer.start()


def _leave_quickly(code: int) -> None:
    """Ctrl-C: runs and trials are closed; leave without the interpreter's final garbage
    collection over every torch / MLflow / SQLAlchemy object (over a second, longer on a busy
    machine; frozen objects are skipped) and at most ``EXIT_GRACE_SECONDS`` after that."""
    import gc

    gc.freeze()
    _exit_watchdog(code)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``fairltr`` console script (exit 130 on Ctrl-C, never hangs)."""
    from fairltr.startup import finish_command

    try:
        from fairltr.startup import end_startup

        end_startup(argv)  # from here a Ctrl-C is a KeyboardInterrupt the commands handle
        run(argv)
    except SystemExit as exc:
        if exc.code == 130:
            _leave_quickly(130)
        else:  # the command is done: its status stands, even against a Ctrl-C during the exit
            finish_command(exc.code)
        raise
    except KeyboardInterrupt:  # a second Ctrl-C while cleaning up
        _leave_quickly(130)
        raise SystemExit(130) from None


__all__ = ["cli", "main"]
