import json

import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli
from fairltr.deltr import DELTR
from fairltr.synthetic import make_biased_rankings


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    train, test = make_biased_rankings(n_queries=20, n_candidates=15, seed=2)
    train.to_csv(d / "train.csv", index=False)
    test.to_csv(d / "test.csv", index=False)
    return d


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_help_everywhere():
    for args in ([], ["train"], ["train", "deltr"], ["evaluate"], ["quickstart"], ["reproduce", "deltr"]):
        res = run(*args, "--help")
        assert res.exit_code == 0, res.output
        assert "Usage" in res.output


def test_train_deltr_writes_model_predictions_metrics(files, tmp_path):
    out = tmp_path / "out"
    res = run("train", "deltr", "--train", str(files / "train.csv"), "--test", str(files / "test.csv"),
              "--gamma", "1000", "--out", str(out), "--no-track")
    assert res.exit_code == 0, res.output
    assert "exposure_ratio" in res.output
    metrics = json.loads((out / "metrics.json").read_text())
    model = DELTR.load(out / "model.json")
    test = pd.read_csv(files / "test.csv")
    from fairltr.metrics import evaluate_ranking

    assert metrics["exposure_ratio"] == pytest.approx(evaluate_ranking(test, model.predict(test))["exposure_ratio"])
    pred = pd.read_csv(out / "predictions.csv")
    assert len(pred) == len(test)
    assert (pred.groupby("query_id")["rank"].min() == 1).all()


def test_colorblind_and_safetensors(files, tmp_path):
    res = run("train", "deltr", "--train", str(files / "train.csv"), "--gamma", "0", "--colorblind",
              "--out", str(tmp_path), "--model-format", "safetensors", "--no-track")
    assert res.exit_code == 0, res.output
    model = DELTR.load(tmp_path / "model.safetensors")
    assert "protected" not in model.feature_names_


def test_evaluate_command(files, tmp_path):
    run("train", "deltr", "--train", str(files / "train.csv"), "--gamma", "0", "--out", str(tmp_path), "--no-track")
    res = run("evaluate", "--model", str(tmp_path / "model.json"), "--data", str(files / "test.csv"),
              "--out", str(tmp_path / "m.json"), "--predictions", str(tmp_path / "p.parquet"))
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "m.json").read_text())["kendall_tau_n_queries"] > 0
    assert len(pd.read_parquet(tmp_path / "p.parquet")) == len(pd.read_csv(files / "test.csv"))


def test_user_errors_have_no_traceback(files, tmp_path):
    bad = tmp_path / "bad.csv"
    df = pd.read_csv(files / "train.csv")
    df.loc[3, "x2"] = float("nan")
    df.to_csv(bad, index=False)
    res = CliRunner().invoke(cli, ["train", "deltr", "--train", str(bad), "--gamma", "1", "--no-track"])
    assert res.exit_code != 0
    # data row 3 (0-based) is line 5 of the file (1-based, after the header)
    assert "'x2'" in res.output and f"{bad}:5" in res.output
    assert "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["train", "deltr", "--train", str(files / "train.csv"), "--gamma", "-1", "--no-track"])
    assert res.exit_code != 0 and "gamma" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["evaluate", "--model", str(tmp_path / "none.json"), "--data", str(bad)])
    assert res.exit_code != 0 and "not found" in res.output


def test_quickstart_runs_and_deltr_is_fairer(tmp_path):
    res = run("quickstart", "--queries", "20", "--candidates", "20", "--out", str(tmp_path), "--no-track")
    assert res.exit_code == 0, res.output
    results = json.loads((tmp_path / "comparison.json").read_text())
    assert results["DELTR (gamma=1000)"]["exposure_ratio"] > results["standard (gamma=0)"]["exposure_ratio"]
    assert (tmp_path / "train.csv").exists() and (tmp_path / "predictions_deltr.csv").exists()


def test_reproduce_law_race(deltr_data, tmp_path):
    res = run("reproduce", "deltr", "--data", str(deltr_data), "--datasets", "law-race", "--no-fair",
              "--out", str(tmp_path))
    assert res.exit_code == 0, res.output
    table = pd.read_csv(tmp_path / "reproduction.csv")
    assert {"gamma=0", "colorblind"} <= set(table.setting)
    assert "| yes |" in (tmp_path / "reproduction.md").read_text()


def test_fair_preprocess_option_trains_on_fair_lists(files, tmp_path):
    from fairltr.fair import fair_preprocess

    res = run("train", "deltr", "--train", str(files / "train.csv"), "--gamma", "0", "--fair-preprocess", "0.6",
              "--out", str(tmp_path / "pre"), "--no-track")
    assert res.exit_code == 0, res.output
    via_cli = DELTR.load(tmp_path / "pre" / "model.json")
    train = pd.read_csv(files / "train.csv")
    by_hand = DELTR(0).fit(fair_preprocess(train, 0.6, 0.1))
    plain = DELTR(0).fit(train)
    assert via_cli.weights_ == pytest.approx(by_hand.weights_)
    # the fair training lists lift the protected group's weight
    i = via_cli.feature_names_.index("protected")
    assert via_cli.weights_[i] > plain.weights_[i]
    res = CliRunner().invoke(cli, ["train", "deltr", "--train", str(files / "train.csv"), "--gamma", "0",
                                   "--fair-preprocess", "1.5", "--no-track", "--out", str(tmp_path / "x")])
    assert res.exit_code != 0 and "p must be in" in res.output and "Traceback" not in res.output


def test_evaluate_conventions_empty_queries_and_linear_ndcg(files, tmp_path):
    """``--empty-queries zero`` counts a query without a relevant item as 0 (trec_eval's mean over
    every query), ``skip`` leaves it out; ``--linear-ndcg`` adds ndcg_linear_at_<k>; the convention
    is named in metrics.json and on the terminal."""
    run("train", "deltr", "--train", str(files / "train.csv"), "--gamma", "0", "--out", str(tmp_path), "--no-track")
    test = pd.read_csv(files / "test.csv")
    empty = sorted(test.query_id.unique())[:2]
    test.loc[test.query_id.isin(empty), "judgment"] = -1.0  # no item with judgment > 0 in these queries
    test.to_csv(tmp_path / "empty.csv", index=False)
    n_queries = test.query_id.nunique()
    out = {}
    for mode in ("skip", "zero"):
        res = run("evaluate", "--model", str(tmp_path / "model.json"), "--data", str(tmp_path / "empty.csv"),
                  "--out", str(tmp_path / f"{mode}.json"), "--empty-queries", mode, "--linear-ndcg", "--k", "10")
        assert res.exit_code == 0, res.output
        assert f"empty_queries={mode}" in res.output
        out[mode] = json.loads((tmp_path / f"{mode}.json").read_text())
        assert out[mode]["empty_queries"] == mode
    assert out["skip"]["ndcg_at_10_n_queries"] == n_queries - 2
    for key in ("ndcg_at_10", "ndcg_linear_at_10"):
        assert out["zero"][key] == pytest.approx(out["skip"][key] * (n_queries - 2) / n_queries, rel=1e-9)
    assert 0 < out["skip"]["ndcg_linear_at_10"] <= 1
    res = CliRunner().invoke(cli, ["evaluate", "--model", str(tmp_path / "model.json"), "--data",
                                   str(tmp_path / "empty.csv"), "--empty-queries", "drop"])
    assert res.exit_code == 2 and "'drop' is not one of 'skip', 'zero'" in res.output
