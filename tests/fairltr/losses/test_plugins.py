"""The fairness-loss registry: names, hyper-parameter declarations, duplicates, entry-point plugins."""

from __future__ import annotations

import logging

import pytest
import torch

from fairltr.errors import ConfigError
from tests.plugin_dist import plugin_distribution
from fairltr.losses import (
    ENTRY_POINT_GROUP,
    GAMMA,
    FairnessLoss,
    HyperParam,
    available_losses,
    deltr_objective,
    exposure_hinge,
    get_loss,
    register_loss,
    registry_snapshot,
    reload_entry_points,
    temporary_loss,
    unregister_loss,
)


def test_builtin_losses_are_registered_with_declared_params():
    assert {"none", "exposure_hinge", "exposure_symmetric"} <= set(available_losses("ranking"))
    assert {"lakda_kl", "mse_align"} <= set(available_losses("retrieval"))
    hinge = get_loss("exposure_hinge")
    assert hinge.kind == "ranking" and hinge.weight_param.name == "gamma"
    assert hinge.param("gamma") is GAMMA and hinge.defaults() == {"gamma": GAMMA.default}
    assert get_loss("lakda_kl").weight_param.name == "alpha"
    assert get_loss("none").weight_param is None
    with pytest.raises(ConfigError, match="no hyper-parameter 'alpha'"):
        hinge.param("alpha")


def test_unknown_loss_error_lists_the_names():
    with pytest.raises(ConfigError) as err:
        get_loss("exposure_hinj")
    msg = str(err.value)
    assert "exposure_hinj" in msg and "exposure_hinge" in msg and "lakda_kl" in msg


def test_hyperparam_declaration_checks():
    with pytest.raises(ConfigError, match="low 2.0 > high 1.0"):
        HyperParam("x", 1.0, 2.0, 1.0)
    with pytest.raises(ConfigError, match="log range needs low > 0"):
        HyperParam("x", 1.0, 0.0, 1.0, log=True)


def test_hyperparam_validate():
    assert GAMMA.validate(0) == 0.0  # include_zero on a log range
    assert GAMMA.validate("1e5") == 1e5
    with pytest.raises(ConfigError, match="gamma must be >= 0"):
        GAMMA.validate(-1.0)
    with pytest.raises(ConfigError, match="finite"):
        GAMMA.validate(float("nan"))
    with pytest.raises(ConfigError, match="finite"):
        GAMMA.validate(float("inf"))
    signed = HyperParam("shift", 0.0, -1.0, 1.0)
    assert signed.validate(-0.5) == -0.5


def test_register_refuses_duplicates_but_allows_overwrite(loss_registry):
    name = "test_registry_dup"
    first = FairnessLoss(name, "ranking", None)
    register_loss(first)
    assert register_loss(first) is first  # same object: idempotent
    with pytest.raises(ConfigError, match="already registered"):
        register_loss(FairnessLoss(name, "ranking", None, description="other"))
    second = FairnessLoss(name, "ranking", None, description="replacement")
    register_loss(second, overwrite=True)
    assert get_loss(name) is second
    with pytest.raises(TypeError, match="FairnessLoss"):
        register_loss("not a loss")  # type: ignore[arg-type]
    assert unregister_loss(name) is second and unregister_loss(name) is None
    with pytest.raises(ConfigError, match="unknown fairness loss"):
        get_loss(name)


def test_temporary_loss_restores_the_name_even_after_an_error():
    name = "test_registry_temporary"
    loss = FairnessLoss(name, "ranking", None)
    with temporary_loss(loss) as registered:
        assert registered is loss and get_loss(name) is loss
    assert name not in available_losses()
    builtin = get_loss("exposure_hinge")
    replacement = FairnessLoss("exposure_hinge", "ranking", None, description="stand-in")
    with pytest.raises(ConfigError, match="already registered"):
        with temporary_loss(replacement):  # a taken name needs overwrite=True ...
            pass
    assert get_loss("exposure_hinge") is builtin  # ... and a refused registration changes nothing
    with pytest.raises(RuntimeError, match="inside"):
        with temporary_loss(replacement, overwrite=True):
            assert get_loss("exposure_hinge") is replacement
            raise RuntimeError("inside")
    assert get_loss("exposure_hinge") is builtin


