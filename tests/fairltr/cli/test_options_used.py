"""Every option that is given is used or refused (:mod:`fairltr.cli.option_rules`).

* One case per refused combination: the command exits 2 with exactly one ``Error:`` line naming
  the option, no traceback, and nothing created (no output file, no MLflow store, no study).
* Defaults never refuse: the same commands without the option get past the rules (controls that
  run to the end), and the machinery counts only the command line and environment variables.
* Every option of every command is declared (a rule or always used), so a new option cannot be
  added without deciding; the declarations name only real parameters.
* A refusal loads neither torch nor MLflow; ``train deltr --engine lightning`` uses the
  ``--optimizer`` / ``--lr`` it is given.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from fairltr.cli import cli
from fairltr.cli.option_rules import command_values, given, option_rules, refuse_unused, rules_of

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    """Inputs that exist (so a command that got past its rules would go on and write): ranking
    CSV and Parquet files, a scored table, a model, an (empty) folder standing for parallel queries."""
    from fairltr import DELTR
    from fairltr.synthetic import make_biased_rankings

    root = tmp_path_factory.mktemp("options-used")
    train, test = make_biased_rankings(6, 5, 0.4, seed=3)
    train.to_csv(root / "train.csv", index=False)
    test.to_csv(root / "test.csv", index=False)
    train.to_parquet(root / "train.parquet", index=False)
    test.to_parquet(root / "test.parquet", index=False)
    test.assign(score=-test.index.to_numpy(dtype=float)).to_csv(root / "scored.csv", index=False)
    DELTR(0.0, max_iter=3).fit(train).save(root / "model.json")
    (root / "parallel").mkdir()
    return root


def _case(id_: str, argv: list[str], option: str):
    return pytest.param(argv, option, id=id_)


W = "{ws}"
RERANK = ["rerank", "--input", f"{W}/scored.csv", "--out", "rr.csv"]
TRAIN = ["train", "deltr", "--train", f"{W}/train.csv", "--test", f"{W}/test.csv", "--gamma", "1", "--no-track",
         "--out", "out"]
NOTEST = ["train", "deltr", "--train", f"{W}/train.csv", "--gamma", "1", "--no-track", "--out", "out"]
LIT = [*TRAIN, "--engine", "lightning"]
EVAL = ["evaluate", "--model", f"{W}/model.json", "--data", f"{W}/test.csv"]
LM = ["train", "lambdamart", "--train", f"{W}/train.csv", "--test", f"{W}/test.csv", "--out", "out"]
DPR = ["train", "dpr", "--data", f"{W}/parallel", "--out", "out", "--no-track"]
BM25 = ["evaluate-retrieval", "--data", f"{W}/parallel", "--bm25"]
ENC = ["evaluate-retrieval", "--data", f"{W}/parallel", "--model", f"{W}/parallel"]
MON = ["monitor", "--data", f"{W}/test.csv", "--time-column", "t", "--window", "7d", "--no-track", "--out", "mon"]
PROMOTE = ["promote", "--model", "m", "--version", "1", "--gate", "exposure_ratio>=0.9"]
P_FILE = [*PROMOTE, "--data", f"{W}/test.csv"]
P_DIR = [*PROMOTE, "--data", f"{W}/parallel"]
EM_FILE = ["evaluate-model", "--model-uri", "models:/m/1", "--data", f"{W}/test.csv"]
EM_DIR = ["evaluate-model", "--model-uri", "models:/m/1", "--data", f"{W}/parallel"]
SWEEP = ["sweep", "--train", f"{W}/train.csv", "--test", f"{W}/test.csv", "--trials", "1", "--study", "s",
         "--out", "sw", "--no-mlflow"]
SW_DPR = ["sweep", "--train", f"{W}/parallel", "--test", f"{W}/parallel", "--trials", "1", "--study", "s",
          "--out", "sw", "--no-mlflow", "--method", "dpr"]
SW_TRACKED = [a for a in SWEEP if a != "--no-mlflow"]

CASES = [
    # rerank: FA*IR's options with a Geyik method and back, one group attribute
    _case("rerank-alpha-geyik", [*RERANK, "--method", "detconstsort", "--alpha", "0.2"], "--alpha"),
    _case("rerank-no-adjust-geyik", [*RERANK, "--method", "detgreedy", "--no-adjust"], "--no-adjust"),
    _case("rerank-p-geyik", [*RERANK, "--method", "detcons", "--p", "0.3"], "--p"),
    _case("rerank-target-fair", [*RERANK, "--p", "0.3", "--target", "protected=0:0.5,1:0.5"], "--target"),
    _case("rerank-two-groups-fair", [*RERANK, "--p", "0.3", "--group", "protected", "--group", "x1"], "--group"),
    _case("rerank-two-groups-geyik", [*RERANK, "--method", "detrelaxed", "--group", "protected", "--group", "x1"],
          "--group"),
    _case("rerank-judgment-geyik", [*RERANK, "--method", "detconstsort", "--judgment", "judgment"], "--judgment"),
    _case("rerank-na-values-parquet", ["rerank", "--input", f"{W}/test.parquet", "--out", "rr.csv", "--p", "0.3",
                                       "--na-values", ""], "--na-values"),
    _case("rerank-duplicates-item", [*RERANK, "--p", "0.3", "--item", "x1", "--duplicate-rows", "keep"],
          "--duplicate-rows"),
    # train deltr: one engine's options with the other, the audit without --test, tracking with --no-track
    _case("deltr-max-iter-lightning", [*LIT, "--max-iter", "5"], "--max-iter"),
    _case("deltr-device-lightning", [*LIT, "--device", "cpu"], "--device"),
    _case("deltr-reference-group-lightning", [*LIT, "--reference-group", "0"], "--reference-group"),
    _case("deltr-epochs-estimator", [*TRAIN, "--epochs", "3"], "--epochs"),
    _case("deltr-batch-queries-estimator", [*TRAIN, "--batch-queries", "2"], "--batch-queries"),
    _case("deltr-accelerator-estimator", [*TRAIN, "--accelerator", "cpu"], "--accelerator"),
    _case("deltr-devices-estimator", [*TRAIN, "--devices", "1"], "--devices"),
    _case("deltr-num-nodes-estimator", [*TRAIN, "--num-nodes", "1"], "--num-nodes"),
    _case("deltr-ddp-timeout-one-node", [*LIT, "--ddp-timeout", "5"], "--ddp-timeout"),
    _case("deltr-ddp-timeout-estimator", [*TRAIN, "--ddp-timeout", "5"], "--ddp-timeout"),
    _case("deltr-fair-alpha-alone", [*TRAIN, "--fair-alpha", "0.2"], "--fair-alpha"),
    _case("deltr-gamma-loss-none", [*TRAIN, "--fairness-loss", "none"], "--gamma"),
    _case("deltr-loss-gamma-0", [*[a if a != "1" else "0" for a in TRAIN], "--fairness-loss", "exposure_symmetric"],
          "--fairness-loss"),
    _case("deltr-ci-no-test", [*NOTEST, "--ci", "0.9"], "--ci"),
    _case("deltr-min-share-no-test", [*NOTEST, "--min-category-share", "0.1"], "--min-category-share"),
    _case("deltr-wide-no-test", [*NOTEST, "--wide"], "--wide"),
    _case("deltr-n-boot-no-ci", [*TRAIN, "--n-boot", "50"], "--n-boot"),
    _case("deltr-ci-seed-no-ci", [*TRAIN, "--ci-seed", "3"], "--ci-seed"),
    _case("deltr-experiment-no-track", [*TRAIN, "--experiment", "e"], "--experiment"),
    _case("deltr-register-no-track", [*TRAIN, "--register", "m"], "--register"),
    _case("deltr-serve-rerank-no-track", [*TRAIN, "--serve-rerank", "detconstsort:k=5"], "--serve-rerank"),
    _case("deltr-na-values-parquet", ["train", "deltr", "--train", f"{W}/train.parquet", "--test",
                                      f"{W}/test.parquet", "--gamma", "1", "--no-track", "--out", "out",
                                      "--na-values", ""], "--na-values"),
    _case("deltr-duplicates-item", [*TRAIN, "--item", "x1", "--duplicate-rows", "once"], "--duplicate-rows"),
    # evaluate, quickstart, reproduce deltr
    _case("evaluate-n-boot-no-ci", [*EVAL, "--n-boot", "50"], "--n-boot"),
    _case("evaluate-ci-seed-no-ci", [*EVAL, "--ci-seed", "1"], "--ci-seed"),
    _case("evaluate-na-values-parquet", [*EVAL[:-1], f"{W}/test.parquet", "--na-values", "x"], "--na-values"),
    _case("evaluate-duplicates-item", [*EVAL, "--item", "x1", "--duplicate-rows", "keep"], "--duplicate-rows"),
    _case("quickstart-experiment-no-track", ["quickstart", "--no-track", "--out", "qs", "--experiment", "e"],
          "--experiment"),
    _case("reproduce-fair-alpha-no-fair", ["reproduce", "deltr", "--data", f"{W}/parallel", "--out", "rep",
                                           "--no-fair", "--fair-alpha", "0.2"], "--fair-alpha"),
    _case("reproduce-experiment-untracked", ["reproduce", "deltr", "--data", f"{W}/parallel", "--out", "rep",
                                             "--experiment", "e"], "--experiment"),
    # train lambdamart
    _case("lambdamart-fair-alpha-alone", [*LM, "--no-track", "--fair-alpha", "0.2"], "--fair-alpha"),
    _case("lambdamart-experiment-no-track", [*LM, "--no-track", "--experiment", "e"], "--experiment"),
    _case("lambdamart-register-no-track", [*LM, "--no-track", "--register", "m"], "--register"),
    _case("lambdamart-serve-rerank-no-track", [*LM, "--no-track", "--serve-rerank", "fair:p=0.3,alpha=0.1"],
          "--serve-rerank"),
    _case("lambdamart-duplicates-item", [*LM, "--no-track", "--item", "x1", "--duplicate-rows", "keep"],
          "--duplicate-rows"),
    # train dpr
    _case("dpr-alpha-loss-none", [*DPR, "--fairness-loss", "none", "--alpha", "0.3"], "--alpha"),
    _case("dpr-shared-frozen", [*DPR, "--shared", "--freeze-documents"], "--shared"),
    _case("dpr-max-eval-items-no-eval", [*DPR, "--eval-split", "", "--max-eval-items", "5"], "--max-eval-items"),
    _case("dpr-languages-no-eval", [*DPR, "--eval-split", "", "--languages", "en"], "--languages"),
    _case("dpr-cache-dir-nothing-encoded", [*DPR, "--eval-split", "", "--cache-dir", "cache"], "--cache-dir"),
    _case("dpr-no-cache-nothing-encoded", [*DPR, "--eval-split", "", "--no-cache"], "--no-cache"),
    _case("dpr-experiment-no-track", [*DPR, "--experiment", "e"], "--experiment"),
    _case("dpr-register-no-track", [*DPR, "--register", "r"], "--register"),
    # evaluate-retrieval: the encoder's options with --bm25; the sample's seed without a sample
    _case("retrieval-doc-model-bm25", [*BM25, "--doc-model", f"{W}/parallel"], "--doc-model"),
    _case("retrieval-pooling-bm25", [*BM25, "--pooling", "cls"], "--pooling"),
    _case("retrieval-no-normalize-bm25", [*BM25, "--no-normalize"], "--normalize"),
    _case("retrieval-max-query-length-bm25", [*BM25, "--max-query-length", "8"], "--max-query-length"),
    _case("retrieval-max-doc-length-bm25", [*BM25, "--max-doc-length", "8"], "--max-doc-length"),
    _case("retrieval-threads-bm25", [*BM25, "--threads", "1"], "--threads"),
    _case("retrieval-cache-dir-bm25", [*BM25, "--cache-dir", "cache"], "--cache-dir"),
    _case("retrieval-no-cache-bm25", [*BM25, "--no-cache"], "--no-cache"),
    _case("retrieval-seed-no-sample", [*ENC, "--seed", "3"], "--seed"),
    # monitor
    _case("monitor-confidence-no-gate", [*MON, "--confidence", "0.9"], "--confidence"),
    _case("monitor-ci-with-confidence", [*MON, "--gate", "four_fifths@5", "--confidence", "0.9", "--ci", "0.8"],
          "--ci"),
    _case("monitor-n-boot-no-ci", [*MON, "--ci", "0", "--n-boot", "50"], "--n-boot"),
    _case("monitor-ci-seed-no-ci", [*MON, "--ci", "0", "--ci-seed", "2"], "--ci-seed"),
    _case("monitor-allow-unverified-no-model", [*MON, "--allow-unverified"], "--allow-unverified"),
    _case("monitor-experiment-no-track", [*MON, "--experiment", "e"], "--experiment"),
    _case("monitor-na-values-parquet", [*[a if a != f"{W}/test.csv" else f"{W}/test.parquet" for a in MON],
                                        "--na-values", ""], "--na-values"),
    _case("monitor-duplicates-item", [*MON, "--item", "x1", "--duplicate-rows", "keep"], "--duplicate-rows"),
    # promote: the evaluation's options without --data, a ranker's with a retriever's folder and back
    *[_case(f"promote-{opt.strip('-')}-no-data", [*PROMOTE, opt, value], opt) for opt, value in (
        ("--experiment", "e"), ("--group", "race"), ("--query", "q"), ("--judgment", "j"), ("--item", "i"),
        ("--format", "csv"), ("--na-values", ""), ("--duplicate-rows", "keep"), ("--ci", "0.9"),
        ("--min-category-share", "0.1"), ("--n-boot", "50"), ("--ci-seed", "2"), ("--confidence", "0.9"),
        ("--languages", "en"), ("--split", "dev"), ("--max-items", "5"))],
    _case("plrank-disparity-lambda-0", ["train", "plrank", "--train", f"{W}/train.csv", "--lambda", "0", "--disparity",
                                        "hinge", "--no-track", "--out", "out"], "--disparity"),
    _case("plrank-merit-lambda-0", ["train", "plrank", "--train", f"{W}/train.csv", "--lambda", "0", "--merit",
                                    "--no-track", "--out", "out"], "--merit"),
    _case("plrank-experiment-no-track", ["train", "plrank", "--train", f"{W}/train.csv", "--experiment", "e",
                                         "--no-track", "--out", "out"], "--experiment"),
    _case("train-serve-overrides-no-track", [*TRAIN, "--serve-overrides", "k"], "--serve-overrides"),
    _case("train-decision-log-no-track", [*TRAIN, "--decision-log", "logs"], "--decision-log"),
    _case("verify-alias-alias-with-all", ["verify-alias", "--model", "m", "--all", "--alias", "prod"], "--alias"),
    _case("webhook-receiver-url-without-register", ["webhook-receiver", "--secret-env", "S", "--url", "http://x/h"],
          "--url"),
    _case("webhook-receiver-name-without-register", ["webhook-receiver", "--secret-env", "S", "--webhook-name", "w"],
          "--webhook-name"),
    _case("promote-no-champion-absolute-gates", [*P_FILE, "--no-champion", "fail"], "--no-champion"),
    _case("promote-if-champion-unavailable-absolute-gates", [*P_FILE, "--if-champion-unavailable", "pass"],
          "--if-champion-unavailable"),
    _case("promote-group-retriever", [*P_DIR, "--group", "race"], "--group"),
    _case("promote-ci-retriever", [*P_DIR, "--ci", "0.9"], "--ci"),
    _case("promote-confidence-retriever", [*P_DIR, "--confidence", "0.9"], "--confidence"),
    _case("promote-languages-ranker", [*P_FILE, "--languages", "en"], "--languages"),
    _case("promote-split-ranker", [*P_FILE, "--split", "dev"], "--split"),
    _case("promote-max-items-ranker", [*P_FILE, "--max-items", "5"], "--max-items"),
    _case("promote-ci-with-confidence", [*P_FILE, "--confidence", "0.9", "--ci", "0.8"], "--ci"),
    _case("promote-n-boot-no-intervals", [*P_FILE, "--n-boot", "50"], "--n-boot"),
    # evaluate-model: a ranker's options with a retriever's folder and back
    _case("evaluate-model-languages-ranker", [*EM_FILE, "--languages", "en"], "--languages"),
    _case("evaluate-model-split-ranker", [*EM_FILE, "--split", "dev"], "--split"),
    _case("evaluate-model-max-items-ranker", [*EM_FILE, "--max-items", "5"], "--max-items"),
    _case("evaluate-model-n-boot-no-intervals", [*EM_FILE, "--n-boot", "50"], "--n-boot"),
    *[_case(f"evaluate-model-{opt.strip('-')}-retriever", [*EM_DIR, opt, value], opt) for opt, value in (
        ("--k", "5"), ("--compare-with", "models:/m/2"), ("--ci", "0.9"), ("--min-category-share", "0.1"),
        ("--n-boot", "50"), ("--ci-seed", "3"), ("--group", "race"), ("--format", "csv"), ("--query", "q"),
        ("--judgment", "j"), ("--item", "i"), ("--na-values", ""), ("--duplicate-rows", "keep"))],
    # sweep: one method's settings with another method
    *[_case(f"sweep-{opt.strip('-')}-ranking-method", [*SWEEP, "--method", "deltr", opt, value], opt)
      for opt, value in (("--encoder", "e"), ("--dpr-loss", "mse_align"), ("--steps", "3"), ("--batch-size", "4"),
                         ("--max-train-items", "5"), ("--max-test-items", "5"))],
    _case("sweep-loss-fair-post", [*SWEEP, "--method", "fair-post", "--loss", "exposure_symmetric"], "--loss"),
    _case("sweep-loss-dpr", [*SW_DPR, "--loss", "exposure_symmetric"], "--loss"),
    _case("sweep-fair-p-range-deltr", [*SWEEP, "--method", "deltr", "--fair-p-range", "0.1,0.5"], "--fair-p-range"),
    _case("sweep-fair-p-range-lambdamart", [*SWEEP, "--method", "lambdamart", "--fair-p-range", "0.1,0.5"],
          "--fair-p-range"),
    _case("sweep-fair-alpha-range-detconstsort", [*SWEEP, "--method", "detconstsort", "--fair-alpha-range",
                                                  "0.05,0.2"], "--fair-alpha-range"),
    _case("sweep-fair-alpha-range-dpr", [*SW_DPR, "--fair-alpha-range", "0.05,0.2"], "--fair-alpha-range"),
    _case("sweep-max-iter-lambdamart", [*SWEEP, "--method", "lambdamart", "--max-iter", "5"], "--max-iter"),
    _case("sweep-max-iter-lambdamart-fair", [*SWEEP, "--method", "lambdamart+fair", "--max-iter", "5"], "--max-iter"),
    _case("sweep-max-iter-dpr", [*SW_DPR, "--max-iter", "5"], "--max-iter"),
    *[_case(f"sweep-{opt.strip('-')}-dpr", [*SW_DPR, opt, value], opt) for opt, value in (
        ("--query", "q"), ("--group", "race"), ("--judgment", "j"), ("--item", "i"), ("--na-values", ""),
        ("--duplicate-rows", "keep"))],
    _case("sweep-na-values-parquet", ["sweep", "--train", f"{W}/train.parquet", "--test", f"{W}/test.parquet",
                                      "--trials", "1", "--study", "s", "--out", "sw", "--no-mlflow", "--method",
                                      "deltr", "--na-values", ""], "--na-values"),
    _case("sweep-duplicates-item", [*SWEEP, "--method", "deltr", "--item", "x1", "--duplicate-rows", "keep"],
          "--duplicate-rows"),
    _case("sweep-register-best-plrank", [*SW_TRACKED, "--method", "plrank", "--register-best", "m"],
          "--register-best"),
    _case("sweep-register-best-dpr", [*[a for a in SW_DPR if a != "--no-mlflow"], "--register-best", "m"],
          "--register-best"),
    _case("sweep-register-best-no-mlflow", [*SWEEP, "--method", "fair-post", "--register-best", "m"],
          "--register-best"),
    _case("sweep-population-size-tpe", [*SWEEP, "--method", "deltr", "--sampler", "tpe", "--population-size", "8"],
          "--population-size"),
    _case("sweep-heartbeat-journal", [*SWEEP, "--method", "deltr", "--storage", "journal:j.log",
                                      "--heartbeat-interval", "2"], "--heartbeat-interval"),
    _case("sweep-experiment-no-mlflow", [*SWEEP, "--method", "deltr", "--experiment", "e"], "--experiment"),
    _case("sweep-tracking-uri-no-mlflow", [*SWEEP, "--method", "deltr", "--tracking-uri", "sqlite:///m.db"],
          "--tracking-uri"),
]


def _snapshot(*folders: Path) -> dict[str, int]:
    return {str(p): p.stat().st_size for folder in folders for p in sorted(folder.rglob("*"))}


@pytest.fixture
def cwd(tmp_path, monkeypatch):
    """An empty working folder; MLflow would write its store there (it must not)."""
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{work / 'mlflow.db'}")
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    return work


def _declared_reason(argv: list[str], option: str) -> str | None:
    """The reason the command's declaration gives for ``option`` on this command line."""
    cmd, rest = cli, list(argv)
    while isinstance(cmd, click.Group):
        cmd, rest = cmd.commands[rest[0]], rest[1:]
    ctx = cmd.make_context(cmd.name, rest)
    param = next(p for p in cmd.params if option in (*p.opts, *getattr(p, "secondary_opts", ())))
    return rules_of(cmd).reasons(command_values(ctx))[param.name]


