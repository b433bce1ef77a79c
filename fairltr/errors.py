"""Exceptions for user mistakes: the CLI prints their message without a traceback."""

from __future__ import annotations

__all__ = ["FairltrError", "DataError", "ConfigError"]


class FairltrError(Exception):
    """Base class for errors that are the user's to fix (bad file, bad parameter)."""


class DataError(FairltrError, ValueError):
    """Bad input data; the message names the file, column, row or query."""


class ConfigError(FairltrError, ValueError):
    """A parameter outside its domain; the message states the allowed range."""
