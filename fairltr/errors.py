"""Exceptions for user mistakes: the CLI prints their message without a traceback."""

from __future__ import annotations

__all__ = ["FairltrError", "DataError", "ConfigError", "OptionError", "NotFittedError", "ClusterError", "FairltrWarning", "one_line"]


class FairltrError(Exception):
    """Base class for errors that are the user's to fix (bad file, bad parameter)."""


class DataError(FairltrError, ValueError):
    """Bad input data; the message names the file, column, row or query."""


class ConfigError(FairltrError, ValueError):
    """A parameter outside its domain; the message states the allowed range."""


class OptionError(ConfigError):
    """An option the command refuses before any work because it cannot be acted on (a gate,
    objective or constraint on a metric the job never computes): a usage error, so the
    ``fairltr`` command exits 2 as for click's own usage errors (1 is a verdict: FAIL, REJECTED)."""

    exit_code = 2


class ClusterError(FairltrError, RuntimeError):
    """A multi-node run lost a node: one never joined the rendezvous, or one went away during
    training; the message names the node."""


class NotFittedError(ConfigError, AttributeError):
    """A fitted attribute or method used before ``fit`` (or ``load``). Like scikit-learn's
    ``NotFittedError`` it is a ``ValueError`` (here through :class:`ConfigError`, what fairltr
    raised before) and an ``AttributeError``, so ``hasattr(model, "coef_")`` is False on an
    unfitted model."""


class FairltrWarning(UserWarning):
    """Something the user should know that does not stop the job (repeated rows dropped, a model
    whose scores all tie); the ``fairltr`` command prints it as one ``Warning: ...`` line."""


def one_line(exc: BaseException, limit: int = 200) -> str:
    """A third-party exception as one short sentence for a DataError: its first non-empty line
    (pandas and pyarrow put C-parser details and schema dumps on the following lines), with
    whitespace collapsed and at most ``limit`` characters."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    text = " ".join(lines[0].split()) if lines else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