@pytest.mark.parametrize("argv,option", CASES)
def test_an_option_that_would_be_ignored_is_refused(ws, cwd, argv, option):
    before = _snapshot(ws)
    argv = [a.replace(W, str(ws)) for a in argv]
    result = CliRunner().invoke(cli, argv)
    lines = [line for line in result.output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("Error:")]
    assert result.exit_code == 2, result.output
    assert len(errors) == 1 and lines == errors, result.output
    reason = _declared_reason(argv, option)  # the option's own rule refused it, not another error
    assert reason is not None and reason.startswith(option) and reason in errors[0], (reason, errors[0])
    assert "Traceback" not in result.output and not isinstance(result.exception, (KeyError, TypeError))
    assert list(cwd.iterdir()) == [], "a refused command created files"  # outputs, mlflow.db, optuna.db
    assert _snapshot(ws) == before


def test_the_cases_cover_every_command_with_rules():
    paths = {tuple(w for w in p.values[0][:2] if not w.startswith("-")) for p in CASES}
    firsts = {p[0] if p[0] not in ("train", "reproduce") else " ".join(p) for p in paths}
    assert {"rerank", "train deltr", "evaluate", "quickstart", "reproduce deltr", "train lambdamart", "train dpr",
            "evaluate-retrieval", "monitor", "promote", "evaluate-model", "sweep"} <= firsts
    assert len(CASES) >= 120 and len({p.id for p in CASES}) == len(CASES)


