"""One way in for a ranker (issue 33, item 3): DELTR, PLRank and LambdaMART implement the
:class:`fairltr.plugins.Ranker` protocol and are found by their :class:`RankerDeclaration` in
``fairltr.rankers.RANKERS``; PLRank is no longer a DELTR subclass; a third-party ranker declared
through the ``fairltr.rankers`` entry-point group loads by its format marker, is evaluated by
``fairltr evaluate`` and is logged and served as an MLflow pyfunc without an edit to fairltr."""

from __future__ import annotations

import importlib
import json

import mlflow
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr import DELTR, PLRank
from fairltr.cli import cli
from fairltr.errors import ConfigError
from fairltr.gbdt import GBDTParams, LambdaMART
from fairltr.linear_ranker import LinearRanker
from fairltr.plugins import Ranker, RankerDeclaration
from fairltr.errors import DataError
from fairltr.rankers import RANKERS, declaration_of, load_ranker, load_ranker_files, model_format
from tests.plugin_dist import plugin_distribution


def _table(seed: int = 0, n_queries: int = 6, n: int = 8) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = n_queries * n
    x = rng.normal(size=rows)
    return pd.DataFrame({"query_id": np.repeat(np.arange(n_queries), n), "x1": x, "x2": rng.normal(size=rows),
                         "protected": np.tile([0, 1], rows // 2),
                         "judgment": (x > 0).astype(int) + (x > 1).astype(int)})


def _fitted(name: str):
    df = _table()
    if name == "deltr":
        return DELTR(gamma=10.0, max_iter=5).fit(df)
    if name == "plrank":
        return PLRank(samples=4, max_iter=3).fit(df)
    pytest.importorskip("lightgbm", reason="LambdaMART needs the [gbdt] extra")
    return LambdaMART(GBDTParams(n_estimators=3, num_leaves=3, min_data_in_leaf=1)).fit(df)


@pytest.mark.parametrize("name", ["deltr", "plrank", "lambdamart"])
def test_each_builtin_implements_the_protocol_and_round_trips_by_its_marker(name, tmp_path):
    model = _fitted(name)
    declared = declaration_of(model)
    assert declared is RANKERS.require(name) and isinstance(model, Ranker)
    assert declared.estimator_class() is type(model)
    main = model.save(tmp_path / declared.model_file.replace("safetensors", "json") if name != "lambdamart"
                      else tmp_path / declared.model_file)
    files = model.saved_files(main)
    assert files[0] == main and all(f.is_file() for f in files) and len(files) == (2 if name == "lambdamart" else 1)
    assert model_format(main) == declared.format
    again = load_ranker(main)
    assert type(again) is type(model)
    df = _table(1)
    np.testing.assert_allclose(again.predict(df), model.predict(df), rtol=1e-12, atol=1e-12)
    assert type(type(model).load_saved(files)) is type(model)


def test_plrank_is_a_sibling_of_deltr_not_a_subclass():
    assert not issubclass(PLRank, DELTR) and not issubclass(DELTR, PLRank)
    assert issubclass(PLRank, LinearRanker) and issubclass(DELTR, LinearRanker)
    assert not hasattr(PLRank(), "gamma")  # its weight is lam (the declaration's "lambda"), no DELTR alias
    assert declaration_of(PLRank()).weight_of(PLRank(lam=3.0)) == 3.0


def test_declarations_say_what_logging_and_serving_read():
    deltr, plrank, lambdamart = (RANKERS.require(n) for n in ("deltr", "plrank", "lambdamart"))
    assert (deltr.heading(DELTR(gamma=1000.0)), plrank.heading(PLRank(lam=10.0)),
            lambdamart.heading(LambdaMART())) == ("DELTR gamma=1000", "PLRank lambda=10", "LambdaMART")
    assert [d.stochastic for d in (deltr, plrank, lambdamart)] == [False, True, False]
    assert lambdamart.requirements == ("lightgbm",) and not deltr.requirements and lambdamart.curve_caption is None
    # the model file's own marker (what the readers check) is the declaration's
    for d in (deltr, plrank, lambdamart):
        kind = d.estimator_class()._FILE_KIND
        assert d.format == f"fairltr.{kind}" and d.label == kind


def test_a_subclass_is_its_base_and_an_undeclared_class_is_refused():
    class TunedDELTR(DELTR):
        pass

    assert declaration_of(TunedDELTR(gamma=0.0)).name == "deltr"
    with pytest.raises(ConfigError, match=r"object is not a declared ranker.*'deltr', 'plrank', 'lambdamart'"):
        declaration_of(object())


def test_declarations_are_checked():
    with pytest.raises(ConfigError, match="format marker 'fairltr.DELTR' of ranker 'deltr'"):
        RANKERS.register(RankerDeclaration("copy", "fairltr.deltr:DELTR", label="Copy", format="fairltr.DELTR"))
    with pytest.raises(ConfigError, match="estimator must be 'module:Class'"):
        RankerDeclaration("bad", "fairltr.deltr.DELTR", label="Bad", format="bad.Bad")
    with pytest.raises(ConfigError, match="cannot import its estimator 'no_such_module:Thing'"):
        RankerDeclaration("gone", "no_such_module:Thing", label="Gone", format="gone.Gone").estimator_class()


def test_a_marker_no_ranker_declares_is_named(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"format": "nobody.Knows", "weights": [1.0]}))
    with pytest.raises(DataError, match=r"m.json: model format 'nobody.Knows' is declared by no installed ranker.*"
                                        r"'fairltr.DELTR', 'fairltr.PLRank', 'fairltr.LambdaMART'"):
        load_ranker(path)
    path.write_text("{not json")  # no marker to read: DELTR's loader reports the defect, or the named ranker's
    with pytest.raises(DataError, match="not a fairltr DELTR model file"):
        load_ranker(path)
    with pytest.raises(DataError, match="not a fairltr LambdaMART model file"):
        load_ranker_files([path], label="LambdaMART")


