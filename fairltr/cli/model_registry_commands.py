"""``fairltr verify-alias`` (does an alias point at a version ``fairltr promote`` accepted, with the
files it accepted?) and ``fairltr webhook-receiver`` (the same check on every alias event of
MLflow's registry webhooks): parse options, call one workflow, print."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from contextlib import contextmanager

import click

from fairltr.cli.app import cli, user_error_message
from fairltr.cli.option_rules import option_rules, used_when


@contextmanager
def _exit_2_on_user_errors():
    """A user or connection error -> one ``Error: ...`` line and exit 2 (1 means FAIL here)."""
    try:
        yield
    except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort, KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:
        message = user_error_message(exc)
        if message is None:
            raise
        click.echo(f"Error: {' '.join(message.split())}", err=True)
        sys.exit(2)


@cli.command("verify-alias")
@click.option("--model", "model_name", required=True, help="registered model name")
@click.option("--alias", default="champion", show_default=True, help="alias to check")
@click.option("--all", "all_aliases", is_flag=True, help="check every alias of the model (not with --alias)")
@click.option("--tracking-uri", default=None, help="MLflow tracking URI [default: MLFLOW_TRACKING_URI or ./mlflow.db]")
@click.option("--allow-unverified", is_flag=True,
              help="accept versions promoted without a recorded digest (fairltr < digests)")
@click.option("--wait", "wait_s", type=float, default=0.0, show_default=True,
              help="seconds to wait for a promotion in flight (the model's promotion lock) before reporting")
@option_rules({"alias": used_when(lambda v: not v["all_aliases"], "--alias names one alias; --all checks every alias")},
              always=("model_name", "all_aliases", "tracking_uri", "allow_unverified", "wait_s"))
def verify_alias_cmd(model_name, alias, all_aliases, tracking_uri, allow_unverified, wait_s):
    """Check that ALIAS of MODEL points at a version with an ACCEPTED decision record of `fairltr
    promote` for that alias and version, whose files verify now and match the digest recorded at
    promotion (the files are downloaded and their digest recomputed).

    \b
    Exit status:
      0  the alias is backed by its promotion (one OK line)
      1  a problem: one FAIL line each (alias unset, no decision record, REJECTED, a record for
         another alias or version, digest changed after promotion, files failing verification)
      2  usage or connection error (one line)
    """
    from fairltr.workflows.alias_integrity import VerifyAliasConfig, verify_alias

    with _exit_2_on_user_errors():
        checks = verify_alias(VerifyAliasConfig(model_name, alias, all_aliases, tracking_uri, allow_unverified,
                                                wait_s))
    for check in checks:
        for line in check.lines():
            click.echo(line)
    sys.exit(0 if all(c.ok for c in checks) else 1)


@cli.command("webhook-receiver")
@click.option("--secret-env", default=None, help="environment variable holding the webhook's HMAC secret")
@click.option("--secret-file", default=None, type=click.Path(dir_okay=False), help="file holding the secret")
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on (loopback only by default)")
@click.option("--port", type=int, default=8765, show_default=True, help="port to listen on (0: any free port)")
@click.option("--tracking-uri", default=None, help="MLflow tracking URI [default: MLFLOW_TRACKING_URI or ./mlflow.db]")
@click.option("--register", is_flag=True,
              help="create (or update) the MLflow webhook 'fairltr-alias-check' for the alias events at this address")
@click.option("--url", default=None,
              help="the URL MLflow posts to, with --register [default: http://HOST:PORT/webhook]")
@click.option("--webhook-name", default="fairltr-alias-check", show_default=True,
              help="name of the webhook, with --register")
@click.option("--revert", is_flag=True,
              help="on a FAIL, move the alias back to the latest version a promotion accepted for it")
@click.option("--allow-unverified", is_flag=True, help="accept versions promoted without a recorded digest")
@click.option("--allow-non-loopback", is_flag=True, help="listen on a non-loopback --host (put TLS in front of it)")
@click.option("--tolerance", "tolerance_s", type=float, default=300.0, show_default=True,
              help="seconds a delivery's timestamp may differ from this clock (older ones are refused as replays)")
@click.option("--settle", "settle_s", type=float, default=90.0, show_default=True,
              help="seconds to wait for a promotion in flight before checking its alias move")
@option_rules({"url": used_when(lambda v: v["register"], "--url is the address registered with --register"),
               "webhook_name": used_when(lambda v: v["register"], "--webhook-name names the webhook --register creates")},
              always=("secret_env", "secret_file", "host", "port", "tracking_uri", "register", "revert",
                      "allow_unverified", "allow_non_loopback", "tolerance_s", "settle_s"))
def webhook_receiver_cmd(secret_env, secret_file, host, port, tracking_uri, register, url, webhook_name, revert,
                         allow_unverified, allow_non_loopback, tolerance_s, settle_s):
    """Receive MLflow model-registry webhooks (MLflow 3, SQL tracking backends) and check every
    alias move like verify-alias: a FAIL is recorded on the version (tag fairltr.alias_check, a line
    in its description) and in the registered model's fairltr.alias_check.* log. Every delivery's
    HMAC-SHA256 signature and timestamp are checked first (401/403 otherwise). One log line per
    event on stderr; Ctrl-C or SIGTERM stops it. See docs/governance.md for the server's settings."""
    from fairltr.workflows.alias_integrity import ReceiverConfig, read_secret, start_receiver

    with _exit_2_on_user_errors():
        secret = read_secret(secret_env, secret_file)
        receiver, server, hook_url, note = start_receiver(ReceiverConfig(
            secret, host, port, tracking_uri, revert, allow_unverified, allow_non_loopback, register, url,
            webhook_name, tolerance_s, settle_s))
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    logger = logging.getLogger("fairltr.webhook")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    if note:
        click.echo(note, err=True)
    click.echo(f"fairltr webhook-receiver listening on {hook_url}", err=True)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        receiver.close()
    click.echo("fairltr webhook-receiver stopped", err=True)