# ---------------------------------------------------------------------------------- defaults never refuse
CONTROLS = [
    pytest.param([*RERANK, "--method", "detconstsort"], "rr.csv", id="rerank-geyik-defaults"),
    pytest.param([*RERANK, "--p", "0.4", "--alpha", "0.2", "--no-adjust"], "rr.csv", id="rerank-fair-options"),
    pytest.param([*TRAIN, "--max-iter", "3", "--ci", "0.9", "--n-boot", "20"], "out/model.json",
                 id="deltr-estimator-options"),
    pytest.param([*EVAL, "--ci", "0.9", "--n-boot", "20", "--ci-seed", "1", "--out", "m.json"], "m.json",
                 id="evaluate-intervals"),
]


@pytest.mark.parametrize("argv,written", CONTROLS)
def test_without_the_refused_option_the_command_runs(ws, cwd, argv, written):
    """The cases' commands minus the refused option run to the end: the refusal, not another
    error, stopped them (and a default is never refused)."""
    result = CliRunner().invoke(cli, [a.replace(W, str(ws)) for a in argv])
    assert result.exit_code == 0, result.output
    assert (cwd / written).is_file()


def _probe_command():
    @click.command()
    @click.option("--mode", default="a")
    @click.option("--knob", type=int, default=1, envvar="FAIRLTR_TEST_KNOB")
    @option_rules({"knob": lambda v: None if v["mode"] == "b" else "--knob applies to --mode b"}, always=("mode",))
    def probe(mode, knob):
        click.echo(f"ran {mode} {knob}")

    return probe


