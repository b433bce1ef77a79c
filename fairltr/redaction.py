"""Credentials kept out of what fairltr prints: ``scheme://user:password@`` redacted to
``scheme://user:***@`` in URIs, in text and (by a logging filter) in MLflow's, urllib3's and
alembic's log records."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

__all__ = ["redact_uri", "redact_text", "install_redaction"]

_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:/@\s]+):(?P<pw>[^@/\s]+)@")


def redact_uri(uri: str) -> str:
    """``uri`` with its password replaced by ``***`` (``http://alice:***@host``); other URIs unchanged."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return redact_text(uri)
    if parts.password is None:
        return uri
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, f"{parts.username}:***@{host}", parts.path, parts.query, parts.fragment))


def redact_text(text: str) -> str:
    """Every ``scheme://user:password@`` in ``text`` with the password replaced by ``***``."""
    return _CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)


class _RedactFilter:
    """A logging filter that redacts ``scheme://user:password@`` in a record's message."""

    def filter(self, record) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True
        cleaned = redact_text(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


_REDACT_FILTER = _RedactFilter()


def install_redaction(names: tuple[str, ...] = ("mlflow", "urllib3", "alembic", "")) -> None:
    """Add the redacting filter to the named loggers and to their handlers (idempotent)."""
    import logging

    for name in names:
        logger = logging.getLogger(name)
        targets = [logger, *logger.handlers]
        for target in targets:
            if _REDACT_FILTER not in getattr(target, "filters", []):
                target.addFilter(_REDACT_FILTER)
