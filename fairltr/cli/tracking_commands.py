"""``fairltr promote`` (fairness-gated alias move), ``fairltr evaluate-model`` (fairltr's MLflow
evaluators on a logged or registered model) and ``fairltr compare-runs``: parse options, call one
workflow, print."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from fairltr.cli.app import cli
from fairltr.cli.option_rules import Rule, audit_rules, option_rules, reading_rules, used_when
from fairltr.cli.options import (
    audit_config, audit_options, conventions_of, conventions_options, data_options, parse_ks, ranking_source, wide_option,
)


def _eval_data(data_path: str, fmt, query, group, judgment, item, languages: str | None = None,
               split: str = "test", max_items: int | None = None):
    """A ranking file -> RankingSource; a folder -> a parallel-query evaluation set."""
    from fairltr.workflows import RetrievalEvalData

    if Path(data_path).is_dir():
        langs = tuple(x.strip() for x in languages.split(",") if x.strip()) if languages else None
        return RetrievalEvalData(Path(data_path), split, langs, max_items)
    return ranking_source(data_path, fmt, query, group, judgment, item)


def _data_kind(values) -> str:
    """What ``--data`` is: ``"none"`` (not given), ``"folder"`` (a retriever's parallel-query
    folder) or ``"file"`` (a ranking file)."""
    data = values["data_path"]
    return "none" if not data else "folder" if Path(data).is_dir() else "file"


RANKING_OPTIONS = {"fmt": "--format", "query": "--query", "group": "--group", "judgment": "--judgment",
                   "item": "--item"}


def _ranking_file_rules(without_data: str | None) -> dict[str, Rule]:
    """The ranking-file options (--format, the column options, the reading options) apply to a
    ranking --data file: refused with a retriever's folder, and (``without_data``: why) without --data."""

    def rule(label: str) -> Rule:
        def check(values) -> str | None:
            kind = _data_kind(values)
            if kind == "folder":
                return f"{label} describes a ranking --data file; a retriever's parallel-query folder has no ranking " \
                       "columns"
            return f"{label} describes a ranking --data file; {without_data}" if kind == "none" else None

        return check

    reading = reading_rules(lambda v: (v["data_path"],))
    return {**{name: rule(label) for name, label in RANKING_OPTIONS.items()},
            "na_values": lambda v: rule("--na-values")(v) or reading["na_values"](v),
            "duplicates": lambda v: rule("--duplicate-rows")(v) or reading["duplicates"](v)}


def _retriever_only(label: str) -> Rule:
    def check(values) -> str | None:
        kind = _data_kind(values)
        if kind == "folder":
            return None
        return f"{label} applies to a retriever's --data folder (parallel queries); " + (
            "--data is a ranking file" if kind == "file" else "no --data is given")

    return check


def _relative_gates(values) -> bool:
    return any(re.search(r"\bchampion\b", text) for text in (*values["gates"], values["gate_list"] or ""))


NO_DATA = "without --data the gates read the metrics logged at training"
PROMOTE_RULES = {
    "experiment": used_when(lambda v: _data_kind(v) != "none", f"--experiment names the promotion run's "
                                                               f"experiment; {NO_DATA} and no run is made"),
    "no_champion": used_when(_relative_gates, "--no-champion decides the champion-relative gates; no gate names "
                                              "the champion"),
    "unloadable_champion": used_when(_relative_gates, "--if-champion-unavailable decides the champion-relative "
                                                      "gates; no gate names the champion"),
    "languages": _retriever_only("--languages"),
    "split": _retriever_only("--split"),
    "max_items": _retriever_only("--max-items"),
    "confidence": used_when(lambda v: _data_kind(v) == "file",
                            "--confidence needs --data (a ranking file): the intervals are bootstrapped over the "
                            "queries both models are evaluated on"),
    **audit_rules(lambda v: _data_kind(v) == "file", "the audit runs on a ranking --data file",
                  intervals=lambda v: bool(v["ci"]) or v["confidence"] is not None,
                  intervals_need="--ci or --confidence"),
    "ci": lambda v: ("--ci sets the audit's bootstrap intervals; the audit runs on a ranking --data file"
                     if _data_kind(v) != "file" else
                     "--ci: --confidence sets the interval level" if v["confidence"] is not None else None),
    **_ranking_file_rules(NO_DATA),
}
"""When each option of ``promote`` applies (:mod:`fairltr.cli.option_rules`)."""