@pytest.mark.parametrize("argv,env,default_map,refused", [
    (["--knob", "2"], {}, None, True),  # the command line
    ([], {"FAIRLTR_TEST_KNOB": "2"}, None, True),  # its environment variable
    ([], {}, None, False),  # the default
    ([], {}, {"knob": 2}, False),  # a default map (configuration, not the user's command line)
    (["--mode", "b", "--knob", "2"], {}, None, False),  # given where it applies
])
def test_only_what_the_user_gave_is_refused(argv, env, default_map, refused):
    result = CliRunner().invoke(_probe_command(), argv, env=env, default_map=default_map)
    if refused:
        assert result.exit_code == 2 and "--knob applies to --mode b" in result.output, result.output
        assert "ran" not in result.output
    else:
        assert result.exit_code == 0 and "ran" in result.output, result.output


def test_several_refusals_make_one_line_in_help_order():
    @click.command()
    @click.option("--a", default=0)
    @click.option("--b", default=0)
    @click.option("--c", default=0)
    def probe(a, b, c):
        ctx = click.get_current_context()
        refuse_unused(ctx, {"c": "--c is off", "a": "--a is off", "b": None})

    result = CliRunner().invoke(probe, ["--c", "1", "--a", "1", "--b", "1"])
    assert result.exit_code == 2 and "--a is off | --c is off" in result.output


