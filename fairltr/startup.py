"""Ctrl-C while the ``fairltr`` console script starts: one line and exit 130, no traceback.

The console script imports :mod:`fairltr.cli` (click and the command modules) before its
``main`` can catch anything; :func:`guard_startup` (called by ``fairltr/__init__`` only when the
process is that script) makes SIGINT print ``interrupted`` and leave at once (nothing is open
yet), and :func:`end_startup` (``fairltr.cli.main``) restores Python's KeyboardInterrupt, which
the commands handle (runs KILLED, exit 130). A library import never changes signal handling.

Before ``fairltr/__init__`` runs, the interpreter is still starting: a SIGINT then either ends
the process by the signal (no output; the shell shows 130) or, inside a ``.pth`` file of
``site`` (the editable install's finder), is reported by ``site`` and ignored — Python's own
behaviour, outside fairltr's reach.

Once the command has run, :func:`finish_command` makes its exit quick and final: a command that
completed exits with its own status even when Ctrl-C comes during the interpreter's shut-down
(which would otherwise end it by the signal, or after a second of garbage collection).

:func:`end_startup` also keeps torch's C++ log lines (``[E socket.cpp] ... frame #0 ...``, which a
DDP node prints when it waits for or loses a peer) off the terminal: fairltr reports those
failures in one line itself; ``--verbose`` (or a ``TORCH_CPP_LOG_LEVEL`` of the user's) shows them.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

__all__ = ["guard_startup", "end_startup", "is_console_script", "redeliver_lost_interrupts", "in_command",
           "finish_command", "defer_interrupts_in_native_imports", "deferred_interrupts", "TORCH_LOG_LEVEL",
           "NATIVE_IMPORTS"]

_guarded = False
_command = False  # fairltr.cli.main is running in this process

TORCH_LOG_LEVEL = "FATAL"
"""``TORCH_CPP_LOG_LEVEL`` of a fairltr command (without ``--verbose``): no C++ warning or error lines."""


def in_command() -> bool:
    """True once :func:`end_startup` ran: this process is the fairltr command (not a library caller)."""
    return _command


def is_console_script() -> bool:
    """True in the ``fairltr`` console script's process (``sys.argv[0]`` is it)."""
    argv0 = sys.argv[0] if sys.argv else ""
    return os.path.basename(argv0).removesuffix(".exe") == "fairltr" and not argv0.endswith(".py")


def _leave(signum: int, frame: object) -> None:
    os.write(2, b"interrupted\n")
    os._exit(130)


def guard_startup() -> None:
    """SIGINT = ``interrupted`` + exit 130 until :func:`end_startup` (main thread only)."""
    global _guarded
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is \
            signal.default_int_handler:
        signal.signal(signal.SIGINT, _leave)
        _guarded = True
    marker = os.environ.get("FAIRLTR_STARTUP_MARKER")  # tests: the moment the guard is on
    if marker:
        open(marker, "a").close()


def end_startup(argv: list[str] | None = None) -> None:
    """Back to Python's KeyboardInterrupt on SIGINT (if :func:`guard_startup` changed it), and
    from now on a KeyboardInterrupt that Python swallows is delivered again
    (:func:`redeliver_lost_interrupts`); torch's C++ log lines off unless ``--verbose`` is in
    ``argv`` (default ``sys.argv``) or torch is already loaded (module docstring)."""
    global _guarded, _command
    _command = True
    args = sys.argv[1:] if argv is None else argv
    if "--verbose" not in args and "torch" not in sys.modules:
        os.environ.setdefault("TORCH_CPP_LOG_LEVEL", TORCH_LOG_LEVEL)
    if _guarded:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _guarded = False
    redeliver_lost_interrupts()
    defer_interrupts_in_native_imports()


NATIVE_IMPORTS = frozenset({"torch"})
"""Top-level packages whose import runs C++ that calls back into Python (torch's pybind11
extension imports Python modules while it initialises): a KeyboardInterrupt raised in such a
callback is thrown through C++ frames that cannot pass it on, and the process aborts
(``terminate called after throwing an instance of 'pybind11::error_already_set'``, exit -6).
Their first import defers SIGINT (:func:`deferred_interrupts`)."""


