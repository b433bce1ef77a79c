"""``fairltr rerank`` and ``fairltr fair mtable`` through click's test runner."""

from __future__ import annotations

import numpy as np
import pytest
import pandas as pd
from click.testing import CliRunner

import fairltr.cli  # noqa: F401 - registers the command modules
from fairltr.cli.app import cli
from fairltr.fair import is_fair


def test_mtable_command():
    res = CliRunner().invoke(cli, ["fair", "mtable", "--k", "10", "--p", "0.5", "--alpha", "0.1"])
    assert res.exit_code == 0, res.output
    assert "m = 0 0 0 0 1 1 2 2 2 3" in res.output
    assert "fail probability = 0.089844" in res.output
    assert "alpha_c = 0.0625" in res.output
    res = CliRunner().invoke(cli, ["fair", "mtable", "--k", "10", "--p", "0.5", "--alpha", "0.1", "--no-adjust"])
    assert "m = 0 0 0 1 1 1 2 2 3 3" in res.output and "0.128906" in res.output


def test_mtable_command_bad_parameter():
    res = CliRunner().invoke(cli, ["fair", "mtable", "--k", "0", "--p", "0.5"])
    assert res.exit_code != 0
    assert "k must be an integer >= 1" in res.output and "Traceback" not in res.output


def test_rerank_command(tmp_path):
    rng = np.random.default_rng(0)
    n = 60
    df = pd.DataFrame({"qid": np.repeat([1, 2, 3], n // 3), "grp": (rng.random(n) < 0.6).astype(int),
                       "pred": rng.normal(size=n), "judgment": rng.integers(0, 3, size=n)})
    df.loc[df["qid"] == 3, "grp"] = 0  # no protected candidate: infeasible
    src, dst = tmp_path / "scored.csv", tmp_path / "fair.csv"
    df.to_csv(src, index=False)
    res = CliRunner().invoke(cli, ["rerank", "--input", str(src), "--scores-col", "pred", "--p", "0.5",
                                   "--alpha", "0.1", "--query", "qid", "--group", "grp", "--out", str(dst)])
    assert res.exit_code == 0, res.output
    assert "queries: 3  infeasible (protected ran out): 1" in res.output
    assert "exposure_ratio" in res.output
    out = pd.read_csv(dst)
    assert len(out) == n and {"score", "rank", "fair_feasible"} <= set(out.columns)
    for q in (1, 2):
        assert is_fair(out[out["qid"] == q]["grp"].to_numpy(), 0.5, 0.1)


def test_rerank_command_errors(tmp_path):
    src = tmp_path / "scored.csv"
    pd.DataFrame({"query_id": [1, 1], "protected": [0, 1], "score": [0.1, 0.2]}).to_csv(src, index=False)
    res = CliRunner().invoke(cli, ["rerank", "--input", str(src), "--p", "1.2", "--out", str(tmp_path / "o.csv")])
    assert res.exit_code != 0 and "open interval (0, 1)" in res.output
    res = CliRunner().invoke(cli, ["rerank", "--input", str(src), "--p", "0.5", "--scores-col", "s",
                                   "--out", str(tmp_path / "o.csv")])
    assert res.exit_code != 0 and "score column 's' not found" in res.output


def _categories_table(tmp_path):
    rng = np.random.default_rng(1)
    n = 90
    df = pd.DataFrame({"qid": np.repeat([1, 2, 3], n // 3), "race": rng.choice(["Black", "White", "Asian"], n,
                                                                               p=[0.2, 0.6, 0.2]),
                       "pred": rng.normal(size=n)})
    src = tmp_path / "scored.csv"
    df.to_csv(src, index=False)
    return df, src


@pytest.mark.parametrize("method", ["detgreedy", "detcons", "detrelaxed", "detconstsort"])
def test_rerank_command_geyik_methods(tmp_path, method):
    from fairltr.fair import rerank_geyik
    from fairltr.columns import RankingColumns

    df, src = _categories_table(tmp_path)
    dst = tmp_path / "out.csv"
    res = CliRunner().invoke(cli, ["rerank", "--input", str(src), "--scores-col", "pred", "--method", method,
                                   "--query", "qid", "--group", "race", "--target",
                                   "race=Black:0.3,White:0.4,Asian:0.3", "--k", "10", "--out", str(dst)])
    assert res.exit_code == 0, res.output
    assert f"method: {method}  queries: 3" in res.output
    assert "share in top 10: Black" in res.output and "0.3000" in res.output
    out = pd.read_csv(dst)
    want = rerank_geyik(df, "pred", method=method, target={"Black": 0.3, "White": 0.4, "Asian": 0.3}, k=10,
                        columns=RankingColumns("qid", "race", None))
    assert out["pred"].tolist() == pytest.approx(want["pred"].tolist(), abs=1e-12)
    assert out["rank"].tolist() == want["rank"].tolist()


def test_rerank_command_geyik_default_target_and_usage_errors(tmp_path):
    _, src = _categories_table(tmp_path)
    dst = tmp_path / "out.csv"
    base = ["rerank", "--input", str(src), "--scores-col", "pred", "--query", "qid", "--group", "race",
            "--out", str(dst)]
    res = CliRunner().invoke(cli, base + ["--method", "detconstsort", "--k", "5"])
    assert res.exit_code == 0, res.output
    assert "infeasible (target not met at some prefix): 0" in res.output
    for extra, code, msg in [
        (["--method", "detcons", "--target", "race=Black:0.5,Purple:0.5"], 1, "category 'Purple' does not occur"),
        (["--method", "detcons", "--target", "race=Black:0.5,White:0.4"], 1, "shares sum to 0.9"),
        (["--method", "detcons", "--target", "sex=Black:1"], 1, "target names column 'sex'"),
        (["--method", "detcons", "--p", "0.5"], 2, "--p applies to --method fair"),
        (["--target", "race=Black:1"], 2, "--target applies to the Geyik methods"),
        ([], 2, "--p is required with --method fair"),
        (["--method", "nope"], 2, "Invalid value for '--method'"),
    ]:
        res = CliRunner().invoke(cli, base + extra)
        assert res.exit_code == code, (extra, res.output)
        assert msg in res.output and "Traceback" not in res.output, (extra, res.output)
        assert len([line for line in res.output.splitlines() if line.startswith("Error")]) == 1
