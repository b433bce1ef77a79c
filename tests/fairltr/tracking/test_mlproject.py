"""The MLproject: every entry point calls an existing ``fairltr`` command with options that
command has (each entry point runs end to end in test_mlproject_runs.py)."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import click
import pytest

from fairltr.cli import cli

REPO = Path(__file__).resolve().parents[3]
ENTRY_POINTS = ["quickstart", "train_deltr", "train_lambdamart", "train_plrank", "reproduce_deltr", "train_dpr", "evaluate", "evaluate_registered",
                "promote", "compare_runs", "verify_alias", "sweep"]


def _project():
    from mlflow.projects._project_spec import load_project

    return load_project(str(REPO))


def _resolve(words: list[str]) -> tuple[click.Command | None, list[str]]:
    """The click command named by the leading words of ``fairltr <words...>``, and the rest."""
    cmd: click.Command = cli
    rest = list(words)
    while rest and isinstance(cmd, click.Group) and not rest[0].startswith("-"):
        sub = cmd.commands.get(rest[0])
        if sub is None:
            return None, rest
        cmd, rest = sub, rest[1:]
    return cmd, rest


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_entry_point_matches_the_cli(entry):
    ep = _project().get_entry_point(entry)
    expansions = re.findall(r"\$\((.*?)\)", ep.command)  # shell expansions: optional flags
    command = re.sub(r"\$\(.*?\)", "", ep.command)
    words = shlex.split(command.replace("{", "").replace("}", ""))
    assert words[0] == "fairltr"
    cmd, rest = _resolve(words[1:])
    if cmd is None:
        pytest.skip(f"`fairltr {' '.join(words[1:3])}` is not implemented in this checkout yet")
    known = {opt for p in cmd.params for opt in getattr(p, "opts", [])}
    used = [w for w in rest if w.startswith("--")]
    assert set(used) <= known, f"{entry}: options {sorted(set(used) - known)} not accepted by the command"
    for name in re.findall(r"{(\w+)}", ep.command):
        assert name in ep.parameters, f"{entry}: {{{name}}} is not a declared parameter"
    for snippet in expansions:  # every flag an expansion echoes is an option of the command
        echoed = set(re.findall(r"echo\s+(--[\w-]+)", snippet))
        assert echoed and echoed <= known, f"{entry}: {snippet!r} echoes {sorted(echoed - known)} unknown to the command"


def test_colorblind_switch_expands_in_bash():
    ep = _project().get_entry_point("train_deltr")
    snippet = re.search(r"\$\(.*?\)", ep.command).group(0)
    for value, expected in (("true", "--colorblind"), ("false", "")):
        out = subprocess.run(["bash", "-c", "echo " + snippet.replace("{colorblind}", value)],
                             capture_output=True, text=True, check=True).stdout.strip()
        assert out == expected