def test_registry_snapshot_undoes_registrations_removals_and_scans():
    before = {name: get_loss(name) for name in available_losses()}
    with registry_snapshot():
        register_loss(FairnessLoss("test_registry_snapshot", "ranking", None))
        unregister_loss("exposure_symmetric")
        reload_entry_points()
        assert "test_registry_snapshot" in available_losses()
        assert "exposure_symmetric" not in available_losses()
    assert {name: get_loss(name) for name in available_losses()} == before


def test_loss_registry_fixture_is_the_registry_module(loss_registry):
    loss_registry.register_loss(FairnessLoss("test_registry_fixture", "ranking", None))
    loss_registry.unregister_loss("mse_align")  # undone after the test (registry_snapshot, tested above)
    assert "test_registry_fixture" in available_losses() and "mse_align" not in available_losses()


@pytest.mark.parametrize("kwargs", [dict(kind="retrieval", fn=lambda *a: 0), dict(fused="quadratic"), dict(fn=None)])
def test_fused_declaration_is_checked(kwargs):
    base = dict(name="test_registry_fused", kind="ranking", fn=exposure_hinge, fused="hinge")
    with pytest.raises(ConfigError, match="fused must be"):
        FairnessLoss(**(base | kwargs))


def test_builtin_fused_declarations():
    assert get_loss("exposure_hinge").fused == "hinge" and get_loss("exposure_symmetric").fused == "symmetric"
    assert get_loss("none").fused is None and get_loss("none").fn is None


@pytest.mark.parametrize("value,message", [
    (-1.0, "gamma must be >= 0, got -1.0"), (float("nan"), "gamma must be finite"),
    (True, "gamma must be a finite number, got True"), ("big", "gamma must be a finite number, got 'big'"),
    (None, "gamma must be a finite number, got None"),
])
def test_every_gamma_check_is_the_registry_declaration(value, message):
    """DELTR, the ranker settings of the workflows, deltr_objective and LinearDELTRObjective
    all reject a bad gamma with the one message of GAMMA.validate."""
    from fairltr import DELTR
    from fairltr.losses import LinearDELTRObjective
    from fairltr.workflows.ranking import RankerSpec

    with pytest.raises(ConfigError) as declared:
        GAMMA.validate(value)
    assert str(declared.value).startswith(message)
    x = torch.zeros(1, 2, 1, dtype=torch.float64)
    y = torch.zeros(1, 2, dtype=torch.float64)
    g = torch.tensor([[0, 1]])
    m = torch.ones(1, 2, dtype=torch.bool)
    checks = [lambda: DELTR(value).settings(), lambda: RankerSpec(gamma=value),
              lambda: deltr_objective(y, y, g, m, value), lambda: LinearDELTRObjective(x, y, g, m, value)]
    for check in checks:
        with pytest.raises(ConfigError) as exc:
            check()
        assert str(exc.value) == str(declared.value)


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """A fake installed distribution with a ``fairltr.losses`` entry point on sys.path."""
    source = """
        from fairltr.losses import FairnessLoss, HyperParam, exposure_hinge

        def scaled_hinge(scores, groups, mask, *, reduce="max", n_groups=None):
            return 2.0 * exposure_hinge(scores, groups, mask, reduce=reduce, n_groups=n_groups)

        LOSS = FairnessLoss("test_plugin_scaled_hinge", "ranking", scaled_hinge,
                            (HyperParam("gamma", 1.0, 1e-3, 1e3, log=True, include_zero=True),))

        def make():
            return FairnessLoss("test_plugin_factory", "ranking", None)
    """
    points = {ENTRY_POINT_GROUP: {"scaled": "fairltr_test_plugin:LOSS", "factory": "fairltr_test_plugin:make",
                                  "broken": "fairltr_test_plugin_missing:LOSS"}}
    with plugin_distribution(tmp_path, monkeypatch, "fairltr_test_plugin", source, points), registry_snapshot():
        yield tmp_path


