"""The DELTR estimator: ListNet equivalence, determinism, colorblind, rank(), persistence, errors,
history, and the paper's Law race gamma=0 figures."""

from __future__ import annotations

import json
import math
import struct

import numpy as np
import pandas as pd
import pytest
import torch

from fairltr import DELTR, RankingColumns, evaluate_ranking, rank_frame, to_batch
from fairltr.errors import ConfigError, DataError, NotFittedError
from fairltr.io import read_deltr_csv
from fairltr.losses import GAMMA, FairnessLoss, exposure_hinge, listnet_loss, temporary_loss


def _synthetic(n_queries=12, n=10, seed=0) -> pd.DataFrame:
    """Two merit features; the training judgment is biased against the protected group."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        for _ in range(n):
            prot = int(rng.random() < 0.4)
            x1, x2 = rng.normal(size=2)
            rows.append({"query_id": q + 1, "protected": prot, "x1": x1 + 0.5 * (1 - prot), "x2": x2,
                         "judgment": 2.0 * x1 + x2 - 1.5 * prot + 0.1 * rng.normal()})
    return pd.DataFrame(rows)


def _reference_listnet(df, features, seed, n_steps):
    """Plain ListNet with the same standardisation, init and L-BFGS steps as DELTR.fit."""
    b = to_batch(df, features=features)
    x, m = b.features, b.mask
    real = x[m]
    mean, std = real.mean(0), real.std(0, unbiased=False)
    x = ((x - mean) / torch.where(std > 0, std, torch.ones_like(std))).masked_fill(~m.unsqueeze(-1), 0.0)
    gen = torch.Generator().manual_seed(seed)
    w = (0.01 * torch.randn(x.shape[-1], generator=gen, dtype=torch.float64)).requires_grad_(True)
    opt = torch.optim.LBFGS([w], lr=1.0, max_iter=1, max_eval=25, history_size=20,
                            line_search_fn="strong_wolfe", tolerance_grad=0.0, tolerance_change=0.0)

    def closure():
        opt.zero_grad()
        loss = listnet_loss(x @ w, b.judgments, m).sum()
        loss.backward()
        return loss

    for _ in range(n_steps):
        opt.step(closure)
    return w.detach().numpy()


def test_gamma_zero_equals_plain_listnet():
    df = _synthetic()
    model = DELTR(gamma=0.0, max_iter=8, tol=0.0, seed=3).fit(df)
    assert model.n_iter_ == 8  # no early stop: 8 L-BFGS steps
    want = _reference_listnet(df, model.feature_names_, seed=3, n_steps=8)
    np.testing.assert_allclose(model.weights_, want, rtol=1e-6, atol=1e-9)
    none = DELTR(gamma=5.0, fairness_loss="none", max_iter=8, tol=0.0, seed=3).fit(df)
    np.testing.assert_allclose(none.weights_, want, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("optimizer", ["lbfgs", "adam"])
def test_deterministic_for_a_seed(optimizer):
    df = _synthetic(seed=1)
    kw = dict(gamma=1e3, optimizer=optimizer, max_iter=20, seed=7)
    a = DELTR(**kw).fit(df)
    b = DELTR(**kw).fit(df)
    assert np.array_equal(a.weights_, b.weights_)
    assert a.history == b.history


def test_fused_gradient_path_equals_autograd_path():
    df = _synthetic(seed=2)
    name = "test_deltr_autograd_hinge"
    with temporary_loss(FairnessLoss(name, "ranking", lambda *a, **k: exposure_hinge(*a, **k), (GAMMA,))):
        fused = DELTR(gamma=500.0, max_iter=10, tol=0.0).fit(df)
        auto = DELTR(gamma=500.0, max_iter=10, tol=0.0, fairness_loss=name).fit(df)
    np.testing.assert_allclose(fused.weights_, auto.weights_, rtol=1e-6, atol=1e-9)
    for h1, h2 in zip(fused.history, auto.history):
        assert h1["total"] == pytest.approx(h2["total"], rel=1e-8)


def test_history_terms_per_iteration():
    df = _synthetic(seed=3)
    seen = []
    model = DELTR(gamma=250.0, max_iter=12, tol=0.0).fit(df, callback=lambda i, rec: seen.append(i))
    assert len(model.history) == 13 and seen == list(range(13))
    assert [h["iteration"] for h in model.history] == list(range(13))
    for h in model.history:
        assert h["total"] == pytest.approx(h["listnet"] + 250.0 * h["exposure"], rel=1e-12)
    assert any(h["exposure"] > 0 for h in model.history)
    assert model.history[-1]["total"] < model.history[0]["total"]


def test_gamma_reduces_the_exposure_term():
    df = _synthetic(seed=4)
    plain = DELTR(gamma=0.0).fit(df)
    fair = DELTR(gamma=1e5).fit(df)
    assert fair.history[-1]["exposure"] < 0.1 * plain.history[-1]["exposure"]
    assert plain.history[-1]["exposure"] > 0


def test_adam_optimizer_trains():
    df = _synthetic(seed=5)
    model = DELTR(gamma=10.0, optimizer="adam", lr=0.05, max_iter=150, tol=0.0).fit(df)
    assert len(model.history) == 151
    assert model.history[-1]["total"] < 0.95 * model.history[0]["total"]
    lbfgs = DELTR(gamma=10.0).fit(df)
    assert model.history[-1]["total"] == pytest.approx(lbfgs.history[-1]["total"], rel=0.05)


def test_colorblind_drops_the_group_column():
    df = _synthetic(seed=6)
    standard = DELTR(gamma=0.0).fit(df)
    assert "protected" in standard.feature_names_
    blind = DELTR(gamma=0.0, colorblind=True).fit(df)
    assert blind.feature_names_ == ["x1", "x2"]
    flipped = df.assign(protected=1 - df.protected)
    np.testing.assert_array_equal(blind.predict(df), blind.predict(flipped))
    assert not np.allclose(standard.predict(df), standard.predict(flipped))
    explicit = DELTR(gamma=0.0, colorblind=True).fit(df, features=["protected", "x1"])
    assert explicit.feature_names_ == ["x1"]


def test_predict_is_linear_in_original_units():
    df = _synthetic(seed=7)
    model = DELTR(gamma=0.0, l2=0.1).fit(df)
    x = df[model.feature_names_].to_numpy()
    pred = model.predict(df)
    const = pred - x @ model.coef_
    np.testing.assert_allclose(const, const[0], atol=1e-10)
    unreg = DELTR(gamma=0.0).fit(df)
    assert np.linalg.norm(model.weights_) < np.linalg.norm(unreg.weights_)


def test_rank_sorts_within_queries_in_first_appearance_order():
    df = _synthetic(n_queries=4, n=5, seed=8)
    df["query_id"] = df.query_id.map({1: 30, 2: 10, 3: 20, 4: 40})
    df = df.sample(frac=1.0, random_state=0).reset_index(drop=True)  # non-adjacent query rows
    model = DELTR(gamma=0.0, max_iter=20).fit(df)
    ranked = model.rank(df)
    first_seen = list(dict.fromkeys(df.query_id))
    blocks = list(dict.fromkeys(ranked.query_id))
    assert blocks == first_seen
    assert (ranked.query_id != ranked.query_id.shift()).sum() == len(first_seen)  # contiguous blocks
    for _, d in ranked.groupby("query_id", sort=False):
        assert d["rank"].tolist() == list(range(1, len(d) + 1))
        assert np.all(np.diff(d["score"].to_numpy()) <= 0)
    assert len(ranked) == len(df)
    np.testing.assert_allclose(np.sort(ranked.score.to_numpy()), np.sort(model.predict(df)))


def test_rank_frame_ties_keep_input_order():
    df = pd.DataFrame({"q": [1, 2, 1, 1], "id": ["a", "b", "c", "d"]})
    out = rank_frame(df, np.array([0.5, 9.0, 0.5, 0.7]), "q")
    assert out.id.tolist() == ["d", "a", "c", "b"] and out["rank"].tolist() == [1, 2, 3, 1]


@pytest.mark.parametrize("suffix", [".json", ".safetensors"])
def test_save_load_round_trip_without_pickle(tmp_path, suffix):
    df = _synthetic(seed=9)
    model = DELTR(gamma=100.0, colorblind=True, max_iter=10).fit(df)
    path = model.save(tmp_path / "models" / f"m{suffix}")
    raw = path.read_bytes()
    if suffix == ".json":
        state = json.loads(raw)
        assert state["format"] == "fairltr.DELTR" and state["feature_names"] == ["x1", "x2"]
    else:
        (header_len,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8:8 + header_len])
        sizes = sum(v["data_offsets"][1] - v["data_offsets"][0] for k, v in header.items() if k != "__metadata__")
        assert 8 + header_len + sizes == len(raw)  # nothing but the safetensors layout
        assert json.loads(header["__metadata__"]["fairltr"])["format"] == "fairltr.DELTR"
    assert b"\x80\x04\x95" not in raw and b"\x80\x02" not in raw  # no pickle stream
    loaded = DELTR.load(path)
    assert np.array_equal(loaded.predict(df), model.predict(df))
    assert loaded.effective_params() == model.effective_params() and loaded.columns_ == model.columns_
    assert (loaded.max_iter_, loaded.lr_, loaded.n_iter_) == (model.max_iter_, model.lr_, model.n_iter_)
    assert loaded.history == model.history and loaded.feature_names_ == model.feature_names_
    pd.testing.assert_frame_equal(loaded.rank(df), model.rank(df))


def test_load_errors(tmp_path):
    with pytest.raises(DataError, match="model file not found"):
        DELTR.load(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(DataError, match="not a fairltr DELTR model file"):
        DELTR.load(bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "other", "weights": [1], "mean": [0], "scale": [1]}))
    with pytest.raises(DataError, match="not a fairltr DELTR model file"):
        DELTR.load(other)


@pytest.mark.parametrize("kwargs,pattern", [
    (dict(gamma=-1.0), "gamma must be"),
    (dict(gamma=float("nan")), "gamma must be"),
    (dict(gamma="big"), "gamma must be"),
    (dict(gamma=True), "gamma must be"),
    (dict(gamma=1.0, optimizer="sgd"), "optimizer must be 'lbfgs' or 'adam'"),
    (dict(gamma=1.0, l2=-0.1), "l2 must be >= 0"),
    (dict(gamma=1.0, max_iter=0), "max_iter must be >= 1"),
    (dict(gamma=1.0, lr=0.0), "lr must be > 0"),
    (dict(gamma=1.0, tol=-1e-3), "tol must be"),
    (dict(gamma=1.0, reduce="min"), "reduce must be 'max' or 'mean'"),
    (dict(gamma=1.0, fairness_loss="nope"), "unknown fairness loss 'nope'"),
    (dict(gamma=1.0, fairness_loss="lakda_kl"), "not a ranking loss"),
])
def test_bad_parameters(kwargs, pattern):
    model = DELTR(**kwargs)  # the constructor stores, fit validates (scikit-learn's contract)
    assert model.get_params()["gamma"] is kwargs["gamma"]
    with pytest.raises(ConfigError, match=pattern):
        model.fit(_synthetic(n_queries=2, n=4))
    with pytest.raises(ConfigError, match=pattern):
        model.effective_params()


def test_numpy_gamma_is_accepted():
    assert DELTR(gamma=np.int64(0)).gamma == 0.0
    assert DELTR(gamma=np.float64(1e5)).gamma == 1e5


def test_unfitted_and_data_errors(tmp_path):
    df = _synthetic(seed=10)
    model = DELTR(gamma=1.0)
    for call in (lambda: model.predict(df), lambda: model.rank(df), lambda: model.save(tmp_path / "m.json"),
                 lambda: model.coef_):
        with pytest.raises(ConfigError, match="not fitted"):
            call()
    with pytest.raises(DataError, match="group column 'grp' not in the training table"):
        DELTR(gamma=1.0, protected="grp").fit(df)
    fitted = DELTR(gamma=0.0, max_iter=5).fit(df)
    with pytest.raises(DataError, match=r"missing feature column\(s\) \['x2'\]"):
        fitted.predict(df.drop(columns=["x2"]))
    with pytest.raises(DataError, match=r"^row 3 \(0-based\): missing value \(NaN or empty cell\) in column 'x1' \(query 1\)"):
        fitted.predict(df.assign(x1=np.where(np.arange(len(df)) == 3, np.nan, df.x1)))
    with pytest.raises(DataError, match="query column 'qq'"):
        fitted.rank(df, query="qq")
    with pytest.raises(DataError, match="no feature columns"):
        DELTR(gamma=0.0, colorblind=True).fit(df[["query_id", "protected", "judgment"]])


def test_degenerate_queries_train_without_nan():
    df = pd.DataFrame({
        "query_id": [1, 2, 2, 2, 3, 3, 3],
        "protected": [1, 0, 0, 0, 1, 0, 1],  # one-item query, one-group query, mixed query
        "x1": [0.3, 1.0, 0.0, -1.0, 0.5, 2.0, -0.5],
        "judgment": [1.0, 3.0, 2.0, 1.0, 500.0, 800.0, 100.0],  # judgments in the hundreds
    })
    model = DELTR(gamma=1e4, max_iter=30).fit(df)
    assert np.all(np.isfinite(model.weights_))
    assert all(math.isfinite(h["total"]) for h in model.history)


def test_progress_bar_runs(capsys):
    DELTR(gamma=1.0, max_iter=3, tol=0.0).fit(_synthetic(n_queries=2), progress=True)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu():
    df = _synthetic(seed=11)
    cpu = DELTR(gamma=1e3, max_iter=10, tol=0.0, device="cpu").fit(df)
    gpu = DELTR(gamma=1e3, max_iter=10, tol=0.0, device="cuda").fit(df)
    np.testing.assert_allclose(gpu.weights_, cpu.weights_, rtol=1e-6, atol=1e-9)


def _law(deltr_data, split):
    return read_deltr_csv(deltr_data / "LawStudents" / "race_black" / f"LawStudents_Race_{split}.txt")


def test_law_race_gamma_zero_matches_the_paper(deltr_data):
    """docs/spec.md §2 calibration: Law race, gamma=0 -> exposure_ratio 0.847 / kendall_tau 0.194 (paper 0.846 / 0.194)."""
    train, test = _law(deltr_data, "train"), _law(deltr_data, "test")
    model = DELTR(gamma=0.0).fit(train)
    res = evaluate_ranking(test, model.predict(test), k=(10,))
    assert res["exposure_ratio"] == pytest.approx(0.847, abs=0.01)
    assert res["kendall_tau"] == pytest.approx(0.194, abs=0.01)
    fair = DELTR(gamma=1e6, max_iter=50).fit(train)
    assert evaluate_ranking(test, fair.predict(test), k=(10,))["exposure_ratio"] >= 0.95


def test_fit_batch_colorblind_drops_the_group_feature():
    df = _synthetic(seed=12)
    batch = to_batch(df, features=["protected", "x1", "x2"])
    from_batch = DELTR(gamma=0.0, colorblind=True, max_iter=10, tol=0.0).fit_batch(batch)
    from_frame = DELTR(gamma=0.0, colorblind=True, max_iter=10, tol=0.0).fit(df)
    assert from_batch.feature_names_ == ["x1", "x2"]
    np.testing.assert_array_equal(from_batch.weights_, from_frame.weights_)


def test_float32_training_is_close_to_float64(tmp_path):
    df = _synthetic(seed=13)
    f64 = DELTR(gamma=100.0, max_iter=30).fit(df)
    f32 = DELTR(gamma=100.0, max_iter=30, dtype=torch.float32).fit(df)
    assert f32.get_params()["dtype"] is torch.float32 and f32.effective_params()["dtype"] == "float32"
    np.testing.assert_allclose(f32.predict(df), f64.predict(df), rtol=1e-3, atol=1e-3)
    assert DELTR.load(f32.save(tmp_path / "m.json")).dtype == torch.float32


@pytest.mark.parametrize("kwargs", [dict(max_iter=7, tol=0.0), dict(max_iter=500, tol=1e-6)])
def test_last_history_entry_is_the_objective_at_the_returned_weights(kwargs):
    from fairltr.losses import deltr_objective

    df = _synthetic(seed=14)
    model = DELTR(gamma=300.0, **kwargs).fit(df)
    assert len(model.history) == model.n_iter_ + 1
    assert model.n_iter_ == 7 if kwargs["tol"] == 0 else 0 < model.n_iter_ < 500
    b = to_batch(df.assign(score=model.predict(df)), features=["score"])
    t = deltr_objective(b.features[..., 0], b.judgments, b.groups, b.mask, 300.0)
    assert model.history[-1]["total"] == pytest.approx(float(t.total), rel=1e-10)
    assert model.history[-1]["exposure"] == pytest.approx(float(t.exposure), rel=1e-8, abs=1e-15)


# ---------------------------------------------------------------------------- length buckets
def _skewed(seed=0, groups=2) -> pd.DataFrame:
    """_synthetic's model on queries of very unequal length (one of 150, one of 60, many of 3-8,
    a one-row query, a one-group query), rows of a query not adjacent."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 9, size=30)
    sizes[0], sizes[1], sizes[2] = 150, 60, 1
    qid = np.repeat(np.arange(30) * 3 + 1, sizes)
    n = len(qid)
    prot = rng.integers(0, groups, size=n) * (rng.random(n) < 0.6)
    prot[qid == 4 * 3 + 1] = 0  # one query without protected candidates
    x1, x2 = rng.normal(size=(2, n))
    df = pd.DataFrame({"query_id": qid, "protected": prot, "x1": x1 + 0.5 * (prot == 0), "x2": x2,
                       "judgment": 2.0 * x1 + x2 - 1.5 * (prot >= 1) + 0.1 * rng.normal(size=n)})
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def _one_bucket(df: pd.DataFrame, features=None):
    """The whole table as ONE padded batch (every query padded to the longest), the pre-bucket layout."""
    from fairltr.buckets import BucketedBatch

    full = to_batch(df, features=features)
    return BucketedBatch([full], [np.arange(full.n_queries)], full.query_ids, len(df), full.feature_names)