MODULE = "toy_fairltr_ranker"
SOURCE = '''
    import json
    from pathlib import Path

    import numpy as np

    from fairltr.columns import DEFAULT_COLUMNS
    from fairltr.errors import DataError, NotFittedError
    from fairltr.linear_ranker import rank_frame
    from fairltr.plugins import RankerDeclaration

    FORMAT = "toy.MeanRanker"


    class MeanRanker:
        """Scores a row by the mean of its features times ``sign`` (no training beyond the feature list)."""

        _FILE_KIND = "MeanRanker"
        fairness_loss = None

        def __init__(self, sign=1.0):
            self.sign = sign

        def fit(self, df, features=None, progress=False):
            c = DEFAULT_COLUMNS
            self.feature_names_ = list(features or [f for f in df.columns if f.startswith("x")])
            self.columns_ = c
            return self

        def check_fitted(self):
            if not hasattr(self, "feature_names_"):
                raise NotFittedError("this MeanRanker model is not fitted yet")

        @property
        def history(self):
            return []

        n_iter_ = 0

        @property
        def query_(self):
            return self.columns_.query

        @property
        def judgment_(self):
            return self.columns_.judgment

        def predict(self, df):
            self.check_fitted()
            return self.sign * df[self.feature_names_].to_numpy(dtype=float).mean(axis=1)

        def rank(self, df, query=None):
            return rank_frame(df, self.predict(df), query=query or self.query_)

        def effective_params(self):
            return {"sign": self.sign}

        def describe(self, title=None):
            return f"MeanRanker, sign {self.sign:g}"

        def save(self, path):
            """Three files: the marker, the features, the sign (a model of several files)."""
            main, features, sign = self.saved_files(path)
            main.write_text(json.dumps({"format": FORMAT}))
            features.write_text("\\n".join(self.feature_names_))
            sign.write_text(repr(self.sign))
            return main

        def saved_files(self, path):
            p = Path(path)
            return [p, p.with_suffix(".features.txt"), p.with_suffix(".sign.txt")]

        @classmethod
        def load_saved(cls, files):
            if len(files) != 3:
                raise DataError(f"a MeanRanker is three files, got {[str(f) for f in files]}")
            state = json.loads(Path(files[0]).read_text())
            if state.get("format") != FORMAT:
                raise DataError(f"{files[0]}: not a MeanRanker file")
            model = cls(float(Path(files[2]).read_text()))
            model.feature_names_, model.columns_ = Path(files[1]).read_text().split("\\n"), DEFAULT_COLUMNS
            return model


    class OneFileRanker(MeanRanker):
        """The same scorer in one JSON file (what ``fairltr evaluate --model FILE`` reads)."""

        def save(self, path):
            p = Path(path)
            p.write_text(json.dumps({"format": "toy.OneFile", "sign": self.sign, "features": self.feature_names_}))
            return p

        def saved_files(self, path):
            return [Path(path)]

        @classmethod
        def load_saved(cls, files):
            state = json.loads(Path(files[0]).read_text())
            model = cls(state["sign"])
            model.feature_names_, model.columns_ = state["features"], DEFAULT_COLUMNS
            return model


    MEAN_RANKER = MeanRanker  # the declaration names this re-export, not the class's own name
    DECLARATIONS = [RankerDeclaration("toy-mean", f"{__name__}:MEAN_RANKER", label="MeanRanker", format=FORMAT,
                                      model_file="mean.json"),
                    RankerDeclaration("toy-one", f"{__name__}:OneFileRanker", label="OneFileRanker",
                                      format="toy.OneFile", model_file="one.json")]
'''