def test_entry_point_plugins_load(plugin_dir, caplog):
    with caplog.at_level(logging.WARNING, logger="fairltr.losses.plugins"):
        reload_entry_points()
    assert "test_plugin_scaled_hinge" in available_losses("ranking")
    assert get_loss("test_plugin_factory").fn is None  # a zero-argument factory works too
    assert any("broken" in r.getMessage() for r in caplog.records)  # a broken plugin only warns
    # the plugin loss drives the objective
    s = torch.tensor([[2.0, 1.0, 0.0]], dtype=torch.float64)
    y = torch.tensor([[2.0, 1.0, 0.0]], dtype=torch.float64)
    g = torch.tensor([[0, 0, 1]])
    m = torch.ones(1, 3, dtype=torch.bool)
    plugin = deltr_objective(s, y, g, m, 1.0, fairness_loss="test_plugin_scaled_hinge")
    base = deltr_objective(s, y, g, m, 1.0)
    assert float(base.exposure) > 0
    torch.testing.assert_close(plugin.exposure, 2.0 * base.exposure)


def test_retrieval_inputs_declaration():
    assert get_loss("mse_align").inputs == "embeddings" and get_loss("lakda_kl").inputs == "scores"
    assert FairnessLoss("test_registry_inputs", "retrieval", None).inputs == "scores"  # the default
    with pytest.raises(ConfigError, match="inputs must be one of"):
        FairnessLoss("test_registry_inputs", "retrieval", None, inputs="tokens")
    with pytest.raises(ConfigError, match="for retrieval losses, not a ranking loss"):
        FairnessLoss("test_registry_inputs", "ranking", None, inputs="embeddings")


def test_resolve_options_validates_overrides():
    lakda = get_loss("lakda_kl")
    assert lakda.resolve_options() == {"temperature": 1.0, "symmetric": False}
    assert lakda.resolve_options({"temperature": 2}) == {"temperature": 2.0, "symmetric": False}
    assert lakda.options == {"temperature": 1.0, "symmetric": False}  # the declaration is untouched
    for overrides, message in [
        ({"temprature": 2.0}, "fairness loss 'lakda_kl' has no option 'temprature'; options: ['symmetric', 'temperature']"),
        ({"temperature": "hot"}, "fairness loss 'lakda_kl' option 'temperature' must be a finite number, got 'hot'"),
        ({"temperature": float("inf")}, "fairness loss 'lakda_kl' option 'temperature' must be a finite number, got inf"),
        ({"symmetric": 1}, "fairness loss 'lakda_kl' option 'symmetric' must be true or false, got 1"),
    ]:
        with pytest.raises(ConfigError) as exc:
            lakda.resolve_options(overrides)
        assert str(exc.value).startswith(message)
    with pytest.raises(ConfigError, match=r"option 'reduce' must be one of \['max', 'mean'\], got 'sum'"):
        get_loss("exposure_hinge").resolve_options({"reduce": "sum"})
    with pytest.raises(ConfigError, match="option 'disparity' must be one of"):
        get_loss("plrank").resolve_options({"disparity": "cubic"})
    with pytest.raises(ConfigError, match="has no option 'reduce'"):
        get_loss("none").resolve_options({"reduce": "max"})


def test_option_choices_declaration_is_checked():
    with pytest.raises(ConfigError, match="option_choices names 'colour'"):
        FairnessLoss("test_registry_choices", "ranking", None, options={"reduce": "max"},
                     option_choices={"colour": ("red",)})
    with pytest.raises(ConfigError, match="the default 'sum' of option 'reduce'"):
        FairnessLoss("test_registry_choices", "ranking", None, options={"reduce": "sum"},
                     option_choices={"reduce": ("max", "mean")})