def test_a_stale_declaration_is_a_bug_not_a_usage_error():
    @click.command()
    @click.option("--a", default=0)
    @option_rules({}, always=("a", "gone"))
    def probe(a):
        pass

    result = CliRunner().invoke(probe, [])
    assert isinstance(result.exception, RuntimeError) and "gone" in str(result.exception)


# ---------------------------------------------------------------------------------- every option is declared
PENDING: dict = {}  # commands whose declaration is still to come (none)
GROUP_OPTIONS = {"help", "version", "verbose"}  # the groups' own options: --help, --version, --verbose (always used)


def _commands():
    out = []

    def walk(group: click.Group, prefix: tuple[str, ...]) -> None:
        assert {p.name for p in group.params} <= GROUP_OPTIONS, (prefix, [p.name for p in group.params])
        for name, command in group.commands.items():
            if isinstance(command, click.Group):
                walk(command, (*prefix, name))
            else:
                out.append((*prefix, name))

    walk(cli, ())
    return out


def _command(path):
    cmd = cli
    for name in path:
        cmd = cmd.commands[name]
    return cmd


@pytest.mark.parametrize("path", [pytest.param(p, id=" ".join(p), marks=pytest.mark.xfail(strict=True,
                                                                                            reason=PENDING[p]))
                                  if p in PENDING else pytest.param(p, id=" ".join(p)) for p in _commands()])