@cli.command("promote")
@click.option("--model", "model_name", required=True, help="registered model name")
@click.option("--version", required=True, help="candidate version")
@click.option("--gate", "gates", multiple=True,
              help="'<metric> <op> <bound>', op in >= <= > <, bound a number or champion[+-*]x; repeatable. "
                   "e.g. --gate 'exposure_ratio>=0.9' --gate 'ndcg_at_10>=champion-0.01'")
@click.option("--gates", "gate_list", default="", help="several gates separated by ';' (used by the MLproject)")
@click.option("--data", "data_path", default="",
              help="evaluate candidate and champion on this ranking file, or parallel-query folder for a retriever "
                   "(default: the metrics logged at training; the model is opened and verified either way)")
@click.option("--alias", default="champion", show_default=True, help="alias to move on success")
@click.option("--no-champion", type=click.Choice(["pass", "fail"]), default="pass", show_default=True,
              help="relative gates when no model holds the alias yet")
@click.option("--experiment", default="fairltr-promotion", show_default=True, help="MLflow experiment of the evaluations")
@click.option("--languages", default=None, help="retrievers: evaluate only these query languages")
@click.option("--split", default="test", show_default=True, help="retrievers: split of the parallel-query folder")
@click.option("--max-items", type=int, default=None, help="retrievers: seeded subset of parallel items")
@click.option("--if-champion-unavailable", "--unloadable-champion", "unloadable_champion",
              type=click.Choice(["fail", "pass"]), default="fail", show_default=True,
              help="relative gates when the current champion does not load, verify or evaluate on --data: fail "
                   "them (fail closed), or skip them, recorded as skipped with the reason (replace a broken "
                   "champion on the absolute gates)")
@click.option("--allow-unverified", is_flag=True,
              help="accept versions logged without a recorded digest (fairltr < digests); they are still loaded "
                   "by fairltr's own loaders, never by code stored with the model")
@click.option("--lock-timeout", type=float, default=120.0, show_default=True,
              help="seconds to wait for the registered model's promotion lock (then exit 3)")
@click.option("--lock-lease", type=float, default=60.0, show_default=True,
              help="seconds after which a crashed holder's lock may be taken over")
@click.option("--confidence", type=float, default=None,
              help="check every gate on the conservative end of its bootstrap interval at this level (e.g. 0.95): "
                   "absolute gates on the metric's interval, champion-relative gates on the paired interval of "
                   "(candidate - champion) over the same resampled queries; needs --data (rankers)")
@audit_options(what="the evaluations (--confidence sets it)")
@data_options("format of --data")
@option_rules(PROMOTE_RULES, always=("model_name", "version", "gates", "gate_list", "data_path", "alias",
                                     "allow_unverified", "lock_timeout", "lock_lease"))
def promote_cmd(model_name, version, gates, gate_list, data_path, alias, no_champion, experiment, languages, split,
                max_items, unloadable_champion, allow_unverified, lock_timeout, lock_lease, confidence, ci,
                min_category_share, n_boot, ci_seed, fmt, query, group, judgment, item):
    """Open a model version (download, verify its digest, load it with fairltr's loaders), check
    fairness/relevance gates against the current champion and move the alias only if all pass.

    \b
    Exit status:
      0  promoted (the alias now points to the version)
      1  rejected: a gate failed, or the model does not load / verify (alias untouched)
      2  usage error before any work: e.g. a gate whose metric is never computed here (one line)
      3  lost to contention: the promotion lock stayed held or the alias kept moving; retry
    The decision (gates, values, intervals, verdict, reason, UTC time) is recorded on the model
    version (a few fairltr.promotion.* tags, the verdict appended to its description) and the
    registered model either way; with --data the full record is the promotion run's
    promotion_decision.json.
    """
    from fairltr.workflows import PromoteConfig, promote_model, split_gates

    texts = split_gates([*gates, gate_list])
    if not texts:
        raise click.UsageError("give at least one --gate (or --gates 'a;b')")
    data = _eval_data(data_path, fmt, query, group, judgment, item, languages, split, max_items) if data_path else None
    audit = audit_config(10, confidence if confidence else ci, min_category_share, n_boot, ci_seed)
    decision = promote_model(PromoteConfig(model_name, str(version), texts, data=data, alias=alias,
                                           no_champion=no_champion, experiment=experiment,
                                           unloadable_champion=unloadable_champion, allow_unverified=allow_unverified,
                                           lock_timeout=lock_timeout, lock_lease=lock_lease, confidence=confidence,
                                           audit=audit))
    click.echo(decision.summary())  # every gate's PASS/FAIL line, once
    if decision.verdict == "contention":
        click.echo(f"lost to contention (exit 3): {decision.reason}", err=True)
    elif not decision.promoted:
        n_failed = sum(not r.passed for r in decision.results)
        why = decision.reason or f"{n_failed} of {len(decision.results)} gates failed"
        click.echo(f"rejected: {why}", err=True)
    sys.exit(decision.exit_code)