class _deferred:
    """SIGINT recorded, not raised, for the duration (main thread, Python's handler in place);
    raised as KeyboardInterrupt when the block ends. Re-entrant."""

    depth = 0
    pending = False

    def __enter__(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            self.active = False
            return
        self.active = True
        if _deferred.depth == 0:
            self.previous = signal.getsignal(signal.SIGINT)
            if self.previous is signal.default_int_handler:
                signal.signal(signal.SIGINT, _record)
        _deferred.depth += 1

    def __exit__(self, *exc: object) -> None:
        if not self.active:
            return
        _deferred.depth -= 1
        if _deferred.depth == 0:
            if signal.getsignal(signal.SIGINT) is _record:
                signal.signal(signal.SIGINT, self.previous)
            if _deferred.pending:
                _deferred.pending = False
                if exc[0] is None:
                    raise KeyboardInterrupt


def _record(signum: int, frame: object) -> None:
    _deferred.pending = True


def deferred_interrupts() -> _deferred:
    """A context manager: a Ctrl-C inside it is raised as KeyboardInterrupt when it ends (at once
    after the native code returns), never inside it."""
    return _deferred()


class _DeferringLoader:
    """Wraps a module's loader: its ``exec_module`` runs under :func:`deferred_interrupts`."""

    def __init__(self, loader) -> None:
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        with deferred_interrupts():
            self._loader.exec_module(module)

    def __getattr__(self, name: str):
        return getattr(self._loader, name)


class _NativeImportFinder:
    """A ``sys.meta_path`` finder for :data:`NATIVE_IMPORTS`: the spec the other finders give,
    with its loader wrapped in :class:`_DeferringLoader`."""

    @classmethod
    def find_spec(cls, name: str, path=None, target=None):
        if name not in NATIVE_IMPORTS:
            return None
        for finder in sys.meta_path:
            if finder is cls or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _DeferringLoader(spec.loader)
                return spec
        return None


def defer_interrupts_in_native_imports() -> None:
    """From now on the first import of a package in :data:`NATIVE_IMPORTS` defers Ctrl-C to its
    end (the command then stops as for any Ctrl-C: exit 130, one line). Idempotent; only the
    fairltr command calls it (:func:`end_startup`)."""
    if _NativeImportFinder not in sys.meta_path:
        sys.meta_path.insert(0, _NativeImportFinder)


_previous_hook = None
REDELIVER_SECONDS = 0.05


def _redeliver(unraisable) -> None:
    if isinstance(unraisable.exc_value, KeyboardInterrupt) or (
            isinstance(unraisable.exc_type, type) and issubclass(unraisable.exc_type, KeyboardInterrupt)):
        import _thread

        timer = threading.Timer(REDELIVER_SECONDS, _thread.interrupt_main)  # from outside the callback
        timer.daemon = True
        timer.start()
        return
    (_previous_hook or sys.__unraisablehook__)(unraisable)


def redeliver_lost_interrupts() -> None:
    """Ctrl-C must never be lost. When SIGINT's KeyboardInterrupt is raised inside code whose
    exceptions Python only reports ("Exception ignored in: <function WeakKeyDictionary...>": a
    weakref callback, a ``__del__``, an import lock's clean-up), the interrupt would vanish and the
    command run on. This ``sys.unraisablehook`` sees it and interrupts the main thread again
    :data:`REDELIVER_SECONDS` later, from a timer thread, at an ordinary point of the program
    (``_thread.interrupt_main``: the same path as a real SIGINT, so the sweep's interrupt guard
    and every run clean-up see it). Other unraisable exceptions go to the previous hook. Idempotent."""
    global _previous_hook
    if sys.unraisablehook is not _redeliver:
        _previous_hook = sys.unraisablehook
        sys.unraisablehook = _redeliver


def _ignore_from_now() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def finish_command(code: int | None) -> None:
    """The command completed with exit status ``code``: from here a Ctrl-C ends the process with
    that status at once (its output is flushed first), and once the interpreter's shut-down begins
    (the last atexit callback registered runs first) a Ctrl-C is ignored, as the shut-down would
    otherwise die by the signal. Objects alive now are frozen out of the final garbage collections
    (``gc.freeze``: the exit takes a fifth of a second instead of two). Main thread only."""
    import atexit
    import gc

    if threading.current_thread() is not threading.main_thread():
        return
    status = 0 if code is None else code if isinstance(code, int) else 1

    def leave(signum: int, frame: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(status)

    if callable(signal.getsignal(signal.SIGINT)):
        signal.signal(signal.SIGINT, leave)
        atexit.register(_ignore_from_now)
    gc.freeze()
