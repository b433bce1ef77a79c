"""Alias integrity jobs: ``fairltr verify-alias`` (does an alias point at a version a promotion
accepted, with the files it accepted?) and ``fairltr webhook-receiver`` (the same check on every
alias event MLflow's webhooks deliver). The checks are
:mod:`fairltr.tracking.model_registry.alias_check`; the receiver is
:mod:`fairltr.tracking.model_registry.webhook_receiver`."""

from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairltr.errors import ConfigError

__all__ = ["VerifyAliasConfig", "verify_alias", "ReceiverConfig", "start_receiver", "read_secret", "check_loopback"]


def _client(tracking_uri: str | None) -> Any:
    """An ``MlflowClient`` of ``tracking_uri`` (default: MLFLOW_TRACKING_URI / ./mlflow.db), after
    checking that it answers."""
    import mlflow

    from fairltr.tracking.runs.config import check_tracking_uri, configure

    if tracking_uri:
        os.environ["MLFLOW_TRACKING_URI"] = tracking_uri
        mlflow.set_tracking_uri(tracking_uri)
    check_tracking_uri()
    uri = configure()
    return mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)


@dataclass(frozen=True)
class VerifyAliasConfig:
    """``fairltr verify-alias``: ``alias`` of ``model`` (every alias with ``all_aliases``)."""

    model: str
    alias: str = "champion"
    all_aliases: bool = False
    tracking_uri: str | None = None
    allow_unverified: bool = False
    wait_s: float = 0.0  # wait this long for a promotion in flight (its lock) before reporting


def verify_alias(cfg: VerifyAliasConfig) -> list[Any]:
    """The :class:`~fairltr.tracking.model_registry.alias_check.AliasCheck` of each alias checked."""
    from fairltr.tracking.model_registry.alias_check import check_alias, check_all_aliases, check_version, settled_check

    client = _client(cfg.tracking_uri)
    if cfg.all_aliases:
        checks = check_all_aliases(client, cfg.model, allow_unverified=cfg.allow_unverified)
    else:
        checks = [check_alias(client, cfg.model, cfg.alias, allow_unverified=cfg.allow_unverified)]
    if cfg.wait_s > 0:
        checks = [c if c.ok or c.version is None else settled_check(
            lambda c=c: check_version(client, c.model, c.version, c.alias, allow_unverified=cfg.allow_unverified),
            client, cfg.model, wait_s=cfg.wait_s) for c in checks]
    return checks


# ------------------------------------------------------------------------- the receiver
def read_secret(secret_env: str | None, secret_file: str | None) -> str:
    """The webhook secret from the environment variable ``secret_env`` or the file ``secret_file``
    (exactly one; surrounding whitespace dropped; at least 16 characters)."""
    if bool(secret_env) == bool(secret_file):
        raise ConfigError("give exactly one of --secret-env VAR and --secret-file FILE")
    if secret_env:
        secret = os.environ.get(secret_env)
        if secret is None:
            raise ConfigError(f"--secret-env {secret_env}: the environment variable is not set")
    else:
        path = Path(secret_file)
        if not path.is_file():
            raise ConfigError(f"--secret-file {secret_file}: no such file")
        secret = path.read_text(encoding="utf-8")
    secret = secret.strip()
    if len(secret) < 16:
        raise ConfigError("the webhook secret must be at least 16 characters (e.g. python -c "
                          "'import secrets; print(secrets.token_urlsafe(32))')")
    return secret


def check_loopback(host: str, allow_non_loopback: bool) -> None:
    """Refuse to bind ``host`` unless every address it resolves to is loopback (or the caller
    allowed other hosts explicitly)."""
    if allow_non_loopback:
        return
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host}: cannot be resolved ({exc})") from None
    if not addresses or not all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses):
        raise ConfigError(f"--host {host} is not a loopback address: the receiver listens on loopback only "
                          "unless --allow-non-loopback is given (put TLS in front of it then)")


@dataclass(frozen=True)
class ReceiverConfig:
    """``fairltr webhook-receiver``: where to listen, the secret, what to do on a FAIL, and
    whether to register the MLflow webhook (``register``; at ``url``, default this address)."""

    secret: str
    host: str = "127.0.0.1"
    port: int = 8765
    tracking_uri: str | None = None
    revert: bool = False
    allow_unverified: bool = False
    allow_non_loopback: bool = False
    register: bool = False
    url: str | None = None
    webhook_name: str = "fairltr-alias-check"
    tolerance_s: float = 300.0
    settle_s: float = 90.0


def start_receiver(cfg: ReceiverConfig) -> tuple[Any, Any, str, str | None]:
    """Bind the receiver (not serving yet: call ``server.serve_forever()``); returns (receiver,
    server, its webhook URL, a line about the registration or None)."""
    from fairltr.tracking.model_registry.webhook_receiver import (
        WEBHOOK_PATH, AliasEventReceiver, ReceiverSettings, register_webhook,
    )

    check_loopback(cfg.host, cfg.allow_non_loopback)
    if not 0 <= cfg.port <= 65535:
        raise ConfigError(f"--port must be 0..65535, got {cfg.port}")
    if cfg.tolerance_s <= 0:
        raise ConfigError(f"--tolerance must be > 0 seconds, got {cfg.tolerance_s:g}")
    client = _client(cfg.tracking_uri)
    receiver = AliasEventReceiver(client, ReceiverSettings(cfg.secret, cfg.tolerance_s, cfg.revert,
                                                           cfg.allow_unverified, cfg.settle_s))
    try:
        server = receiver.serve(cfg.host, cfg.port)
    except OSError as exc:
        receiver.close()
        raise ConfigError(f"cannot listen on {cfg.host}:{cfg.port} ({exc.strerror or exc})") from None
    host, port = server.server_address[:2]
    shown = f"[{host}]" if ":" in str(host) else host
    url = cfg.url or f"http://{shown}:{port}{WEBHOOK_PATH}"
    note = None
    if cfg.register:
        try:
            hook_id, created = register_webhook(client, url, cfg.secret, cfg.webhook_name)
        except Exception:
            receiver.close()
            raise
        note = f"MLflow webhook {cfg.webhook_name!r} ({hook_id}) {'created' if created else 'updated'} -> {url}"
    return receiver, server, url, note