def test_every_option_is_declared_used_when_or_always(path):
    cmd = _command(path)
    declaration = rules_of(cmd)
    assert declaration is not None, f"{' '.join(path)} declares no option rules (fairltr.cli.option_rules)"
    options = {p.name for p in cmd.params if p.name != "help"}
    assert declaration.declared == options, (f"undeclared: {sorted(options - declaration.declared)}, "
                                             f"unknown: {sorted(declaration.declared - options)}")
    assert not set(declaration.rules) & declaration.always


def test_the_walk_finds_every_command():
    paths = _commands()
    assert len(paths) >= 16 and ("train", "deltr") in paths and ("fair", "mtable") in paths


# ---------------------------------------------------------------------------------- start-up and wiring
PROBE = """
import json, sys
from fairltr.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in ("torch", "mlflow", "lightning", "optuna", "transformers", "pandas") if m in sys.modules)
print(json.dumps({"code": code, "heavy": heavy}), file=sys.stderr)
"""


@pytest.mark.parametrize("argv", [
    ["rerank", "--input", "x.csv", "--out", "y.csv", "--method", "detconstsort", "--alpha", "0.2"],
    ["train", "deltr", "--train", "x.csv", "--gamma", "1", "--epochs", "3"],
    ["sweep", "--method", "lambdamart", "--train", "a", "--test", "b", "--trials", "1", "--study", "s",
     "--max-iter", "3"],
    ["evaluate-model", "--model-uri", "models:/m/1", "--data", ".", "--group", "race"],
], ids=["rerank", "train-deltr", "sweep", "evaluate-model"])
def test_a_refusal_loads_neither_torch_nor_mlflow(argv, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env, timeout=120,
                          cwd=tmp_path)
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == {"code": 2, "heavy": []}, proc.stderr
    assert list(tmp_path.iterdir()) == []


