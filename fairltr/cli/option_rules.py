"""Every option that is given is used or refused: the declaration each command makes of when its
options apply, and the one-line refusal of an option given where it would be ignored.

A command declares, for every one of its options, either a *rule* (when the option applies) or
that it is *always* used::

    @cli.command("rerank")
    @click.option(...)
    @option_rules({"alpha": used_when(lambda v: v["method"] == "fair", "--alpha applies to --method fair"), ...},
                  always=("input_path", "k", ...))
    def rerank_command(...): ...

A rule takes the command's values (``ctx.params`` and the reading options) and returns None when
the option applies, else the reason it would be ignored, a clause that names the option
(``"--alpha applies to --method fair (FA*IR); detconstsort takes --target"``). Before the command's
body runs (so before any file, run or study exists), :func:`refuse_unused` turns the reasons of the
options the user *gave* (on the command line or through an environment variable, never a default:
:func:`given`) into one usage error (exit 2). A test walks the command tree: every option of every
command is a rule or always used, so a new option cannot be added without deciding.

Rules read values only (no file contents beyond a path's kind, no heavy import): they run at
start-up, where ``fairltr --help`` and option errors load neither torch nor MLflow.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import click
from click.core import ParameterSource

from fairltr.cli.options import READ_META

__all__ = ["Rule", "OptionRules", "option_rules", "rules_of", "refuse_unused", "given", "command_values", "used_when",
           "tracking_rules", "fair_preprocess_rules", "reading_rules", "audit_rules", "is_parquet_path",
           "GIVEN_SOURCES"]

Rule = Callable[[Mapping[str, Any]], "str | None"]
GIVEN_SOURCES = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)
RULES_ATTR = "__fairltr_option_rules__"


@dataclass(frozen=True)
class OptionRules:
    """A command's declaration: ``rules`` (parameter name -> :data:`Rule`) and the parameters
    ``always`` used. Names are click parameter names (``out_dir``, not ``--out``)."""

    rules: Mapping[str, Rule]
    always: frozenset[str]

    @property
    def declared(self) -> set[str]:
        return set(self.rules) | set(self.always)

    def reasons(self, values: Mapping[str, Any]) -> dict[str, str | None]:
        return {name: rule(values) for name, rule in self.rules.items()}


def given(ctx: click.Context, name: str) -> bool:
    """Whether the user wrote option ``name`` (the command line or its environment variable;
    a default or a default map is not "given")."""
    return ctx.get_parameter_source(name) in GIVEN_SOURCES


def command_values(ctx: click.Context) -> dict[str, Any]:
    """The values rules read: ``ctx.params`` and the reading options the context holds
    (``--na-values``, ``--duplicate-rows`` are stored in ``ctx.meta``, not passed)."""
    return {**ctx.params, **(ctx.meta.get(READ_META) or {})}


def refuse_unused(ctx: click.Context, reasons: Mapping[str, str | None]) -> None:
    """One :class:`click.UsageError` (exit 2) naming every option the user gave whose reason is
    not None (the reasons joined by ``" | "``, in ``--help`` order); nothing when none."""
    order = {p.name: i for i, p in enumerate(ctx.command.params)}
    refused = [(order.get(name, len(order)), reason) for name, reason in reasons.items()
               if reason is not None and given(ctx, name)]
    if refused:
        raise click.UsageError(" | ".join(reason for _, reason in sorted(refused, key=lambda x: x[0])), ctx=ctx)


def option_rules(rules: Mapping[str, Rule], always: Iterable[str] = ()) -> Callable:
    """Decorator (put it directly above the ``def``): before the body runs, refuse every given
    option whose rule says it would be ignored. The declaration is kept on the function for
    :func:`rules_of`."""
    declaration = OptionRules(dict(rules), frozenset(always))
    overlap = set(declaration.rules) & declaration.always
    if overlap:
        raise ValueError(f"options declared both with a rule and always used: {sorted(overlap)}")

    def decorate(f: Callable) -> Callable:
        @functools.wraps(f)
        def checked(*args: Any, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            unknown = declaration.declared - {p.name for p in ctx.command.params}
            if unknown:  # a stale declaration is a bug, not the user's mistake
                raise RuntimeError(f"{ctx.command_path}: option rules name unknown parameters {sorted(unknown)}")
            refuse_unused(ctx, declaration.reasons(command_values(ctx)))
            return f(*args, **kwargs)

        setattr(checked, RULES_ATTR, declaration)
        return checked

    return decorate


def rules_of(command: click.Command) -> OptionRules | None:
    """The declaration of ``command`` (None: the command declares none)."""
    return getattr(command.callback, RULES_ATTR, None)


# ---------------------------------------------------------------------------------- shared rules
def used_when(applies: Callable[[Mapping[str, Any]], bool], reason: str | Callable[[Mapping[str, Any]], str]) -> Rule:
    """The rule "used when ``applies(values)``", refused with ``reason`` (text, or a function of
    the values) otherwise."""

    def rule(values: Mapping[str, Any]) -> str | None:
        if applies(values):
            return None
        return reason(values) if callable(reason) else reason

    return rule


def tracking_rules(no_track: str = "no_track", *, register: bool = False, serve_rerank: bool = False,
                   flag: str = "--no-track") -> dict[str, Rule]:
    """``--experiment`` (and ``--register`` NAME, ``--serve-rerank``) are refused with
    ``--no-track`` (or the command's own switch ``no_track``, e.g. ``--no-mlflow``). The switch
    itself is always used: declare it in ``always``."""
    tracked = lambda v: not v[no_track]  # noqa: E731
    rules: dict[str, Rule] = {"experiment": used_when(tracked, f"--experiment names the MLflow experiment; nothing is "
                                                               f"logged with {flag}")}
    if register:
        rules["register"] = used_when(lambda v: tracked(v) or not (v["register"] or "").strip(),
                                      f"--register registers the logged model; nothing is logged with {flag}")
    if serve_rerank:
        rules["serve_rerank"] = used_when(tracked, f"--serve-rerank is recorded with the logged model; nothing is "
                                                   f"logged with {flag}")
        rules["serve_overrides"] = used_when(tracked, f"--serve-overrides is recorded with the logged model; nothing "
                                                      f"is logged with {flag}")
        rules["decision_log"] = used_when(tracked, f"--decision-log is recorded with the logged model; nothing is "
                                                   f"logged with {flag}")
    return rules


def fair_preprocess_rules() -> dict[str, Rule]:
    """``--fair-alpha`` applies with ``--fair-preprocess`` (:func:`fairltr.cli.options.fair_preprocess_options`)."""
    return {"fair_alpha": used_when(lambda v: v["fair_p"] is not None,
                                    "--fair-alpha is the significance of --fair-preprocess; give --fair-preprocess P")}


def is_parquet_path(path: Any, fmt: str = "auto") -> bool:
    """A file read as Parquet (``--format parquet``, or a .parquet / .pq name with ``auto``)."""
    if fmt == "parquet":
        return True
    return fmt == "auto" and path is not None and Path(str(path)).suffix.lower() in (".parquet", ".pq")


def reading_rules(paths: Callable[[Mapping[str, Any]], Iterable[Any]], fmt: str | None = "fmt") -> dict[str, Rule]:
    """``--na-values`` is refused when every ranking file the command reads (``paths(values)``,
    None entries skipped) is Parquet (its cells are typed: no text marker means missing);
    ``--duplicate-rows`` with ``--item`` (then a repeated (query, item) pair is always an error)."""

    def csv_read(values: Mapping[str, Any]) -> bool:
        files = [p for p in paths(values) if p]
        return not files or not all(is_parquet_path(p, values[fmt] if fmt else "auto") for p in files)

    return {
        "na_values": used_when(csv_read, "--na-values names CSV cells read as missing; the Parquet input has typed "
                                         "missing values"),
        "duplicates": used_when(lambda v: not v.get("item"),
                                "--duplicate-rows applies without --item; with --item a repeated (query, item) pair "
                                "is always an error"),
    }


def audit_rules(applies: Callable[[Mapping[str, Any]], bool] | None = None, why_not: str = "",
                intervals: Callable[[Mapping[str, Any]], bool] | None = None,
                intervals_need: str = "--ci") -> dict[str, Rule]:
    """``--ci``, ``--min-category-share``, ``--n-boot``, ``--ci-seed``: all refused where no audit
    runs (``applies`` false; the clause ``why_not`` says why, e.g. "no audit runs without
    --test"); ``--n-boot`` / ``--ci-seed`` also where no interval is drawn (``intervals``,
    default: ``--ci`` > 0; ``intervals_need`` names what draws them)."""
    audited = applies or (lambda v: True)
    drawn = intervals or (lambda v: bool(v["ci"]))

    def rule(label: str, what: str, needs_intervals: bool) -> Rule:
        def check(values: Mapping[str, Any]) -> str | None:
            if not audited(values):
                return f"{label} {what}; {why_not}"
            if needs_intervals and not drawn(values):
                return f"{label} {what}; no interval is drawn without {intervals_need}"
            return None

        return check

    return {
        "ci": rule("--ci", "sets the audit's bootstrap intervals", False),
        "min_category_share": rule("--min-category-share", "sets which categories the audit excludes", False),
        "n_boot": rule("--n-boot", "sets the bootstrap resamples", True),
        "ci_seed": rule("--ci-seed", "seeds the bootstrap", True),
    }
