"""The Pareto front (Optuna's ``study.best_trials``, which the reports use), hypervolume and best
trade-off against brute-force computations."""

from __future__ import annotations

import itertools
import math

import numpy as np
import optuna
import pytest
from optuna.trial import TrialState

from fairltr.errors import ConfigError
from tuning.pareto import as_losses, best_tradeoff_index, hypervolume_2d

optuna.logging.set_verbosity(optuna.logging.ERROR)
DIRS = ["maximize", "minimize"]


def dominates(a_loss, b_loss) -> bool:
    return bool(np.all(a_loss <= b_loss) and np.any(a_loss < b_loss))


def front_of(values, directions, feasible=None) -> np.ndarray:
    """Mask of ``study.best_trials`` for a study holding one trial per row: a NaN row is a FAIL
    trial (Optuna cannot store NaN), ``feasible`` sets one constraint per trial (-1 or +1)."""
    study = optuna.create_study(directions=list(directions))
    for i, row in enumerate(np.asarray(values, float)):
        t = study.ask()
        if feasible is not None:
            t.set_constraint("c", -1.0 if feasible[i] else 1.0)
        if np.all(np.isfinite(row)):
            study.tell(t, list(row))
        else:
            study.tell(t, state=TrialState.FAIL)
    mask = np.zeros(len(values), bool)
    mask[[t.number for t in study.best_trials]] = True
    return mask


def brute_front(values, directions, feasible=None):
    loss = as_losses(values, directions)
    n = len(loss)
    ok = np.all(np.isfinite(loss), 1) & (np.ones(n, bool) if feasible is None else np.asarray(feasible))
    out = np.zeros(n, bool)
    for i in range(n):
        if ok[i]:
            out[i] = not any(ok[j] and np.all(loss[j] <= loss[i]) and np.any(loss[j] < loss[i]) for j in range(n))
    return out


def brute_hypervolume(values, directions, ref):
    """Area of the union of boxes [l, r] by coordinate compression: every grid cell is inside
    the union iff some point's box covers the cell's centre."""
    loss = as_losses(values, directions)
    r = as_losses(np.asarray(ref, float)[None], directions)[0]
    loss = loss[np.all(loss < r, 1)]
    if len(loss) == 0:
        return 0.0
    xs = np.unique(np.r_[loss[:, 0], r[0]])
    ys = np.unique(np.r_[loss[:, 1], r[1]])
    area = 0.0
    for (x0, x1), (y0, y1) in itertools.product(zip(xs[:-1], xs[1:]), zip(ys[:-1], ys[1:])):
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        if np.any((loss[:, 0] <= cx) & (loss[:, 1] <= cy)):
            area += (x1 - x0) * (y1 - y0)
    return area


@pytest.mark.parametrize("seed", range(6))
def test_front_matches_brute_force_with_ties(seed):
    rng = np.random.default_rng(seed)
    v = np.round(rng.random((60, 2)), 1)  # coarse grid: many ties and duplicates
    v[rng.random(60) < 0.05] = np.nan
    feas = rng.random(60) < 0.8
    for f in (None, feas):
        got = front_of(v, DIRS, f)
        assert np.array_equal(got, brute_front(v, DIRS, f))
    # 3 objectives
    v3 = np.round(rng.random((40, 3)), 1)
    d3 = ["minimize", "maximize", "minimize"]
    assert np.array_equal(front_of(v3, d3), brute_front(v3, d3))


def test_front_is_non_dominated_and_complete():
    rng = np.random.default_rng(1)
    v = rng.random((200, 2))
    mask = front_of(v, DIRS)
    loss = as_losses(v, DIRS)
    front, rest = loss[mask], loss[~mask]
    assert not any(dominates(a, b) for a in front for b in front)
    assert all(any(dominates(a, b) for a in front) for b in rest)


@pytest.mark.parametrize("seed", range(5))
def test_hypervolume_matches_grid(seed):
    rng = np.random.default_rng(seed)
    v = np.round(rng.random((25, 2)), 2)
    ref = [0.1, 0.9]  # maximise col 0 (worst 0.1), minimise col 1 (worst 0.9): some points outside
    assert hypervolume_2d(v, DIRS, ref) == pytest.approx(brute_hypervolume(v, DIRS, ref), rel=1e-12, abs=1e-15)