class _Stop(Exception):
    pass


@pytest.mark.parametrize("extra,optimizer,lr", [
    ([], None, None),  # the engine picks by batch shape
    (["--optimizer", "adam", "--lr", "0.05"], "adam", 0.05),
    (["--optimizer", "lbfgs"], "lbfgs", None),
])
def test_lightning_uses_the_optimizer_and_lr_it_is_given(ws, cwd, monkeypatch, extra, optimizer, lr):
    import fairltr.workflows

    seen = {}

    def fake_train_ranker(cfg, echo=None):
        seen["cfg"] = cfg
        raise _Stop

    monkeypatch.setattr(fairltr.workflows, "train_ranker", fake_train_ranker)
    result = CliRunner().invoke(cli, [a.replace(W, str(ws)) for a in LIT] + extra)
    assert isinstance(result.exception, _Stop), result.output
    lo = seen["cfg"].spec.lightning
    assert (lo.optimizer, lo.lr) == (optimizer, lr)


def test_command_values_hold_the_reading_options():
    seen = {}

    @click.command()
    @click.option("--a", default=0)
    @click.pass_context
    def probe(ctx, a):
        seen.update(command_values(ctx), given=given(ctx, "a"))

    from fairltr.cli.options import reading_options, stack

    probe = stack(reading_options())(probe)
    assert CliRunner().invoke(probe, ["--duplicate-rows", "once"]).exit_code == 0
    assert seen == {"a": 0, "duplicates": "once", "na_values": (), "given": False}