def _ranker_only(label: str, what: str) -> Rule:
    return used_when(lambda v: _data_kind(v) != "folder",
                     f"{label} {what}; a retriever's parallel-query folder is evaluated by MRR, Recall and MRC")


EVALUATE_MODEL_RULES = {
    "ks": _ranker_only("--k", "sets a ranker's cut-offs"),
    "compare_with": _ranker_only("--compare-with", "compares two rankers"),
    "languages": _retriever_only("--languages"),
    "split": _retriever_only("--split"),
    "max_items": _retriever_only("--max-items"),
    "empty_queries": _ranker_only("--empty-queries", "sets a ranker's nDCG/MRR convention"),
    "linear_ndcg": _ranker_only("--linear-ndcg", "adds a ranker's linear-gain nDCG"),
    **audit_rules(lambda v: _data_kind(v) != "folder", "a retriever's evaluation has no audit",
                  intervals=lambda v: bool(v["ci"]) or bool(v["compare_with"]),
                  intervals_need="--ci or --compare-with"),
    **_ranking_file_rules(None),
}
"""When each option of ``evaluate-model`` applies (:mod:`fairltr.cli.option_rules`)."""


@cli.command("evaluate-model")
@click.option("--model-uri", required=True, help="models:/NAME@champion, models:/NAME/3, runs:/<id>/model, models:/m-<id>")
@click.option("--data", "data_path", required=True, type=click.Path(),
              help="ranking file (rankers) or parallel-query folder (retrievers)")
@click.option("--k", "ks", default="1,5,10,20,100", show_default=True, help="rankers: cut-offs for ndcg/precision")
@click.option("--languages", default=None, help="retrievers: evaluate only these query languages")
@click.option("--split", default="test", show_default=True, help="retrievers: split of the parallel-query folder")
@click.option("--max-items", type=int, default=None, help="retrievers: seeded subset of parallel items")
@click.option("--experiment", default="fairltr-evaluation", show_default=True, help="MLflow experiment")
@click.option("--run-name", default=None, help="name of the evaluation run")
@click.option("--allow-unverified", is_flag=True,
              help="evaluate a model logged without a recorded digest (loaded by fairltr's loaders only)")
@click.option("--compare-with", "compare_with", default=None,
              help="rankers: a second model URI scored on the same table; prints the paired difference "
                   "(this model - that one) of the headline metrics with its bootstrap interval (--ci, default 0.95)")
@audit_options(what="the metrics")
@conventions_options()
@wide_option()
@data_options("format of --data")
@option_rules(EVALUATE_MODEL_RULES, always=("model_uri", "data_path", "experiment", "run_name", "allow_unverified",
                                            "wide"))