def test_hypervolume_known_values():
    # one point (tau 0.3, gap 0.01) vs reference (0, 0.05): a 0.3 x 0.04 box
    assert hypervolume_2d([[0.3, 0.01]], DIRS, [0.0, 0.05]) == pytest.approx(0.012)
    # two points: union of 0.3x0.04 and 0.1x0.05 boxes = 0.012 + 0.1 * 0.01
    assert hypervolume_2d([[0.3, 0.01], [0.1, 0.0]], DIRS, [0.0, 0.05]) == pytest.approx(0.013)
    # a dominated point adds nothing; a point beyond the reference adds nothing
    assert hypervolume_2d([[0.3, 0.01], [0.2, 0.02], [-0.1, 0.0]], DIRS, [0.0, 0.05]) == pytest.approx(0.012)
    assert hypervolume_2d(np.empty((0, 2)), DIRS, [0.0, 0.05]) == 0.0
    with pytest.raises(ConfigError, match="finite"):
        hypervolume_2d([[0.3, 0.01]], DIRS, [0.0, float("nan")])


def best_on_front(v, feasible=None) -> int | None:
    """The reports' best trade-off: ``best_tradeoff_index`` over the rows of Optuna's front."""
    rows = np.flatnonzero(front_of(v, DIRS, feasible))
    i = best_tradeoff_index(v[rows], DIRS)
    return None if i is None else int(rows[i])


def test_best_tradeoff_excludes_infeasible_and_is_on_front():
    v = np.array([[0.30, 0.020], [0.25, 0.005], [0.10, 0.000], [0.29, 0.004], [0.20, 0.010]])
    # without constraints the knee is row 3 (near best on both)
    assert best_on_front(v) == 3
    feas = np.array([True, True, True, False, True])
    i = best_on_front(v, feas)
    assert i == 1 and feas[i] and front_of(v, DIRS, feas)[i]
    assert best_on_front(v, np.zeros(5, bool)) is None


def test_best_tradeoff_against_brute_force():
    """Min-max scaled over the front, nearest to (0, 0); ties to the lower row."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        f = rng.random((7, 2))
        loss = as_losses(f, DIRS)
        scaled = (loss - loss.min(0)) / np.where(np.ptp(loss, 0) > 0, np.ptp(loss, 0), 1.0)
        want = min(range(7), key=lambda i: (math.hypot(*scaled[i]), i))
        assert best_tradeoff_index(f, DIRS) == want
    assert best_tradeoff_index(np.empty((0, 2)), DIRS) is None
    assert best_tradeoff_index([[0.5, 0.1], [0.5, 0.1]], DIRS) == 0  # identical points: the first


def test_bad_directions():
    with pytest.raises(ConfigError, match="maximize"):
        as_losses([[1, 2]], ["up", "down"])
    with pytest.raises(ConfigError, match="3 objective values per trial"):
        hypervolume_2d([[1, 2, 3]], DIRS, [0, 0])


def test_nadir_reference_with_margin():
    import pandas as pd

    from tuning.report import nadir_reference

    a = pd.DataFrame({"kendall_tau": [0.1, 0.3], "exposure_gap": [0.0, 0.04]})
    b = pd.DataFrame({"kendall_tau": [0.2, np.nan], "exposure_gap": [0.05, 0.01]})
    ref = nadir_reference([a, b], ["kendall_tau", "exposure_gap"], DIRS)
    assert ref == pytest.approx({"kendall_tau": 0.1 - 0.1 * 0.2, "exposure_gap": 0.05 + 0.1 * 0.05})
    # two points, each the worst in one objective: the bare nadir would give zero area
    pts = [[0.1, 0.0], [0.3, 0.04]]
    assert hypervolume_2d(pts, DIRS, [0.1, 0.04]) == 0.0
    assert hypervolume_2d(pts, DIRS, [ref["kendall_tau"], ref["exposure_gap"]]) > 0.0
    with pytest.raises(ConfigError, match="no finite"):
        nadir_reference([pd.DataFrame({"kendall_tau": [np.nan], "exposure_gap": [1.0]})],
                        ["kendall_tau", "exposure_gap"], DIRS)
