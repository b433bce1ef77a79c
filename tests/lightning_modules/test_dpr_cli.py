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