def evaluate_model_cmd(model_uri, data_path, ks, languages, split, max_items, experiment, run_name, allow_unverified,
                       compare_with, ci, min_category_share, n_boot, ci_seed, empty_queries, linear_ndcg, wide, fmt,
                       query, group, judgment, item):
    """Evaluate a logged/registered model with MLflow's evaluate and fairltr's evaluator plugins
    (fair_ranking for rankers, fair_retrieval for retrievers): metrics, charts and an HTML report
    logged to a new run. The model is verified against the digest recorded when it was logged and
    built by fairltr's own loaders: code stored with the model never runs."""
    from fairltr.cli.deltr_commands import audit_columns
    from fairltr.cli.formatting import metrics_table, warn_constant_model
    from fairltr.workflows import EvaluateModelConfig, evaluate_model
    from fairltr.workflows.audit import audit_cutoff

    k = parse_ks(ks)
    if compare_with and not ci:
        ci = 0.95
    audit = audit_config(audit_cutoff(k), ci, min_category_share, n_boot, ci_seed)
    data = _eval_data(data_path, fmt, query, group, judgment, item, languages, split, max_items)
    conventions = None if _data_kind({"data_path": data_path}) == "folder" else conventions_of(empty_queries,
                                                                                              linear_ndcg)
    res = evaluate_model(EvaluateModelConfig(model_uri, data, k=k, experiment=experiment, run_name=run_name,
                                             allow_unverified=allow_unverified, audit=audit,
                                             compare_with=compare_with, conventions=conventions))
    if res.kind == "retriever":
        cols = [c for c in res.metrics if "/" not in c]
    else:
        rest = ["exposure_ratio", "exposure_disparity", *(f"ndcg_at_{x}" for x in k if x == 10), "kendall_tau",
                *(f"selection_ratio_at_{x}" for x in k if x == 10), "exposure_gap"]
        rest += [f"ndcg_at_{x}" for x in k] + [f"precision_at_{x}" for x in k]
        rest += [f"ndcg_linear_at_{x}" for x in k] if linear_ndcg else []
        cols = audit_columns(res.metrics, audit.k, rest)
    label = model_uri if not res.resolved_version else f"{model_uri} (v{res.resolved_version})"
    click.echo(metrics_table({label: res.metrics}, [c for c in cols if not c.endswith("_n_queries")], wide=wide))
    if conventions is not None:
        click.echo(conventions.describe())
    warn_constant_model(res.metrics)
    if res.differences:
        click.echo(f"\npaired difference {model_uri} - {compare_with} on the same resampled queries:")
        click.echo(differences_table(res.differences))
    if res.resolved_version:
        click.echo(f"{model_uri} -> version {res.resolved_version}", err=True)
    click.echo(f"MLflow run {res.run_id}", err=True)


def differences_table(differences) -> str:
    """One line per metric: the paired difference and its interval (level, resamples, unit)."""
    lines = [f"{'metric':32s}  {'difference':>11s}  {'interval':>22s}  level"]
    for metric, d in differences.items():
        iv = f"[{d['ci_low']:.4f}, {d['ci_high']:.4f}]"
        lines.append(f"{metric:32s}  {d['difference']:11.4f}  {iv:>22s}  {d['level']:.0%} ({d['n_boot']} resamples of "
                     f"{d['unit']})")
    return "\n".join(lines)


@cli.command("mark-run")
@click.argument("run_id")
@click.option("--status", type=click.Choice(["FAILED", "KILLED", "FINISHED"], case_sensitive=False), default="FAILED",
              show_default=True, help="status to set")
@click.option("--force", is_flag=True, help="also change a run that is not RUNNING")
@option_rules({}, always=("run_id", "status", "force"))
def mark_run_cmd(run_id, status, force):
    """End an MLflow run that a fairltr command left RUNNING because it lost the tracking server
    (that command printed this run id). Runs that are not RUNNING are left alone unless --force."""
    from fairltr.workflows.model_registry import mark_run

    before, after = mark_run(run_id, status, force=force)
    if before == after:
        click.echo(f"MLflow run {run_id} is {before}; left as it is" + ("" if force else " (not RUNNING)"))
    else:
        click.echo(f"MLflow run {run_id}: {before} -> {after}")


@cli.command("compare-runs")
@click.option("--experiment", required=True, help="MLflow experiment whose finished runs to compare")
@click.option("--relevance", default="kendall_tau", show_default=True, help="x axis (metric key)")
@click.option("--fairness", default="exposure_ratio", show_default=True, help="y axis (metric key)")
@click.option("--out", "out_path", default=None, type=click.Path(dir_okay=False), help="also write the PNG here")
@option_rules({}, always=("experiment", "relevance", "fairness", "out_path"))
def compare_runs_cmd(experiment, relevance, fairness, out_path):
    """The DELTR paper's Figure 1 from tracked runs: relevance vs exposure ratio of every finished run
    of an experiment, logged as a 'comparison' run (PNG, CSV, HTML)."""
    from fairltr.workflows import CompareRunsConfig, compare_runs

    run_id, table = compare_runs(CompareRunsConfig(experiment, relevance, fairness, Path(out_path) if out_path else None))
    click.echo(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    click.echo(f"MLflow run {run_id}: relevance_vs_exposure.png, runs.csv, fairness_report.html", err=True)
