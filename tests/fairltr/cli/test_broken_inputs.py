"""Off the happy path, through the real CLI: every broken input or option below exits non-zero
with ONE line starting with ``Error:`` that names the problem, no traceback, nothing
half-written in the workspace, and no MLflow run left RUNNING in the store.

The cases run in-process (click's runner) against one workspace of good and broken files and
a local SQLite MLflow store (``MLFLOW_TRACKING_URI``), so commands that track get that far.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli
from fairltr.synthetic import make_biased_rankings
from mlflow_fixtures import running_runs

UNREACHABLE = {"MLFLOW_TRACKING_URI": "http://127.0.0.1:9"}
NO_POSTGRES = {"MLFLOW_TRACKING_URI": "postgresql+psycopg2://fairltr:s3cret@127.0.0.1:9/fairltr_mlflow"}


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    """The workspace: good inputs, broken variants, a model, a scored table, a parallel folder."""
    root = tmp_path_factory.mktemp("broken")
    train, test = make_biased_rankings(8, 6, 0.3, seed=1)
    train.to_csv(root / "train.csv", index=False)
    test.to_csv(root / "test.csv", index=False)
    bad = train.astype({"x3": object})
    bad.loc[4, "x3"] = "abc"
    bad.to_csv(root / "nonnumeric.csv", index=False)
    nan = train.copy()
    nan.loc[2, "x1"] = np.nan
    nan.to_csv(root / "nan.csv", index=False)
    inf = train.copy()
    inf.loc[1, "x2"] = np.inf
    inf.to_csv(root / "inf.csv", index=False)
    neg = train.copy()
    neg.loc[0, "protected"] = -1
    neg.to_csv(root / "neggroup.csv", index=False)
    frac = train.astype({"protected": float})
    frac.loc[0, "protected"] = 0.5
    frac.to_csv(root / "fracgroup.csv", index=False)
    train.drop(columns=["x2"]).to_csv(root / "missing_x2.csv", index=False)
    train.assign(protected=0).to_csv(root / "noprotected.csv", index=False)
    dup = train.assign(doc=[f"d{i % 3}" for i in range(len(train))])
    dup.to_csv(root / "dupitems.csv", index=False)
    (root / "latin1.csv").write_bytes(("query_id,protected,x1,judgment\n1,0,0.5,1\n1,1,caf\xe9,0\n").encode("latin-1"))
    (root / "empty.csv").write_text("")
    (root / "header_only.csv").write_text("query_id,protected,x1,judgment\n")
    (root / "adir").mkdir()
    (root / "afile").write_text("not a folder")
    # a model and damaged copies of it
    from fairltr import DELTR

    model = DELTR(0.0, max_iter=5).fit(train)
    model.save(root / "model.json")
    model.save(root / "model.safetensors")
    blob = (root / "model.safetensors").read_bytes()
    (root / "truncated.safetensors").write_bytes(blob[: len(blob) // 2])
    (root / "zero.safetensors").write_bytes(b"")
    (root / "garbage.json").write_text("{not json")
    state = json.loads((root / "model.json").read_text())
    state["mean"] = state["mean"][:1]
    (root / "shortmean.json").write_text(json.dumps(state))
    # a scored table for FA*IR
    scored = test.assign(score=np.linspace(1, 0, len(test)))
    scored.to_csv(root / "scored.csv", index=False)
    scored.astype({"score": object}).assign(score=["x"] + list(scored["score"].iloc[1:])).to_csv(
        root / "scored_bad.csv", index=False)
    # a parallel-query folder, and one missing its files
    from tiny_models import write_parallel_layout

    write_parallel_layout(root / "parallel")
    (root / "emptyfolder").mkdir()
    (root / "notamodel").mkdir()
    _broken_parallel_layouts(root)
    # a query id beyond int64 (pandas reads it as uint64), and an unterminated quote on file line 52
    big = train.astype({"query_id": object})
    big.loc[big["query_id"] == big["query_id"].iloc[-1], "query_id"] = 2**63 + 5
    big.to_csv(root / "bigqid.csv", index=False)
    longer = pd.concat([train, train.assign(query_id=train["query_id"] + 100)])
    lines = longer.to_csv(index=False).splitlines()
    assert len(lines) > 60
    head, rest = lines[51].split(",", 1)
    lines[51] = f'{head},"{rest}'
    (root / "openquote.csv").write_text("\n".join(lines) + "\n")
    return root


def _broken_parallel_layouts(root: Path) -> None:
    """Copies of the parallel folder, each with one broken line."""
    import shutil

    def variant(name: str, file: str, edit) -> None:
        shutil.copytree(root / "parallel", root / name)
        path = root / name / file
        lines = path.read_bytes().splitlines(keepends=True)
        edit(lines)
        path.write_bytes(b"".join(lines))

    def latin1(lines):
        obj = json.loads(lines[2])
        lines[2] = json.dumps({**obj, "text": "caf\u00e9"}, ensure_ascii=False).encode("latin-1") + b"\n"

    def null_text(lines):
        lines[3] = json.dumps({**json.loads(lines[3]), "text": None}).encode() + b"\n"

    def orphan_qrel(lines):
        lines.append(b"p999\td0\t1\ttest\n")

    variant("par_latin1", "queries.jsonl", latin1)
    variant("par_nulltext", "corpus.jsonl", null_text)
    variant("par_orphanqrel", "qrels.tsv", orphan_qrel)


def case(id_, args, *expect, env=None):
    return pytest.param(args, expect, env or {}, id=id_)


T, S = "{ws}/train.csv", "{ws}/test.csv"
TRAIN = ["train", "deltr", "--train", T, "--gamma", "10", "--max-iter", "5", "--out", "{ws}/out/train"]
NT = ["--no-track"]
TRAIN_L = [w for i, w in enumerate(TRAIN) if w != "--max-iter" and TRAIN[i - 1] != "--max-iter"]  # lightning: --epochs
SWEEP = ["sweep", "--method", "deltr", "--train", T, "--test", S, "--trials", "2", "--study", "s",
         "--out", "{ws}/out/sweep", "--no-mlflow", "--no-progress"]
DPR = ["train", "dpr", "--data", "{ws}/parallel", "--out", "{ws}/out/dpr", "--no-track", "--steps", "1"]
ER = ["evaluate-retrieval", "--data", "{ws}/parallel"]
RR = ["rerank", "--input", "{ws}/scored.csv", "--p", "0.3", "--out", "{ws}/out/fair.csv"]
EV = ["evaluate", "--model", "{ws}/model.json", "--data", S]
QS = ["quickstart", "--queries", "6", "--candidates", "5", "--out", "{ws}/out/qs"]

CASES = [
    # ---- train deltr: data
    case("train-missing-file", ["train", "deltr", "--train", "{ws}/nope.csv", "--gamma", "1", *NT], "file not found", "nope.csv"),
    case("train-directory", ["train", "deltr", "--train", "{ws}/adir", "--gamma", "1", *NT], "adir"),
    case("train-empty-file", ["train", "deltr", "--train", "{ws}/empty.csv", "--gamma", "1", *NT], "empty"),
    case("train-header-only", ["train", "deltr", "--train", "{ws}/header_only.csv", "--gamma", "1", *NT], "header_only.csv"),
    case("train-nonnumeric", [*TRAIN[:3], "{ws}/nonnumeric.csv", *TRAIN[4:], *NT], "nonnumeric.csv:6", "'x3'", "'abc'"),
    case("train-nan", [*TRAIN[:3], "{ws}/nan.csv", *TRAIN[4:], *NT], "nan.csv:4", "'x1'", "query"),
    case("train-inf", [*TRAIN[:3], "{ws}/inf.csv", *TRAIN[4:], *NT], "inf.csv:3", "'x2'"),
    case("train-negative-group", [*TRAIN[:3], "{ws}/neggroup.csv", *TRAIN[4:], *NT], "neggroup.csv:2", ">= 0"),
    case("train-fractional-group", [*TRAIN[:3], "{ws}/fracgroup.csv", *TRAIN[4:], *NT], "fracgroup.csv:2", "integers"),
    case("train-latin1", [*TRAIN[:3], "{ws}/latin1.csv", *TRAIN[4:], *NT], "latin1.csv:3", "UTF-8"),
    case("train-missing-query-column", [*TRAIN, *NT, "--query", "qq"], "qq"),
    case("train-judgment-is-group", [*TRAIN, *NT, "--judgment", "protected"], "must differ", "'protected'"),
    case("train-query-is-group", [*TRAIN, *NT, "--query", "protected"], "must differ"),
    case("train-no-protected-rows", [*TRAIN[:3], "{ws}/noprotected.csv", *TRAIN[4:], *NT], "no protected", "gamma"),
    case("train-duplicate-items", [*TRAIN[:3], "{ws}/dupitems.csv", *TRAIN[4:], *NT, "--item", "doc"], "duplicate", "'d"),
    case("train-missing-item-column", [*TRAIN, *NT, "--item", "doc"], "doc"),
    case("train-format-letor-on-csv", [*TRAIN, *NT, "--format", "letor"], "train.csv"),
    case("train-format-deltr-on-headered", [*TRAIN, *NT, "--format", "deltr"], "train.csv"),
    case("train-test-missing", [*TRAIN, *NT, "--test", "{ws}/nope.csv"], "nope.csv"),
    case("train-test-nonnumeric", [*TRAIN, *NT, "--test", "{ws}/nonnumeric.csv"], "nonnumeric.csv:6", "'x3'"),
    case("train-test-missing-feature", [*TRAIN, *NT, "--test", "{ws}/missing_x2.csv"], "x2"),
    case("train-features-unknown", [*TRAIN, *NT, "--features", "x1,nope"], "nope"),
    case("train-features-empty", [*TRAIN, *NT, "--features", ","], "feature"),
    case("train-query-id-beyond-int64", [*TRAIN[:3], "{ws}/bigqid.csv", *TRAIN[4:], *NT], "bigqid.csv:", "'query_id'",
         "9223372036854775813", "64-bit"),
    case("train-unterminated-quote", [*TRAIN[:3], "{ws}/openquote.csv", *TRAIN[4:], *NT], "openquote.csv:52:",
         "unterminated quote"),
    # ---- train deltr: options
    case("train-gamma-negative", [*TRAIN[:5], "-1", *TRAIN[6:], *NT], "gamma"),
    case("train-gamma-nan", [*TRAIN[:5], "nan", *TRAIN[6:], *NT], "gamma"),
    case("train-gamma-inf", [*TRAIN[:5], "inf", *TRAIN[6:], *NT], "gamma"),
    case("train-gamma-text", [*TRAIN[:5], "abc", *TRAIN[6:], *NT], "--gamma"),
    case("train-l2-nan", [*TRAIN, *NT, "--l2", "nan"], "l2"),
    case("train-l2-negative", [*TRAIN, *NT, "--l2", "-1"], "l2"),
    case("train-max-iter-zero", [*TRAIN[:7], "0", *TRAIN[8:], *NT], "max_iter"),
    case("train-lr-zero", [*TRAIN, *NT, "--lr", "0"], "lr"),
    case("train-lr-nan", [*TRAIN, *NT, "--lr", "nan"], "lr"),
    case("train-device-banana", [*TRAIN, *NT, "--device", "banana"], "banana"),
    case("train-device-missing-gpu", [*TRAIN, *NT, "--device", "cuda:7"], "cuda:7"),
    case("train-loss-wrong-kind", [*TRAIN, *NT, "--fairness-loss", "lakda_kl"], "lakda_kl"),
    case("train-loss-unknown", [*TRAIN, *NT, "--fairness-loss", "nope"], "nope"),
    case("train-fair-p-out-of-range", [*TRAIN, *NT, "--fair-preprocess", "1.5"], "p must be in"),
    case("train-fair-alpha-zero", [*TRAIN, *NT, "--fair-preprocess", "0.3", "--fair-alpha", "0"], "alpha"),
    case("train-model-format", [*TRAIN, *NT, "--model-format", "pkl"], "--model-format"),
    case("train-engine-unknown", [*TRAIN, *NT, "--engine", "spark"], "--engine"),
    case("train-epochs-zero", [*TRAIN_L, *NT, "--engine", "lightning", "--epochs", "0"], "epochs must be"),
    case("train-batch-queries-zero", [*TRAIN_L, *NT, "--engine", "lightning", "--batch-queries", "0"], "batch_queries"),
    case("train-devices-zero", [*TRAIN_L, *NT, "--engine", "lightning", "--devices", "0"], "devices"),
    case("train-out-under-file", [*TRAIN[:-1], "{ws}/afile/out", *NT], "afile"),
    case("train-out-is-file", [*TRAIN[:-1], "{ws}/afile", *NT], "afile"),
    case("train-register-without-tracking", [*TRAIN, *NT, "--register", "m"], "--no-track"),
    case("train-tracking-unreachable", TRAIN, "127.0.0.1:9", env=UNREACHABLE),
    case("train-tracking-postgres-unreachable", TRAIN, "fairltr:***@127.0.0.1:9", "Connection refused", env=NO_POSTGRES),
    case("train-tracking-bad-sqlite-folder", TRAIN, "not writable", env={"MLFLOW_TRACKING_URI": "sqlite:////nonexistent/dir/m.db"}),
    # ---- evaluate
    case("evaluate-model-missing", ["evaluate", "--model", "{ws}/none.json", "--data", S], "none.json"),
    case("evaluate-model-garbage", ["evaluate", "--model", "{ws}/garbage.json", "--data", S], "garbage.json"),
    case("evaluate-model-truncated", ["evaluate", "--model", "{ws}/truncated.safetensors", "--data", S], "truncated.safetensors"),
    case("evaluate-model-zero-bytes", ["evaluate", "--model", "{ws}/zero.safetensors", "--data", S], "zero.safetensors"),
    case("evaluate-model-short-mean", ["evaluate", "--model", "{ws}/shortmean.json", "--data", S], "mean"),
    case("evaluate-model-suffix", ["evaluate", "--model", "{ws}/train.csv", "--data", S], "train.csv"),
    case("evaluate-data-nonnumeric", [*EV[:4], "{ws}/nonnumeric.csv"], "nonnumeric.csv:6", "'x3'"),
    case("evaluate-data-nan", [*EV[:4], "{ws}/nan.csv"], "nan.csv:4", "query"),
    case("evaluate-data-missing-feature", [*EV[:4], "{ws}/missing_x2.csv"], "x2"),
    case("evaluate-data-missing", [*EV[:4], "{ws}/nope.csv"], "nope.csv"),
    case("evaluate-k-zero", [*EV, "--k", "0"], "--k"),
    case("evaluate-k-negative", [*EV, "--k", "-3"], "--k"),
    case("evaluate-k-text", [*EV, "--k", "a,b"], "--k"),
    case("evaluate-out-under-file", [*EV, "--out", "{ws}/afile/m.json"], "afile"),
    case("evaluate-out-suffix", [*EV, "--out", "{ws}/out/m.txt"], ".txt"),
    case("evaluate-predictions-suffix", [*EV, "--predictions", "{ws}/out/p.txt"], ".txt"),
    # ---- quickstart
    case("quickstart-one-query", [*QS[:2], "1", *QS[3:], *NT], "n_queries"),
    case("quickstart-one-candidate", [*QS[:4], "1", *QS[5:], *NT], "n_candidates"),
    case("quickstart-share-zero", [*QS, *NT, "--protected-share", "0"], "protected_share"),
    case("quickstart-share-above-one", [*QS, *NT, "--protected-share", "1.5"], "protected_share"),
    case("quickstart-gamma-zero", [*QS, *NT, "--gamma", "0"], "gamma"),
    case("quickstart-out-under-file", [*QS[:-1], "{ws}/afile/qs", *NT], "afile"),
    case("quickstart-tracking-unreachable", QS, "127.0.0.1:9", env=UNREACHABLE),
    case("quickstart-tracking-postgres-unreachable", QS, "127.0.0.1:9", "Connection refused", env=NO_POSTGRES),
    case("dpr-tracking-postgres-unreachable", [*DPR[:-3], "--steps", "1"], "127.0.0.1:9", "Connection refused",
         env=NO_POSTGRES),
    # ---- reproduce
    case("reproduce-data-missing", ["reproduce", "deltr", "--data", "{ws}/nope", "--out", "{ws}/out/rep"], "nope"),
    case("reproduce-data-layout", ["reproduce", "deltr", "--data", "{ws}/adir", "--out", "{ws}/out/rep"], "layout"),
    case("reproduce-unknown-dataset", ["reproduce", "deltr", "--data", "{ws}/adir", "--datasets", "law-x"], "law-x"),
    case("reproduce-no-dataset", ["reproduce", "deltr", "--data", "{ws}/adir", "--datasets", ","], "dataset"),
    case("reproduce-out-under-file", ["reproduce", "deltr", "--data", "{ws}/adir", "--out", "{ws}/afile/x"], "afile"),
    # ---- rerank and mtable
    case("rerank-input-missing", [*RR[:2], "{ws}/nope.csv", *RR[3:]], "nope.csv"),
    case("rerank-scores-col-missing", [*RR, "--scores-col", "s"], "'s'"),
    case("rerank-score-not-numeric", [*RR[:2], "{ws}/scored_bad.csv", *RR[3:]], "scored_bad.csv:2", "'x'"),
    case("rerank-p-zero", [*RR[:4], "0", *RR[5:]], "p must be in"),
    case("rerank-p-above-one", [*RR[:4], "1.5", *RR[5:]], "p must be in"),
    case("rerank-alpha-zero", [*RR, "--alpha", "0"], "alpha"),
    case("rerank-k-zero", [*RR, "--k", "0"], "k must be"),
    case("rerank-out-suffix", [*RR[:-1], "{ws}/out/fair.txt"], ".txt"),
    case("rerank-out-under-file", [*RR[:-1], "{ws}/afile/fair.csv"], "afile"),
    case("rerank-negative-group", [*RR[:2], "{ws}/neggroup.csv", *RR[3:], "--scores-col", "x1"], "neggroup.csv:2"),
    case("mtable-k-zero", ["fair", "mtable", "--k", "0", "--p", "0.5"], "k must be"),
    case("mtable-k-huge", ["fair", "mtable", "--k", "100000000", "--p", "0.5"], "100000000"),
    case("mtable-p-zero", ["fair", "mtable", "--k", "10", "--p", "0"], "p must be in"),
    case("mtable-alpha-one", ["fair", "mtable", "--k", "10", "--p", "0.5", "--alpha", "1"], "alpha"),
    case("mtable-p-text", ["fair", "mtable", "--k", "10", "--p", "abc"], "--p"),
    # ---- train dpr
    case("dpr-model-missing", [*DPR, "--model", "/nonexistent/model"], "/nonexistent/model"),
    case("dpr-model-empty-string", [*DPR, "--model", ""], "--model"),
    case("dpr-model-empty-dir", [*DPR, "--model", "{ws}/notamodel"], "notamodel"),
    case("dpr-data-missing", [*DPR[:3], "{ws}/nope", *DPR[4:], "--model", "{ws}/notamodel"], "nope"),
    case("dpr-data-empty-folder", [*DPR[:3], "{ws}/emptyfolder", *DPR[4:], "--model", "{ws}/notamodel"], "emptyfolder"),
    case("dpr-steps-zero", [*DPR[:-1], "0", "--model", "{ws}/notamodel"], "steps"),
    case("dpr-batch-size-zero", [*DPR, "--batch-size", "0", "--model", "{ws}/notamodel"], "batch_size"),
    case("dpr-alpha-negative", [*DPR, "--alpha", "-1", "--model", "{ws}/notamodel"], "alpha"),
    case("dpr-loss-ranking", [*DPR, "--fairness-loss", "exposure_hinge"], "--fairness-loss"),
    case("dpr-threads-zero", [*DPR, "--threads", "0", "--model", "{ws}/notamodel"], "threads"),
    case("dpr-queries-not-utf8", [*DPR[:3], "{ws}/par_latin1", *DPR[4:]], "par_latin1/queries.jsonl, line 3",
         "not UTF-8", "0xe9"),
    case("dpr-corpus-null-text", [*DPR[:3], "{ws}/par_nulltext", *DPR[4:]], "par_nulltext/corpus.jsonl, line 4",
         "'text' is null"),
    case("dpr-qrel-without-query", [*DPR[:3], "{ws}/par_orphanqrel", *DPR[4:]], "par_orphanqrel/qrels.tsv, line 14",
         "parallel_id 'p999'", "queries.jsonl"),
    case("dpr-out-under-file", [*DPR[:5], "{ws}/afile/dpr", *DPR[6:], "--model", "{ws}/notamodel"], "afile"),
    # ---- evaluate-retrieval
    case("retrieval-k-zero", [*ER, "--bm25", "--k", "0"], "k"),
    case("retrieval-mrc-k-zero", [*ER, "--bm25", "--mrc-k", "0"], "mrc_k"),
    case("retrieval-max-items-zero", [*ER, "--bm25", "--max-items", "0"], "max_items"),
    case("retrieval-model-empty-dir", [*ER, "--model", "{ws}/notamodel"], "notamodel"),
    case("retrieval-model-and-bm25", [*ER, "--bm25", "--model", "{ws}/notamodel"], "exactly one"),
    case("retrieval-neither", ER, "exactly one"),
    case("retrieval-split-unknown", [*ER, "--bm25", "--split", "nope"], "nope"),
    case("retrieval-language-unknown", [*ER, "--bm25", "--languages", "zz"], "zz"),
    case("retrieval-data-missing", ["evaluate-retrieval", "--data", "{ws}/nope", "--bm25"], "nope"),
    case("retrieval-queries-not-utf8", ["evaluate-retrieval", "--data", "{ws}/par_latin1", "--bm25"],
         "par_latin1/queries.jsonl, line 3", "not UTF-8"),
    case("retrieval-corpus-null-text", ["evaluate-retrieval", "--data", "{ws}/par_nulltext", "--bm25"],
         "par_nulltext/corpus.jsonl, line 4", "'text' is null"),
    case("retrieval-qrel-without-query", ["evaluate-retrieval", "--data", "{ws}/par_orphanqrel", "--bm25"],
         "par_orphanqrel/qrels.tsv, line 14", "'p999'"),
    case("retrieval-out-under-file", [*ER, "--bm25", "--out", "{ws}/afile/e.json"], "afile"),
    # ---- MLflow commands
    case("promote-bad-gate", ["promote", "--model", "m", "--version", "1", "--gate", "exposure_ratio=>0.9"], "gate"),
    case("promote-injection", ["promote", "--model", "m", "--version", "1", "--gate", "__import__('os')>=1"], "gate"),
    case("promote-unknown-metric", ["promote", "--model", "m", "--version", "1", "--gate", "nope>=1"], "nope"),
    case("promote-no-gate", ["promote", "--model", "m", "--version", "1"], "gate"),
    case("promote-unreachable", ["promote", "--model", "m", "--version", "1", "--gate", "exposure_ratio>=0.9"],
         "127.0.0.1:9", env=UNREACHABLE),
    case("promote-unknown-model", ["promote", "--model", "no-such-model", "--version", "1", "--gate", "kendall_tau>=0"],
         "no-such-model"),
    case("evaluate-model-unreachable", ["evaluate-model", "--model-uri", "models:/m/1", "--data", S], "127.0.0.1:9",
         env=UNREACHABLE),
    case("evaluate-model-k-zero", ["evaluate-model", "--model-uri", "models:/m/1", "--data", S, "--k", "0"], "--k"),
    case("evaluate-model-unknown", ["evaluate-model", "--model-uri", "models:/no-such-model/1", "--data", S], "no-such-model"),
    case("compare-runs-unreachable", ["compare-runs", "--experiment", "x"], "127.0.0.1:9", env=UNREACHABLE),
    case("compare-runs-out-suffix", ["compare-runs", "--experiment", "x", "--out", "{ws}/out/f.txt"], ".txt"),
    case("compare-runs-unknown-experiment", ["compare-runs", "--experiment", "no-such-experiment"], "no-such-experiment"),
    # ---- sweep
    case("sweep-trials-zero", [*SWEEP[:8], "0", *SWEEP[9:]], "trials"),
    case("sweep-loss-wrong-kind", [*SWEEP, "--loss", "lakda_kl"], "lakda_kl"),
    case("sweep-reference-text", [*SWEEP, "--reference", "kendall_tau=abc"], "abc"),
    case("sweep-objective-target", [*SWEEP, "--objectives", "kendall_tau:max,exposure_ratio:max"], "exposure_disparity"),
    case("sweep-objective-unknown", [*SWEEP, "--objectives", "nope:max,kendall_tau:max"], "nope"),
    case("sweep-objective-one", [*SWEEP, "--objectives", "kendall_tau:max"], "2 objectives"),
    case("sweep-constraint-syntax", [*SWEEP, "--constraint", "kendall_tau>>1"], "constraint"),
    case("sweep-train-missing", [*SWEEP[:4], "{ws}/nope.csv", *SWEEP[5:]], "nope.csv"),
    case("sweep-train-nonnumeric", [*SWEEP[:4], "{ws}/nonnumeric.csv", *SWEEP[5:]], "nonnumeric.csv:6", "'x3'"),
    case("sweep-test-nan", [*SWEEP[:6], "{ws}/nan.csv", *SWEEP[7:]], "nan.csv:4"),
    case("sweep-storage-nonsense", [*SWEEP, "--storage", "nonsense"], "nonsense"),
    case("sweep-sampler-unknown", [*SWEEP, "--sampler", "nope"], "--sampler"),
    case("sweep-p-range-one-number", [*SWEEP[:2], "fair-post", *SWEEP[3:], "--fair-p-range", "0.5"], "LOW,HIGH"),
    case("sweep-heartbeat-zero", [*SWEEP, "--heartbeat-interval", "0"], "heartbeat"),
    case("sweep-tracking-unreachable", [*SWEEP[:-2], "--no-progress"], "127.0.0.1:9", env=UNREACHABLE),
    case("sweep-tracking-postgres-unreachable", [*SWEEP[:-2], "--no-progress"], "127.0.0.1:9", "Connection refused",
         env=NO_POSTGRES),
    case("sweep-storage-postgres-unreachable", [*SWEEP, "--storage", NO_POSTGRES["MLFLOW_TRACKING_URI"]],
         "127.0.0.1:9", "fairltr:***@"),
    case("sweep-study-name-empty", [*SWEEP[:10], "", *SWEEP[11:]], "study"),
]


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` (but the MLflow store) with its size and mtime."""
    out = {}
    for p in root.rglob("*"):
        if p.is_file() and "mlruns" not in p.parts and not p.name.startswith("mlflow.db"):
            st = p.stat()
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out




