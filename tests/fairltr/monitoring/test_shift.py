"""Population shift: category shares, total variation distance and standardised mean differences
against a direct computation; the profile's JSON round trip."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr.errors import DataError
from fairltr.monitoring import TrainingProfile, make_served_traffic, population_shift, shift_summary


def test_shift_figures_equal_a_direct_computation():
    train = make_served_traffic(2, 30, 10, biased_window=None, seed=1)
    window = make_served_traffic(1, 30, 10, biased_window=None, shifted_window=0, seed=2)
    profile = TrainingProfile.of(train, ["race", "sex"], ["x1", "x2"])
    shift = population_shift(window, profile, index=0, start=pd.Timestamp("2026-01-07"))
    w_sh = window["race"].value_counts(normalize=True)
    t_sh = train["race"].value_counts(normalize=True)
    tvd = 0.5 * sum(abs(w_sh.get(c, 0) - t_sh.get(c, 0)) for c in set(w_sh.index) | set(t_sh.index))
    got = shift[(shift["kind"] == "tvd") & (shift["attribute"] == "race")]["difference"].item()
    assert got == pytest.approx(tvd, abs=1e-12)
    smd = (window["x1"].mean() - train["x1"].mean()) / train["x1"].std(ddof=0)
    assert shift[shift["name"] == "x1"]["difference"].item() == pytest.approx(smd, abs=1e-12)
    summary = shift_summary(shift)
    assert summary[0]["shifted"] and summary[0]["tvd_attribute"] == "race"  # twice the usual share of Black


def test_unshifted_window_is_not_flagged():
    train = make_served_traffic(4, 50, 10, biased_window=None, seed=3)
    window = make_served_traffic(1, 50, 10, biased_window=None, seed=4)
    profile = TrainingProfile.of(train, ["race"], ["x1", "x2", "x3"])
    summary = shift_summary(population_shift(window, profile, index=0, start=pd.Timestamp("2026-01-07")))
    assert not summary[0]["shifted"]


def test_profile_json_round_trip_and_rejects_garbage():
    train = make_served_traffic(1, 10, 10, biased_window=None)
    profile = TrainingProfile.of(train, ["race", "sex"], ["x1"])
    again = TrainingProfile.from_json(profile.to_json())
    assert again == profile
    with pytest.raises(DataError, match="not a fairltr training profile"):
        TrainingProfile.from_json('{"rows": 3}')
