"""Search spaces from registry declarations, the zero band, FA*IR spaces, and a third-party
loss registered through the ``fairltr.losses`` entry point."""

from __future__ import annotations

import textwrap

import numpy as np
import optuna
import pytest

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError
from fairltr.losses import GAMMA, HyperParam, get_loss
from fairltr.losses import plugins as registry
from fairltr.workflows import RankingTrial, ranking_trial
from tests.plugin_dist import plugin_distribution
from tuning.space import SearchSpace, fair_space, loss_space, method_space, protected_share

optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_gamma_space_from_registry_has_zero_band():
    space = loss_space("exposure_hinge")
    (s,) = space.params
    assert s.param is get_loss("exposure_hinge").param("gamma")
    assert s.name == "gamma"  # the Optuna parameter is gamma itself (what optuna-dashboard shows), log-scaled
    lo, hi = s.bounds
    assert (lo, hi) == (GAMMA.low / 10.0, GAMMA.high)
    dist = space.distributions()["gamma"]
    assert (dist.low, dist.high, dist.log) == (lo, hi, True)
    # probability of exactly 0 = one decade out of (1 + 5) decades
    assert s.zero_probability == pytest.approx(1 / 6)
    assert s.to_value(lo) == 0.0 and s.to_value(GAMMA.low * (1 - 1e-12)) == 0.0
    assert s.to_value(GAMMA.low) == pytest.approx(GAMMA.low)
    assert s.to_value(1e5) == pytest.approx(1e5)
    for g in (0.0, 1e2, 3.3e4, 1e7):
        assert s.to_value(s.to_sampled(g)) == pytest.approx(g)
    assert lo < s.to_sampled(0.0) < GAMMA.low  # 0 enqueues inside the zero band
    with pytest.raises(ConfigError, match="outside the declared range"):
        s.to_sampled(1e9)
    assert repr(space) == "SearchSpace(gamma∈[10, 1e+07] log, <100 means 0)"


def test_sampled_values_cover_zero_and_log_range():
    space = loss_space("exposure_hinge")
    study = optuna.create_study(directions=["maximize", "minimize"], sampler=optuna.samplers.RandomSampler(seed=0))
    vals = []
    for _ in range(600):
        t = study.ask()
        v = space.suggest(t)
        assert t.user_attrs["gamma"] == v["gamma"]  # the value used
        assert v["gamma"] == (0.0 if t.params["gamma"] < GAMMA.low else t.params["gamma"])
        vals.append(v["gamma"])
        study.tell(t, [0.0, 0.0])
    vals = np.array(vals)
    zero = np.mean(vals == 0)
    assert abs(zero - 1 / 6) < 0.05  # binomial sd ~ 0.015
    pos = vals[vals > 0]
    assert pos.min() >= GAMMA.low and pos.max() <= GAMMA.high
    # log-uniform: about half of the positive mass below the geometric middle 10**4.5
    assert abs(np.mean(pos < 10 ** 4.5) - 0.5) < 0.08


def test_linear_param_and_enqueue_round_trip():
    hp = HyperParam("w", default=1.0, low=0.5, high=2.5, include_zero=True)
    space = SearchSpace([hp, HyperParam("v", default=1, low=0, high=1)])
    w, v = space.params
    assert w.name == "w" and w.bounds == pytest.approx((0.3, 2.5)) and w.to_value(0.4) == 0.0
    assert not w.distribution().log
    assert v.zero_band == 0.0  # low = 0 already includes 0
    study = optuna.create_study(directions=["maximize", "minimize"])
    study.enqueue_trial(space.sampled_for({"w": 0.0, "v": 0.25}))
    t = study.ask()
    assert space.suggest(t) == {"w": 0.0, "v": 0.25}
    assert space.values_from_params(t.params) == {"w": 0.0, "v": 0.25}
    with pytest.raises(ConfigError, match="unknown hyper-parameter"):
        space.sampled_for({"nope": 1})
    with pytest.raises(ConfigError, match="duplicate"):
        SearchSpace([hp, hp])


