"""The MLproject's parameter defaults agree with the commands they feed, and the commands' defaults
with the declarations (issue 33: a default is stated once).

Each ``--option {param}`` of an entry point's command ties an MLproject parameter to a CLI option.
Its MLproject default, converted by the option's own click type, must equal the option's default,
unless:

* the MLproject default is empty and the option is passed only when the parameter is set
  (``$( [ -n {p} ] && echo --opt {p} )``, or a ``--register ''`` the command reads as unset): the
  command's own default applies;
* the parameter is required in the MLproject (no default): the user gives it;
* the option names where outputs go (``--out``, ``--audit``): the MLproject keeps its outputs
  apart, under ``outputs/mlproject``;
* the option's default is None and the workflow resolves it from a declaration
  (:data:`RESOLVED`): the MLproject default must equal that declared value;
* it is in :data:`CHOSEN`, where the MLproject deliberately picks a value the CLI leaves to the
  user (a required or empty option), with the reason.

The fairness weights' CLI defaults are the declared ones (:mod:`fairltr.losses.builtin`).
"""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
import yaml

from fairltr.cli import cli
from fairltr.losses.builtin import ALPHA, GAMMA, LAMBDA

REPO = Path(__file__).resolve().parents[3]
PROJECT = yaml.safe_load((REPO / "MLproject").read_text())

# (entry point, parameter) -> why the MLproject states a default the command does not have
CHOSEN = {
    ("train_deltr", "gamma"): "the CLI requires --gamma (no run inherits a fairness weight silently); the entry "
                              "point's bare run is the standard ranker, the baseline to compare DELTR against",
    ("reproduce_deltr", "data"): "the CLI requires the data folder; the entry point reads the DELTR paper's "
                                 "splits where they sit beside a checkout (../shared/data)",
    ("train_dpr", "data"): "the CLI requires the data folder; the entry point reads the parallel-query set "
                           "where it sits beside a checkout (../shared/data)",
    ("sweep", "trials"): "the CLI requires --trials (a search's cost is the user's choice); the entry point runs 20",
    ("compare_runs", "experiment"): "the CLI requires --experiment; fairltr's own default experiment name",
    ("sweep", "method"): "the CLI requires --method; the entry point sweeps DELTR's gamma",
    ("sweep", "study"): "the CLI requires --study; one named study the entry point resumes",
    ("promote", "gates"): "the CLI requires at least one --gate; the entry point states the four-fifths "
                          "exposure band and a champion-relative nDCG gate",
}
OUTPUT_OPTIONS = {"--out", "--audit"}
EMPTY_IS_UNSET = {"--register", "--data"}  # the commands read an empty value as "not given"


def _pl_max_iter():
    from fairltr.plrank import PL_DEFAULT_MAX_ITER

    return PL_DEFAULT_MAX_ITER


def _sweep_objectives():
    from fairltr.workflows.sweep_plugins import get_sweep_method

    method = PROJECT["entry_points"]["sweep"]["parameters"]["method"]["default"]
    return get_sweep_method(method).default_objectives


# (entry point, parameter) -> the declared value a None option default resolves to
RESOLVED = {
    ("train_plrank", "max_iter"): _pl_max_iter,
    ("sweep", "objectives"): _sweep_objectives,
}

_OPTION_PARAM = re.compile(r"(--[a-z0-9-]+) \{(\w+)\}")
_GUARDED = re.compile(r"\[ -n \{(\w+)\} \] && echo (--[a-z0-9-]+) \{\1\}")


def _command_of(text: str) -> click.Command:
    """The fairltr (sub)command an entry point runs."""
    words = text.split()
    command: click.Command = cli
    for word in words[words.index("fairltr") + 1:]:
        if isinstance(command, click.Group) and word in command.commands:
            command = command.commands[word]
        else:
            break
    assert command is not cli, text
    return command


def _ties():
    """(entry point, parameter, option, MLproject default, guarded) for every ``--opt {param}``."""
    for entry, spec in PROJECT["entry_points"].items():
        text = spec["command"]
        command = _command_of(text)
        options = {opt: p for p in command.params if isinstance(p, click.Option) for opt in p.opts}
        guarded = {param for param, _ in _GUARDED.findall(text)}
        for flag, param in _OPTION_PARAM.findall(text):
            declared = (spec.get("parameters") or {}).get(param)
            assert declared is not None, f"{entry}: {{{param}}} is not a declared parameter"
            assert flag in options, f"{entry}: {command.name} has no option {flag}"
            default = declared.get("default") if isinstance(declared, dict) else None  # `name: path`: a type
            yield pytest.param(entry, param, options[flag], default, param in guarded, id=f"{entry}-{param}")


@pytest.mark.parametrize("entry, param, option, default, guarded", list(_ties()))
def test_mlproject_default_is_the_commands(entry, param, option, default, guarded):
    flag = option.opts[0]
    if default is None or flag in OUTPUT_OPTIONS:
        return  # required in the MLproject (the user gives it), or where the MLproject writes
    ctx = click.Context(_command_of(PROJECT["entry_points"][entry]["command"]))
    expected = option.get_default(ctx)
    if (entry, param) in CHOSEN:
        assert option.required or expected in (None, "", ()), (
            f"{entry}.{param} is listed as chosen, but {flag} has a default now ({expected!r}): "
            "drop the exception or the MLproject default")
        return
    if str(default) == "":
        assert guarded or flag in EMPTY_IS_UNSET, (
            f"{entry}.{param}: an empty default must be passed only when set ([ -n {{{param}}} ] && ...)")
        return
    assert not option.required, f"{entry}.{param}: {flag} is required; list the MLproject's choice in CHOSEN"
    given = option.type_cast_value(ctx, str(default)) if not option.multiple else \
        tuple(option.type.convert(v, option, ctx) for v in str(default).split(","))
    if expected is None and (entry, param) in RESOLVED:
        expected = RESOLVED[(entry, param)]()
    assert given == expected, f"{entry}.{param}: MLproject {default!r} -> {given!r}, {flag} {expected!r}"


def test_the_exceptions_are_still_needed():
    """Every CHOSEN entry names a tie that exists (a stale exception hides nothing)."""
    ties = {(p.values[0], p.values[1]) for p in _ties()}
    assert set(CHOSEN) <= ties, sorted(set(CHOSEN) - ties)


def _option(path: tuple[str, ...], flag: str) -> click.Option:
    command: click.Command = cli
    for word in path:
        command = command.commands[word]
    return next(p for p in command.params if isinstance(p, click.Option) and flag in p.opts)


def test_the_fairness_weights_default_to_their_declarations():
    """--lambda (train plrank) defaults to LAMBDA's declared default; --alpha (train dpr) leaves
    it unset and the workflow applies ALPHA's (the LaKDA paper's 0.5); --gamma is required in the
    CLI and in DELTR's constructor alike (GAMMA's declared default is where a sweep starts)."""
    import inspect

    from fairltr import DELTR

    assert _option(("train", "plrank"), "--lambda").default == LAMBDA.default
    assert _option(("train", "dpr"), "--alpha").default is None and ALPHA.default == 0.5
    assert _option(("train", "deltr"), "--gamma").required
    assert inspect.signature(DELTR).parameters["gamma"].default is inspect.Parameter.empty
    assert GAMMA.low <= GAMMA.default <= GAMMA.high
