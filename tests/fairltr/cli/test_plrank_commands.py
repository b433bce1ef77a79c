"""``fairltr train plrank``: output set, evaluate on its model, one-line errors."""

import json
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr import PLRank
from fairltr.cli import cli
from fairltr.metrics import evaluate_ranking
from fairltr.synthetic import make_biased_rankings


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    train, test = make_biased_rankings(n_queries=12, n_candidates=8, seed=2)
    train.to_csv(d / "train.csv", index=False)
    test.to_csv(d / "test.csv", index=False)
    return d


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_train_plrank_writes_model_predictions_metrics_and_evaluate_reads_it(files, tmp_path):
    out = tmp_path / "out"
    res = run("train", "plrank", "--train", str(files / "train.csv"), "--test", str(files / "test.csv"),
              "--lambda", "20", "--samples", "8", "--max-iter", "10", "--out", str(out), "--no-track",
              "--model-format", "safetensors")
    assert res.exit_code == 0, res.output
    assert "exposure_ratio" in res.output and "E[DCG]" in res.output
    assert sorted(p.name for p in out.iterdir()) == ["metrics.json", "model.safetensors", "predictions.csv"]
    model = PLRank.load(out / "model.safetensors")
    assert (model.lam, model.samples, model.n_iter_) == (20.0, 8, 10)
    test = pd.read_csv(files / "test.csv")
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["ndcg_at_10"] == pytest.approx(evaluate_ranking(test, model.predict(test))["ndcg_at_10"])
    pred = pd.read_csv(out / "predictions.csv")
    assert len(pred) == len(test) and (pred.groupby("query_id")["rank"].min() == 1).all()
    ev = run("evaluate", "--model", str(out / "model.safetensors"), "--data", str(files / "test.csv"),
             "--out", str(tmp_path / "m.json"))
    assert ev.exit_code == 0, ev.output
    assert json.loads((tmp_path / "m.json").read_text())["ndcg_at_10"] == pytest.approx(metrics["ndcg_at_10"])


@pytest.mark.parametrize("args,code,needle", [
    (["--lambda", "-1"], 1, "lambda must be >= 0"),
    (["--samples", "0"], 1, "samples must be an integer >= 1"),
    (["--estimator", "ppo"], 2, "--estimator"),
    (["--register", "m", "--no-track"], 2, "--register registers the logged model; nothing is logged with --no-track"),
])
def test_bad_options_are_one_line_errors(files, tmp_path, args, code, needle):
    res = CliRunner().invoke(cli, ["train", "plrank", "--train", str(files / "train.csv"), "--out", str(tmp_path / "o"),
                                   "--no-track", *args])
    assert res.exit_code == code, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error:") and needle in lines[0], res.stderr
    assert not (tmp_path / "o").exists()


def test_train_plrank_reports_the_policy_and_trains_with_a_cutoff(files, tmp_path):
    """The CLI prints the policy's sampled figures (--eval-samples, seeded) beside the mean-score
    ranking's, metrics.json holds both under their own names, and --cutoff is stored in the model."""
    from fairltr.metrics.policy import evaluate_policy

    out = tmp_path / "out"
    res = run("train", "plrank", "--train", str(files / "train.csv"), "--test", str(files / "test.csv"),
              "--lambda", "5", "--samples", "8", "--max-iter", "5", "--cutoff", "3", "--eval-samples", "20",
              "--seed", "4", "--out", str(out), "--no-track")
    assert res.exit_code == 0, res.output
    assert "expected_exposure_disparity" in res.output and "ee_l" in res.output
    metrics = json.loads((out / "metrics.json").read_text())
    model = PLRank.load(out / "model.json")
    assert model.cutoff == 3 and model.settings().cutoff == 3
    ranked = model.rank(pd.read_csv(files / "test.csv"))
    want = evaluate_policy(ranked, "score", n_samples=20, seed=4, k=(1, 5, 10, 20, 100))
    for key in ("expected_ndcg_at_10", "ee_l", "ee_r", "expected_exposure_disparity"):
        assert metrics[key] == pytest.approx(want[key], abs=1e-12)
    assert {"ndcg_at_10", "exposure_disparity"} <= set(metrics)


def test_bad_policy_options_are_one_line_errors(files, tmp_path):
    for args, needle in ((["--eval-samples", "0"], "eval samples"), (["--cutoff", "-2"], "cutoff")):
        res = CliRunner().invoke(cli, ["train", "plrank", "--train", str(files / "train.csv"),
                                       "--out", str(tmp_path / "o"), "--no-track", *args])
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert res.exit_code == 1 and len(lines) == 1 and needle in lines[0], res.stderr