@pytest.fixture
def toy_ranker(tmp_path, monkeypatch):
    (tmp_path / "plugin").mkdir()
    with RANKERS.snapshot(), plugin_distribution(tmp_path / "plugin", monkeypatch, MODULE, SOURCE,
                                                 {"fairltr.rankers": {"mean": f"{MODULE}:DECLARATIONS"}}):
        RANKERS.reload_entry_points()
        yield importlib.import_module(MODULE)


def test_a_plugin_ranker_loads_by_its_marker_and_is_evaluated_by_the_cli(toy_ranker, tmp_path):
    assert "toy-mean" in RANKERS.names()
    df = _table()
    model = toy_ranker.MeanRanker(-1.0).fit(df)
    assert isinstance(model, Ranker) and declaration_of(model).label == "MeanRanker"
    path = model.save(tmp_path / "mean.json")
    with pytest.raises(DataError, match="a MeanRanker is three files"):
        load_ranker(path)  # one file given: the plugin's own loader decides
    assert type(load_ranker_files(model.saved_files(path))).__name__ == "MeanRanker"
    df.to_csv(tmp_path / "test.csv", index=False)
    res = CliRunner().invoke(cli, ["evaluate", "--model", str(path), "--data", str(tmp_path / "test.csv"),
                                   "--out", str(tmp_path / "m.json"), "--k", "5"])
    assert res.exit_code != 0 and "a MeanRanker is three files" in res.output  # one-line error, no traceback
    model_one = toy_ranker.OneFileRanker(-1.0).fit(df)
    path = model_one.save(tmp_path / "one.json")
    res = CliRunner().invoke(cli, ["evaluate", "--model", str(path), "--data", str(tmp_path / "test.csv"),
                                   "--out", str(tmp_path / "m.json"), "--k", "5"])
    assert res.exit_code == 0, res.output
    # sign -1 scores by -mean(x1, x2): the figures are those of that ranking, computed independently
    ranked = df.assign(s=-df[["x1", "x2"]].mean(axis=1)).sort_values(["query_id", "s"], ascending=[True, False])
    gains = ranked.groupby("query_id")["judgment"].apply(lambda j: np.sum((2.0 ** j.to_numpy()[:5] - 1)
                                                                          / np.log2(np.arange(2, 7))))
    ideal = df.groupby("query_id")["judgment"].apply(lambda j: np.sum((2.0 ** np.sort(j.to_numpy())[::-1][:5] - 1)
                                                                      / np.log2(np.arange(2, 7))))
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["ndcg_at_5"] == pytest.approx(float((gains / ideal).mean()), abs=1e-9)


def test_a_plugin_ranker_is_logged_and_served_as_a_pyfunc(toy_ranker, mlflow_tracking, tmp_path):
    from fairltr.tracking.models.pyfunc import log_ranker_model

    df = _table()
    model = toy_ranker.MeanRanker(1.0).fit(df)
    with mlflow.start_run():
        info = log_ranker_model(model, input_example=df.head(4))
    folder = mlflow.artifacts.download_artifacts(artifact_uri=info.model_uri, dst_path=str(tmp_path / "model"))
    assert {p.name for p in (tmp_path / "model" / "artifacts").iterdir()} >= {"mean.json", "mean.features.txt",
                                                                              "mean.sign.txt"}  # every saved file
    requirements = (tmp_path / "model" / "requirements.txt").read_text()
    assert "lightgbm" not in requirements
    served = mlflow.pyfunc.load_model(folder).predict(df)
    expected = model.rank(df)
    merged = df.assign(rank=served["rank"].to_numpy())
    for q, part in expected.groupby("query_id"):
        got = merged[merged["query_id"] == q].set_index(["x1"])["rank"]
        assert list(got.loc[part["x1"]]) == list(part["rank"])


def test_a_plugin_ranker_run_is_logged_by_its_declaration(toy_ranker, mlflow_tracking, tmp_path):
    from fairltr.tracking.job_logging.ranker_logging import log_deltr_run

    df = _table()
    model = toy_ranker.MeanRanker(2.0).fit(df)
    run_id = log_deltr_run(model, train_df=df, test_df=df, test_metrics={"ndcg_at_10": 0.5},
                           experiment="toy-ranker")
    run = mlflow.MlflowClient().get_run(run_id)
    assert run.data.tags["fairltr.model"] == "MeanRanker" and run.data.params["sign"] == "2.0"
    listed = {f.path for f in mlflow.MlflowClient().list_artifacts(run_id)}
    assert "fairness_report.html" in listed and "training_curve.png" not in listed  # no curve declared
    report = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="fairness_report.html",
                                                 dst_path=str(tmp_path))
    assert "MeanRanker, sign 2" in open(report, encoding="utf-8").read()