def test_fair_space_around_share(small_rankings):
    train, _ = small_rankings
    share = float((train["protected"] >= 1).mean())
    space = method_space("fair-post", train)
    p, a = space.params
    assert p.param.name == "fair_p" and p.bounds == pytest.approx((max(0.01, share / 2), min(0.95, 2 * share + 0.1)))
    assert p.bounds[0] < share < p.bounds[1]
    assert a.name == "fair_alpha" and a.distribution().log and a.zero_band == 0.0
    assert fair_space(0.1, p_range=(0.2, 0.4)).params[0].bounds == (0.2, 0.4)
    with pytest.raises(ConfigError, match="0 < low < high < 1"):
        fair_space(0.1, p_range=(0.0, 0.4))
    with pytest.raises(ConfigError, match="unknown sweep method"):
        method_space("bogus", train)
    # another group column, named by the column contract
    renamed = train.rename(columns={"protected": "sex"}).assign(protected=0)
    other = method_space("fair-post", renamed, columns=RankingColumns(group="sex")).params[0].bounds
    assert other == pytest.approx(p.bounds) and protected_share(renamed, RankingColumns(group="sex")) == pytest.approx(share)
    assert protected_share(renamed) == 0.0


PLUGIN = textwrap.dedent('''
    import torch
    from fairltr.losses import FairnessLoss, HyperParam

    def mean_score_gap(scores, groups, mask, reduce="max", n_groups=None):
        """Squared gap between the mean scores of group 0 and group 1 in each query."""
        m = mask.to(scores.dtype)
        g0 = m * (groups == 0)
        g1 = m * (groups >= 1)
        mean0 = (scores * g0).sum(-1) / g0.sum(-1).clamp_min(1)
        mean1 = (scores * g1).sum(-1) / g1.sum(-1).clamp_min(1)
        both = (g0.sum(-1) > 0) & (g1.sum(-1) > 0)
        return torch.where(both, (mean0 - mean1) ** 2, torch.zeros_like(mean0))

    LOSS = FairnessLoss(
        "toy_mean_gap", "ranking", mean_score_gap,
        (HyperParam("beta", default=1.0, low=0.1, high=100.0, log=True, include_zero=True),
         HyperParam("margin", default=0.0, low=0.0, high=0.5)),
        "third-party test loss",
    )
''')


@pytest.fixture
def third_party_loss(tmp_path, monkeypatch):
    """A plugin distribution on sys.path whose entry point registers ``toy_mean_gap``."""
    points = {"fairltr.losses": {"toy_mean_gap": "toy_fair_plugin:LOSS"}}
    with plugin_distribution(tmp_path, monkeypatch, "toy_fair_plugin", PLUGIN, points):
        saved = dict(registry._REGISTRY)
        registry.reload_entry_points()
        yield "toy_mean_gap"
        registry._REGISTRY.clear()
        registry._REGISTRY.update(saved)


def test_space_from_entry_point_loss(third_party_loss, small_rankings):
    with pytest.raises(ConfigError):
        registry._REGISTRY.pop(third_party_loss, None)
        get_loss(third_party_loss)  # really gone without the entry point scan ...
    registry.reload_entry_points()  # ... and back through it
    space = loss_space(third_party_loss)
    assert [s.name for s in space.params] == ["beta", "margin"]
    assert space.params[0].bounds == pytest.approx((0.01, 100.0))  # one decade of zero band below 0.1
    assert space.params[1].zero_band == 0.0
    # a sweep method over the plugin: its weight ``beta`` is DELTR's gamma
    train, test = small_rankings
    runner = ranking_trial("deltr", [(train, test)], loss=third_party_loss, max_iter=30)
    assert isinstance(runner, RankingTrial) and runner.space.names == ["beta", "margin"]
    plain = runner({"beta": 0.0, "margin": 0.0})
    strong = runner({"beta": 100.0, "margin": 0.0})
    assert plain.keys() == strong.keys()
    assert plain["kendall_tau"] != strong["kendall_tau"]  # the plugin loss really entered training
