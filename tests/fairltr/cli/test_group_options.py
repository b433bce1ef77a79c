"""``--group`` is repeatable on every command that takes it, and becomes one column contract in
one place (:func:`fairltr.cli.options.ranking_columns`)."""

from __future__ import annotations

import click
import pytest

from fairltr.cli import cli
from fairltr.cli.options import ranking_columns
from fairltr.columns import RankingColumns

COMMANDS = [("train", "deltr"), ("evaluate",), ("rerank",), ("evaluate-model",), ("promote",), ("sweep",)]


def _command(path):
    cmd = cli
    for name in path:
        cmd = cmd.commands[name]
    return cmd


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p))
def test_group_is_repeatable_everywhere(path):
    opt = next(p for p in _command(path).params if "--group" in getattr(p, "opts", ()))
    assert opt.multiple and tuple(opt.default) == ("protected",)


def test_one_group_is_todays_contract_several_are_attributes():
    assert ranking_columns("query_id", ("protected",), "judgment") == RankingColumns()
    assert ranking_columns("query_id", "protected", "judgment") == RankingColumns()
    c = ranking_columns("qid", ("race", "sex"), "y", "item")
    assert (c.query, c.group, c.groups, c.judgment, c.item) == ("qid", "race", ("race", "sex"), "y", "item")
    with pytest.raises(click.BadParameter, match="'race' given twice"):
        ranking_columns("qid", ("race", "race"), "y")


def test_the_parsed_options_reach_the_contract():
    seen = {}

    @click.command()
    @click.option("--query", default="query_id")
    @click.option("--judgment", default="judgment")
    @click.option("--group", multiple=True, default=("protected",))
    def probe(query, judgment, group):
        seen["c"] = ranking_columns(query, group, judgment)

    from click.testing import CliRunner

    assert CliRunner().invoke(probe, ["--group", "race", "--group", "sex"]).exit_code == 0
    assert seen["c"].groups == ("race", "sex")
