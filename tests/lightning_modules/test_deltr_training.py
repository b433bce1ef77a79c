"""train_deltr_lightning on a DataFrame: the estimator's model on Law race, estimator-compatible
attributes, history and persistence, and the DDP batch dealing."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fairltr import DELTR
from fairltr.data import to_batch
from fairltr.errors import ConfigError
from fairltr.io import read_deltr_csv
from fairltr.losses import deltr_objective
from fairltr.metrics import evaluate_ranking
from fairltr.synthetic import make_biased_rankings
from lightning_modules import QueryBatchSampler, train_deltr_lightning
from lightning_modules.deltr_training import ADAM_MIN_EPOCHS, ADAM_STEPS, default_epochs


@pytest.fixture(scope="module")
def law(deltr_data):
    d = deltr_data / "LawStudents" / "race_black"
    return read_deltr_csv(d / "LawStudents_Race_train.txt"), read_deltr_csv(d / "LawStudents_Race_test.txt")


@pytest.fixture(scope="module")
def frames():
    return make_biased_rankings(n_queries=24, n_candidates=11, n_features=3, seed=4)


def _objective_at(model: DELTR, df, gamma: float, l2: float = 0.0) -> float:
    """Independent: score with the model, pad the scores, evaluate the summed objective."""
    b = to_batch(df.assign(score=model.predict(df)), features=["score"])
    t = deltr_objective(b.features[..., 0], b.judgments, b.groups, b.mask, gamma)
    return float(t.total) + l2 * float((model.weights_ ** 2).sum())


@pytest.mark.parametrize("gamma", [0.0, 5e5])
def test_law_race_lands_on_the_estimator(law, gamma):
    """Issue A: within 0.01 of the estimator's test exposure_ratio / kendall_tau (here: the same
    model, since one batch holds Law race's single query and the default is the estimator's L-BFGS)."""
    train, test = law
    est = DELTR(gamma=gamma).fit(train)
    lit = train_deltr_lightning(train, gamma=gamma)
    assert lit.optimizer == "lbfgs" and lit.n_iter_ == est.n_iter_
    a = evaluate_ranking(test, est.predict(test), k=(10,))
    b = evaluate_ranking(test, lit.predict(test), k=(10,))
    for key in ("exposure_ratio", "kendall_tau"):
        assert abs(a[key] - b[key]) <= 0.01, (key, a[key], b[key])
    np.testing.assert_allclose(lit.weights_, est.weights_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(lit.mean_, est.mean_, rtol=1e-12)
    np.testing.assert_allclose(lit.scale_, est.scale_, rtol=1e-12)
    assert [h["iteration"] for h in lit.history] == list(range(lit.n_iter_ + 1))
    for h, e in zip(lit.history, est.history):
        assert h["total"] == pytest.approx(e["total"], rel=1e-9)
    if gamma:  # the fairness term moved the model: exposure closer to parity than at gamma 0
        assert b["exposure_ratio"] > 0.95


def test_attributes_history_and_params_match_the_estimator_contract(frames, tmp_path):
    train, test = frames
    seen = []
    model = train_deltr_lightning(train, gamma=50.0, batch_queries=5, epochs=6, l2=0.01, seed=3,
                                  callback=lambda i, rec: seen.append((i, rec["total"])))
    est = DELTR(gamma=50.0, l2=0.01, optimizer="adam", max_iter=6, seed=3).fit(train)
    assert set(model.get_params()) == set(est.get_params())
    assert model.effective_params() | {"device": "cpu"} == est.effective_params() | {"device": "cpu"}
    assert model.columns_ == est.columns_ and (model.max_iter_, model.lr_) == (est.max_iter_, est.lr_)
    assert model.feature_names_ == est.feature_names_ == ["protected", "x1", "x2", "x3"]
    assert (model.query_, model.judgment_, model.n_iter_) == ("query_id", "judgment", 6)
    np.testing.assert_allclose(model.mean_, est.mean_, rtol=1e-12)
    np.testing.assert_allclose(model.scale_, est.scale_, rtol=1e-12)
    assert len(model.history) == 7 and [i for i, _ in seen] == list(range(7))
    assert [t for _, t in seen] == [h["total"] for h in model.history]
    # the last entry is the whole objective (+ l2 ||w||^2) at the returned weights
    assert model.history[-1]["total"] == pytest.approx(_objective_at(model, train, 50.0, 0.01), rel=1e-10)
    assert model.history[-1]["total"] < model.history[0]["total"]
    # persistence: both formats reload to the same predictions, parameters and history
    for suffix in (".json", ".safetensors"):
        back = DELTR.load(model.save(tmp_path / f"m{suffix}"))
        np.testing.assert_array_equal(back.predict(test), model.predict(test))
        assert back.effective_params() == model.effective_params() and back.history == model.history
        assert back.columns_ == model.columns_
        assert back.n_iter_ == 6 and back.feature_names_ == model.feature_names_
    ranked = model.rank(test)
    assert ranked.groupby("query_id")["rank"].min().eq(1).all()


def test_colorblind_and_explicit_features(frames):
    train, _ = frames
    blind = train_deltr_lightning(train, gamma=0.0, colorblind=True)
    assert blind.feature_names_ == ["x1", "x2", "x3"] and blind.colorblind
    est = DELTR(gamma=0.0, colorblind=True).fit(train)
    np.testing.assert_allclose(blind.weights_, est.weights_, rtol=1e-7, atol=1e-9)
    two = train_deltr_lightning(train, gamma=0.0, features=["x1", "x2"], epochs=3)
    assert two.feature_names_ == ["x1", "x2"] and two.weights_.shape == (2,)


def test_adam_default_budget_and_bad_settings(frames):
    train, _ = frames
    assert default_epochs("adam", 1000) == ADAM_MIN_EPOCHS
    assert default_epochs("adam", 7) == int(np.ceil(ADAM_STEPS / 7))
    with pytest.raises(ConfigError, match="'lbfgs' needs full batches"):
        train_deltr_lightning(train, gamma=1.0, batch_queries=4, optimizer="lbfgs")
    with pytest.raises(ConfigError, match="optimizer must be"):
        train_deltr_lightning(train, gamma=1.0, optimizer="sgd")
    with pytest.raises(ConfigError, match="gamma must be"):
        train_deltr_lightning(train, gamma=-1.0)
    with pytest.raises(ConfigError, match="batch_queries must be"):
        train_deltr_lightning(train, gamma=1.0, batch_queries=0)
    with pytest.raises(ConfigError, match="trainer_options may not set"):
        train_deltr_lightning(train, gamma=1.0, trainer_options={"max_epochs": 3})
    with pytest.raises(ConfigError, match="lr_decay must be one of"):
        train_deltr_lightning(train, gamma=1.0, batch_queries=4, lr_decay="step")
    with pytest.raises(ConfigError, match="lr_decay applies to Adam only"):
        train_deltr_lightning(train, gamma=1.0, lr_decay="cosine")


@pytest.mark.parametrize("n,size", [(10, 4), (1, 1), (7, 7), (9, 2)])
def test_sampler_deals_the_same_global_batches_to_any_number_of_processes(n, size):
    one = list(QueryBatchSampler(n, size, shuffle=True, seed=5))
    for world in (2, 3):
        parts = [list(QueryBatchSampler(n, size, rank=r, world=world, shuffle=True, seed=5)) for r in range(world)]
        assert all(len(p) == len(one) for p in parts)  # same number of steps on every process
        for step, glob in enumerate(one):
            assert sum((p[step] for p in parts), []) == glob
    s = QueryBatchSampler(n, size, shuffle=True, seed=5)
    s.set_epoch(1)
    assert sorted(sum(list(s), [])) == list(range(n))


@pytest.mark.parametrize("decay", ["cosine", "none", "linear"])
def test_two_epochs_of_mini_batches_equal_a_manual_adam_loop(frames, decay):
    """Independent check of the Lightning loop: Adam on the same batches by hand, with the
    learning rate of step t (of T) set to 0.01 x (1 + cos(pi t / T)) / 2, 0.01, or 0.01 x (1 - t / T)."""
    import math

    from lightning_modules import DELTRModule, RankingDataModule

    train, _ = frames
    model = train_deltr_lightning(train, gamma=20.0, batch_queries=6, epochs=2, shuffle=False, seed=1,
                                  lr_decay=None if decay == "cosine" else decay)
    assert model.training_["lr_decay"] == decay
    dm = RankingDataModule(train, batch_size=6, shuffle=False)
    dm.setup()
    ref = DELTRModule(dm.n_features, gamma=20.0, seed=1, n_groups=2)
    opt = torch.optim.Adam(ref.parameters(), lr=0.01)
    total = 2 * len(dm.train_dataloader())
    factor = {"cosine": lambda t: 0.5 * (1 + math.cos(math.pi * t / total)), "none": lambda t: 1.0,
              "linear": lambda t: 1 - t / total}[decay]
    step = 0
    for _ in range(2):
        for batch in dm.train_dataloader():
            opt.param_groups[0]["lr"] = 0.01 * factor(step)
            opt.zero_grad()
            ref.objective(batch).total.backward()
            opt.step()
            step += 1
    assert step == total == 6  # 16 training queries, 6 per step, 2 epochs
    np.testing.assert_allclose(model.weights_, ref.weight.detach().numpy(), rtol=1e-12, atol=1e-14)