@pytest.fixture(scope="module")
def store(ws):
    """A local SQLite MLflow store for the commands that track."""
    return ws / "mlflow.db"


@pytest.mark.parametrize("args,expect,env", CASES)
def test_broken_input_gives_one_error_line(ws, store, args, expect, env, monkeypatch):
    import mlflow
    from mlflow.tracking._tracking_service import utils as tracking_utils

    uri = env.get("MLFLOW_TRACKING_URI", f"sqlite:///{store}")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setattr(tracking_utils, "_tracking_uri", None)
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    monkeypatch.chdir(ws)
    argv = [a.replace("{ws}", str(ws)) for a in args]
    before = _snapshot(ws)
    result = CliRunner().invoke(cli, argv)
    while mlflow.active_run() is not None:  # a leak would fail below, but must not poison later cases
        mlflow.end_run()
    output = result.output
    lines = [line for line in output.splitlines() if line.strip()]
    assert result.exit_code not in (0, None), output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), (
        f"uncaught {type(result.exception).__name__}: {result.exception}\n{output}")
    errors = [line for line in lines if line.startswith("Error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], output
    assert "Traceback" not in output
    for fragment in expect:
        assert fragment.replace("{ws}", str(ws)) in errors[0], f"{fragment!r} not in: {errors[0]}"
    assert _snapshot(ws) == before, "the failed command changed or left files behind"
    assert running_runs(store) == 0, "an MLflow run was left RUNNING"


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 100
    assert len({c.id for c in CASES}) == len(CASES)
