"""`fairltr train dpr` and `fairltr evaluate-retrieval` end to end on the tiny BERT."""

from __future__ import annotations

import json

from click.testing import CliRunner

from fairltr.cli import cli


def test_train_dpr_then_evaluate(tiny_bert, parallel_dir, tmp_path, mlflow_tracking):
    runner = CliRunner()
    out = tmp_path / "run"
    res = runner.invoke(cli, [
        "train", "dpr", "--data", str(parallel_dir), "--model", tiny_bert, "--fairness-loss", "lakda_kl",
        "--steps", "2", "--batch-size", "4", "--pooling", "cls", "--out", str(out), "--threads", "1",
    ])
    assert res.exit_code == 0, res.output
    report = json.loads((out / "metrics.json").read_text())
    assert report["params"]["alpha"] == 0.5  # the registry default
    assert {"mrr_at_100", "mrc_at_5", "mrc_at_5_intersection"} <= set(report["metrics"])
    assert (out / "encoder" / "query" / "config.json").is_file()
    # tracked: per-step losses from Lightning, the metrics, the MRC pair heat map, the report
    from mlflow import MlflowClient

    client = MlflowClient(mlflow_tracking)
    exp = client.get_experiment_by_name("fairltr-dpr")
    (run,) = client.search_runs([exp.experiment_id], order_by=["attributes.start_time DESC"], max_results=1)
    assert run.data.metrics["mrc_at_5"] == report["metrics"]["mrc_at_5"]
    assert run.data.params["fairness_loss"] == "lakda_kl" and float(run.data.params["alpha"]) == 0.5
    assert len(client.get_metric_history(run.info.run_id, "train/loss")) == 2
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"mrc_matrix.png", "retrieval_report.json"} <= artifacts

    res = runner.invoke(cli, ["evaluate-retrieval", "--data", str(parallel_dir), "--model", str(out / "encoder" / "query"),
                              "--pooling", "cls", "--out", str(tmp_path / "eval.json")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "eval.json").read_text())["mrr_at_100"] == report["metrics"]["mrr_at_100"]

    res = runner.invoke(cli, ["train", "dpr", "--data", str(parallel_dir), "--model", tiny_bert, "--steps", "1",
                              "--batch-size", "4", "--freeze-documents", "--eval-split", "", "--out", str(tmp_path / "f"),
                              "--no-track"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "f" / "encoder" / "doc" / "config.json").is_file()
    res = runner.invoke(cli, ["evaluate-retrieval", "--data", str(parallel_dir), "--bm25"])
    assert res.exit_code == 0, res.output
    assert "mrc_at_5" in res.output
    res = runner.invoke(cli, ["evaluate-retrieval", "--data", str(parallel_dir)])
    assert res.exit_code != 0 and "exactly one of --model and --bm25" in res.output
    res = runner.invoke(cli, ["train", "dpr", "--data", str(parallel_dir), "--model", tiny_bert, "--out",
                              str(tmp_path / "x"), "--alpha", "-1", "--no-track"])
    assert res.exit_code != 0 and "alpha must be >= 0" in res.output


def test_a_second_evaluate_retrieval_reads_the_corpus_embeddings_from_the_cache(tiny_bert, parallel_dir, tmp_path,
                                                                                monkeypatch):
    """Keyed by the document tower's weights, the corpus, pooling and length: the second run of
    the same encoder and corpus encodes no document, and gives the same metrics; --no-cache and
    another pooling encode again."""
    import fairltr.retrieval
    import fairltr.retrieval.search as search

    calls: list[int] = []
    real = search.encode_chunked

    def counting(encode, texts, *args, **kwargs):  # document encodings only
        if getattr(encode, "__name__", "") == "encode_documents":
            calls.append(len(list(texts)))
        return real(encode, texts, *args, **kwargs)

    monkeypatch.setattr(search, "encode_chunked", counting)
    monkeypatch.setattr(fairltr.retrieval, "encode_chunked", counting)
    base = ["evaluate-retrieval", "--data", str(parallel_dir), "--model", tiny_bert, "--threads", "1",
            "--cache-dir", str(tmp_path / "cache")]
    runs = {}
    for name, extra in (("first", []), ("second", []), ("no-cache", ["--no-cache"]), ("cls", ["--pooling", "cls"])):
        calls.clear()
        res = CliRunner().invoke(cli, [*base, *extra, "--out", str(tmp_path / f"{name}.json")])
        assert res.exit_code == 0, res.output
        runs[name] = (list(calls), res.output, json.loads((tmp_path / f"{name}.json").read_text()))
    n_docs = 12  # the tiny layout
    assert runs["first"][0] == [n_docs] and "read from the cache" not in runs["first"][1]
    assert runs["second"][0] == [] and "read from the cache" in runs["second"][1]
    assert runs["no-cache"][0] == [n_docs] and runs["cls"][0] == [n_docs]
    assert runs["second"][2] == runs["first"][2] == runs["no-cache"][2]
    assert len(list((tmp_path / "cache").glob("corpus-*.safetensors"))) == 2  # mean and cls pooling
    page = (tmp_path / "first.html").read_text()  # the evaluation's HTML report beside its JSON
    assert "MRC@5 by language pair" in page and "Conclusion:" in page


def test_encoding_progress_is_written_off_a_tty(tiny_bert, parallel_dir, tmp_path):
    """Output sent to a file: a progress line with done/total, rate and time left (10% steps)."""
    import re
    import subprocess
    import sys

    log = tmp_path / "log.txt"
    with open(log, "w") as fh:
        proc = subprocess.run([sys.executable, "-m", "fairltr.cli", "evaluate-retrieval", "--data", str(parallel_dir),
                               "--model", tiny_bert, "--threads", "1", "--no-cache"], stdout=fh, stderr=subprocess.STDOUT,
                              timeout=300)
    text = log.read_text()
    assert proc.returncode == 0, text
    lines = [line for line in text.splitlines() if line.startswith("encoding 12 documents: ")]
    assert lines and lines[-1].startswith("encoding 12 documents: 12/12 (100%),") and lines[-1].endswith("done"), text
    assert all(re.search(r"\), (\d+\.\d/s|\S+ each), ", line) for line in lines), text  # rate, or seconds per item
