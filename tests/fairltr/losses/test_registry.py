"""The fairness-loss registry: names, hyper-parameter declarations, duplicates, entry-point plugins."""

from __future__ import annotations

import importlib
import logging
import sys
import textwrap

import pytest
import torch

from fairltr.errors import ConfigError
from fairltr.losses import (
    ENTRY_POINT_GROUP,
    GAMMA,
    FairnessLoss,
    HyperParam,
    available_losses,
    deltr_objective,
    get_loss,
    register_loss,
    reload_entry_points,
)
from fairltr.losses import registry as registry_module


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


def test_register_refuses_duplicates_but_allows_overwrite():
    name = "test_registry_dup"
    first = FairnessLoss(name, "ranking", None)
    try:
        register_loss(first)
        assert register_loss(first) is first  # same object: idempotent
        with pytest.raises(ConfigError, match="already registered"):
            register_loss(FairnessLoss(name, "ranking", None, description="other"))
        second = FairnessLoss(name, "ranking", None, description="replacement")
        register_loss(second, overwrite=True)
        assert get_loss(name) is second
        with pytest.raises(TypeError, match="FairnessLoss"):
            register_loss("not a loss")  # type: ignore[arg-type]
    finally:
        registry_module._REGISTRY.pop(name, None)


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """A fake installed distribution with a ``fairltr.losses`` entry point on sys.path."""
    mod = tmp_path / "fairltr_test_plugin.py"
    mod.write_text(textwrap.dedent("""
        from fairltr.losses import FairnessLoss, HyperParam, exposure_hinge

        def scaled_hinge(scores, groups, mask, *, reduce="max", n_groups=None):
            return 2.0 * exposure_hinge(scores, groups, mask, reduce=reduce, n_groups=n_groups)

        LOSS = FairnessLoss("test_plugin_scaled_hinge", "ranking", scaled_hinge,
                            (HyperParam("gamma", 1.0, 1e-3, 1e3, log=True, include_zero=True),))

        def make():
            return FairnessLoss("test_plugin_factory", "ranking", None)
    """))
    dist = tmp_path / "fairltr_test_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fairltr-test-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\n"
        "scaled = fairltr_test_plugin:LOSS\n"
        "factory = fairltr_test_plugin:make\n"
        "broken = fairltr_test_plugin_missing:LOSS\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield tmp_path
    for name in ("test_plugin_scaled_hinge", "test_plugin_factory"):
        registry_module._REGISTRY.pop(name, None)
    sys.modules.pop("fairltr_test_plugin", None)


def test_entry_point_plugins_load(plugin_dir, caplog):
    with caplog.at_level(logging.WARNING, logger="fairltr.losses.registry"):
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