@pytest.mark.parametrize("kwargs", [
    dict(gamma=0.0),
    dict(gamma=50.0),
    dict(gamma=50.0, fairness_loss="exposure_symmetric", l2=0.1),
    dict(gamma=50.0, colorblind=True),
    dict(gamma=50.0, optimizer="adam", max_iter=200),
    dict(gamma=50.0, reduce="mean", groups=3),
    dict(gamma=50.0, reduce="max", groups=3),
])
def test_bucketed_training_equals_one_padded_batch(kwargs):
    from fairltr.buckets import to_buckets

    kwargs = dict(kwargs)
    df = _skewed(seed=4, groups=kwargs.pop("groups", 2))
    assert len(to_buckets(df).batches) > 1
    kwargs.setdefault("max_iter", 25)
    bucketed = DELTR(tol=0.0, seed=1, **kwargs).fit(df)
    one = DELTR(tol=0.0, seed=1, **kwargs).fit_batch(_one_bucket(df))
    np.testing.assert_allclose(bucketed.mean_, one.mean_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(bucketed.scale_, one.scale_, rtol=1e-12)
    np.testing.assert_allclose(bucketed.weights_, one.weights_, rtol=1e-8, atol=1e-8)
    # near convergence tol=0 stops when the total no longer changes, which may differ by one step
    assert abs(len(bucketed.history) - len(one.history)) <= 1
    for a, b in zip(bucketed.history, one.history):
        for key in ("total", "listnet", "exposure"):
            assert a[key] == pytest.approx(b[key], rel=1e-8, abs=1e-8), key


def test_bucketed_autograd_path_equals_one_padded_batch():
    df = _skewed(seed=5)
    name = "test_deltr_bucketed_autograd_hinge"
    with temporary_loss(FairnessLoss(name, "ranking", lambda *a, **k: exposure_hinge(*a, **k), (GAMMA,))):
        bucketed = DELTR(gamma=50.0, max_iter=15, tol=0.0, fairness_loss=name).fit(df)
        one = DELTR(gamma=50.0, max_iter=15, tol=0.0, fairness_loss=name).fit_batch(_one_bucket(df))
        fused = DELTR(gamma=50.0, max_iter=15, tol=0.0).fit(df)
    np.testing.assert_allclose(bucketed.weights_, one.weights_, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(bucketed.weights_, fused.weights_, rtol=1e-6, atol=1e-9)


def test_fit_batch_of_a_padded_skewed_batch_splits_it_like_fit():
    df = _skewed(seed=6)
    a = DELTR(gamma=10.0, max_iter=10, tol=0.0).fit(df)
    b = DELTR(gamma=10.0, max_iter=10, tol=0.0).fit_batch(to_batch(df))
    np.testing.assert_array_equal(a.weights_, b.weights_)  # the same buckets, the same arithmetic
    assert a.history == b.history


def test_uniform_table_is_trained_as_one_batch():
    """One bucket: bit-for-bit the one padded batch (the uniform case is unchanged)."""
    df = _synthetic(n_queries=8, n=10, seed=7)
    a = DELTR(gamma=100.0, max_iter=10, tol=0.0).fit(df)
    b = DELTR(gamma=100.0, max_iter=10, tol=0.0).fit_batch(_one_bucket(df))
    np.testing.assert_array_equal(a.weights_, b.weights_)
    assert a.history == b.history


def test_fairness_signal_is_checked_over_all_buckets():
    # the only query holding both groups is the long one (its own bucket); the short ones are one-sided
    long = pd.DataFrame({"query_id": 0, "protected": [0, 1] * 20, "x1": np.linspace(-1, 1, 40),
                         "judgment": np.linspace(1, 0, 40)})
    short = pd.DataFrame({"query_id": np.repeat(np.arange(1, 21), 2), "protected": np.repeat([0, 1] * 10, 2),
                          "x1": np.tile([0.5, -0.5], 20), "judgment": np.tile([1.0, 0.0], 20)})
    df = pd.concat([long, short], ignore_index=True)
    from fairltr.buckets import to_buckets

    assert len(to_buckets(df).batches) == 2
    model = DELTR(gamma=10.0, max_iter=5).fit(df)
    assert np.all(np.isfinite(model.weights_)) and model.n_iter_ >= 1
    with pytest.raises(DataError, match="no query has both protected and non-protected"):
        DELTR(gamma=10.0).fit(pd.concat([long.assign(protected=0), short], ignore_index=True))


def test_degenerate_bucketed_tables_train_without_nan():
    one_query = _synthetic(n_queries=1, n=12, seed=8)
    m = DELTR(gamma=100.0, max_iter=10).fit(one_query)
    assert np.all(np.isfinite(m.weights_))
    # a long query and one-row queries (two buckets)
    df = pd.concat([_synthetic(n_queries=1, n=30, seed=9),
                    pd.DataFrame({"query_id": [50, 51, 52], "protected": [1, 0, 1], "x1": [0.1, 0.2, 0.3],
                                  "x2": [0.0, 1.0, 2.0], "judgment": [1.0, 2.0, 3.0]})], ignore_index=True)
    from fairltr.buckets import to_buckets

    assert len(to_buckets(df).batches) == 2
    m = DELTR(gamma=100.0, max_iter=10).fit(df)
    ref = DELTR(gamma=100.0, max_iter=10).fit_batch(_one_bucket(df))
    assert all(math.isfinite(h["total"]) for h in m.history)
    np.testing.assert_allclose(m.weights_, ref.weights_, rtol=1e-8, atol=1e-8)


# ---------------------------------------------------------------------------- estimator contract
def test_init_stores_the_arguments_verbatim_and_nothing_else():
    args = dict(gamma=np.float32(3.0), protected="sex", max_iter=None, lr=None, dtype=torch.float32, tol=0,
                columns=RankingColumns(query="qid", group="sex", judgment="label"), optimizer="no such")
    model = DELTR(**args)
    params = model.get_params()
    assert list(params) == DELTR._param_names() == [
        "gamma", "protected", "colorblind", "standardize", "l2", "optimizer", "max_iter", "lr", "tol", "seed",
        "device", "fairness_loss", "reduce", "dtype", "columns", "reference_group"]
    assert all(params[k] is v for k, v in args.items())  # no rewriting: max_iter stays None, bad values stay
    assert set(vars(model)) == set(params)  # no fitted state preset in __init__
    assert not hasattr(model, "weights_") and not hasattr(model, "history") and not hasattr(model, "coef_")


def test_set_params_and_repr():
    model = DELTR(1.0)
    assert model.set_params(gamma=5.0, max_iter=7) is model
    assert model.get_params()["gamma"] == 5.0 and model.max_iter == 7
    with pytest.raises(ConfigError, match="invalid parameter 'gama'") as exc:
        model.set_params(gama=1.0)
    assert isinstance(exc.value, ValueError)  # what scikit-learn raises
    assert repr(model).startswith("DELTR(gamma=5.0, protected='protected', ") and "columns=None" in repr(model)


def test_sklearn_clone_gives_an_unfitted_copy_that_fits_the_same():
    base = pytest.importorskip("sklearn.base")
    df = _synthetic(seed=21)
    model = DELTR(50.0, max_iter=8, dtype=torch.float64, columns=RankingColumns()).fit(df)
    twin = base.clone(model)
    assert twin is not model and not hasattr(twin, "weights_")
    assert twin.get_params(deep=False).keys() == model.get_params(deep=False).keys()
    assert all(twin.get_params()[k] == v for k, v in model.get_params().items())
    np.testing.assert_array_equal(twin.fit(df).weights_, model.weights_)


def test_fit_validates_derives_and_leaves_the_params_alone():
    df = _synthetic(seed=22)
    for optimizer, max_iter, lr in (("lbfgs", 200, 1.0), ("adam", 3000, 0.01)):
        model = DELTR(0.0, optimizer=optimizer, tol=1e-3)
        before = model.get_params()
        model.fit(df)
        assert model.get_params() == before and model.max_iter is None and model.lr is None
        assert (model.max_iter_, model.lr_) == (max_iter, lr)
        assert model.effective_params()["max_iter"] == max_iter and model.effective_params()["lr"] == lr
    explicit = DELTR(0.0, optimizer="adam", max_iter=4, lr=0.5).fit(df)
    assert (explicit.max_iter_, explicit.lr_, explicit.n_iter_) == (4, 0.5, 4)


def test_history_underscore_and_its_read_only_alias():
    model = DELTR(10.0, max_iter=4).fit(_synthetic(seed=23))
    assert model.history is model.history_ and len(model.history_) == model.n_iter_ + 1
    with pytest.raises(AttributeError):
        model.history = []  # type: ignore[misc]


def test_not_fitted_error_is_fairltr_config_and_attribute_error():
    model = DELTR(1.0)
    for call in (lambda: model.predict(_synthetic()), lambda: model.history, lambda: model.query_,
                 lambda: model.coef_, lambda: model.check_fitted()):
        with pytest.raises(NotFittedError, match="not fitted") as exc:
            call()
        assert isinstance(exc.value, (AttributeError)) and isinstance(exc.value, ConfigError)


def test_fit_uses_a_local_generator_not_the_global_seed():
    df = _synthetic(seed=24)
    torch.manual_seed(1)
    state = torch.get_rng_state()
    a = DELTR(5.0, max_iter=5, seed=3).fit(df)
    assert torch.equal(torch.get_rng_state(), state)  # the global RNG is untouched
    torch.manual_seed(2)
    b = DELTR(5.0, max_iter=5, seed=3).fit(df)
    np.testing.assert_array_equal(a.weights_, b.weights_)  # the global seed does not matter
    c = DELTR(5.0, max_iter=5, seed=4).fit(df)
    assert not np.array_equal(a.weights_, c.weights_)  # the estimator's seed does


def test_columns_parameter_protected_and_fit_keywords_agree():
    df = _synthetic(seed=25)
    renamed = df.rename(columns={"query_id": "qid", "protected": "sex", "judgment": "label"})
    contract = RankingColumns(query="qid", group="sex", judgment="label")
    reference = DELTR(30.0, max_iter=6).fit(df)
    fits = [DELTR(30.0, max_iter=6, columns=contract).fit(renamed),
            DELTR(30.0, max_iter=6, protected="sex", columns=contract).fit(renamed),
            DELTR(30.0, protected="sex", max_iter=6).fit(renamed, query="qid", judgment="label")]
    for model in fits:
        np.testing.assert_array_equal(model.weights_, reference.weights_)
        assert model.columns_ == contract and (model.query_, model.judgment_) == ("qid", "label")
        assert model.feature_names_ == ["sex", "x1", "x2"]
    with pytest.raises(ConfigError, match="protected='grp' and columns.group='sex' name different group columns"):
        DELTR(30.0, protected="grp", columns=contract).fit(renamed)
    with pytest.raises(ConfigError, match="DELTR needs a group column"):
        DELTR(30.0, columns=contract.replace(group=None)).fit(renamed)


# A model file written by the previous release (before the estimator contract): it must keep
# loading into the same model, and a fit of the same data must write the same fields and values.
OLD_MODEL = {
    "format": "fairltr.DELTR", "format_version": 1,
    "params": {"gamma": 10.0, "protected": "sex", "colorblind": False, "standardize": True, "l2": 0.0,
               "optimizer": "lbfgs", "max_iter": 3, "lr": 1.0, "tol": 1e-10, "seed": 0, "device": "auto",
               "fairness_loss": "exposure_hinge", "reduce": "max", "dtype": "float64"},
    "feature_names": ["sex", "x1", "x2"], "query": "qid", "judgment": "label", "n_iter": 3,
    "history": [
        {"iteration": 0, "total": 2.192196546882612, "listnet": 2.192195940179076, "exposure": 6.067035363134639e-08},
        {"iteration": 1, "total": 2.0227924884133373, "listnet": 1.9265885047571092, "exposure": 0.009620398365622812},
        {"iteration": 2, "total": 1.7959140768480177, "listnet": 1.7700502685588382,
         "exposure": 0.0025863808289179526},
        {"iteration": 3, "total": 1.7315424009989715, "listnet": 1.6918732271713222, "exposure": 0.003966917382764942},
    ],
    "weights": [0.17785579410048252, 0.6857849278857533, -0.15168765228865175],
    "mean": [0.5, 0.3333333333333333, 0.4583333333333333],
    "scale": [0.5, 0.793025150224688, 0.9176131477310516],
}
OLD_SCORES = [0.23244308771179015, 0.9068089722069271, -0.8939147580372645, 0.03439086715093737,
              0.6610047523438369, -0.9407329213762271]


def test_a_model_file_of_the_previous_release_loads_and_a_refit_writes_the_same_fields(tmp_path):
    df = pd.DataFrame({"qid": [1, 1, 1, 2, 2, 2], "sex": [1, 0, 0, 0, 1, 1],
                       "x1": [0.5, 1.5, -0.2, 0.3, 0.9, -1.0], "x2": [1.0, 0.0, 2.0, -1.0, 0.5, 0.25],
                       "label": [2.0, 3.0, 1.0, 1.0, 2.0, 0.0]})
    old = tmp_path / "old.json"
    old.write_text(json.dumps(OLD_MODEL, indent=1))
    model = DELTR.load(old)
    np.testing.assert_allclose(model.predict(df), OLD_SCORES, rtol=1e-13, atol=1e-15)  # a standardised dot product of 3 features
    assert model.columns_ == RankingColumns("qid", "sex", "label") and model.protected == "sex"
    assert (model.max_iter_, model.lr_, model.n_iter_) == (3, 1.0, 3) and model.history == OLD_MODEL["history"]
    assert model.effective_params() == OLD_MODEL["params"]
    refit = DELTR(10.0, max_iter=3, columns=RankingColumns("qid", "sex", "label")).fit(df)
    assert_same_model_file(json.loads(refit.save(tmp_path / "new.json").read_text()), OLD_MODEL)
    # loading and saving does no arithmetic: the floats round-trip through JSON exactly
    assert model.save(tmp_path / "again.json").read_text() == old.read_text()


# a refit does float64 arithmetic whose last digits depend on the CPU (FMA, BLAS kernels: relative
# 2e-15 measured on an AMD EPYC host); 1e-12 is far below any change of the optimiser's path
REFIT_RTOL = 1e-12


def assert_same_model_file(new: dict, reference: dict) -> None:
    """``new`` holds the fields of ``reference``: strings, ints and flags equal, floats within
    ``REFIT_RTOL`` (relative, plus 1e-15 absolute for values near 0)."""
    assert new.keys() == reference.keys()
    for key, ref in reference.items():
        if key == "history":
            assert [row.keys() for row in new[key]] == [row.keys() for row in ref]
            for got, want in zip(new[key], ref):
                assert got["iteration"] == want["iteration"]
                np.testing.assert_allclose([got[c] for c in want if c != "iteration"],
                                           [want[c] for c in want if c != "iteration"], rtol=REFIT_RTOL, atol=1e-15)
        elif key in ("weights", "mean", "scale"):
            np.testing.assert_allclose(new[key], ref, rtol=REFIT_RTOL, atol=1e-15, err_msg=key)
        else:
            assert new[key] == ref, key
