"""The shared optimisation loop of DELTR and PLRank (fairltr.training_loop), against scripted steps."""

import math

import pytest

from fairltr.training_loop import LoopLabels, run_training_loop

LABELS = LoopLabels(model="M", weight="w", desc="M w=1", postfix="loss")


def scripted(totals, **other):
    """step() returns the next scripted total (and fixed other terms); final() the number 99."""
    it = iter(totals)
    return (lambda: {"total": float(next(it)), **other}), (lambda: {"total": 99.0, **other})


def test_history_counts_steps_and_ends_with_the_final_objective():
    step, final = scripted([5.0, 4.0, 3.0])
    seen = []
    n, history = run_training_loop(step, final, max_iter=3, tol=0.0, labels=LABELS,
                                   callback=lambda i, r: seen.append((i, r["total"])))
    assert n == 3
    assert history == [{"iteration": 0, "total": 5.0}, {"iteration": 1, "total": 4.0},
                       {"iteration": 2, "total": 3.0}, {"iteration": 3, "total": 99.0}]
    assert seen == [(0, 5.0), (1, 4.0), (2, 3.0), (3, 99.0)]


def test_relative_stall_stops_early():
    # |prev - total| <= tol * max(1, |total|): 100 -> 100.5 is a relative change of 0.005 <= 0.01
    step, final = scripted([200.0, 100.0, 100.5, 1.0])
    n, history = run_training_loop(step, final, max_iter=4, tol=0.01, labels=LABELS)
    assert n == 3 and [r["total"] for r in history] == [200.0, 100.0, 100.5, 99.0]


@pytest.mark.parametrize("exact, expected", [(True, 2), (False, 4)])
def test_tol_zero_stops_at_an_exact_repeat_only_for_a_deterministic_objective(exact, expected):
    step, final = scripted([7.0, 7.0, 7.0, 7.0])
    n, _ = run_training_loop(step, final, max_iter=4, tol=0.0, labels=LABELS, exact_stall_stops=exact)
    assert n == expected


def test_a_non_finite_total_names_the_model_iteration_and_weight():
    step, final = scripted([3.0, 2.0, math.nan])
    seen = []
    with pytest.raises(FloatingPointError, match=r"^M objective became nan at iteration 2; try a smaller lr or w$"):
        run_training_loop(step, final, max_iter=5, tol=0.0, labels=LABELS, callback=lambda i, r: seen.append(i))
    assert seen == [0, 1]  # the bad record reaches no callback


def test_only_the_declared_terms_must_be_finite():
    step, final = scripted([3.0, 2.0], other=math.inf)
    n, _ = run_training_loop(step, final, max_iter=2, tol=0.0, labels=LABELS)  # only "total" is checked
    assert n == 2
    step, final = scripted([3.0, 2.0], other=math.inf)
    strict = LoopLabels(model="M", weight="w", desc="", postfix="loss", finite=("total", "other"))
    with pytest.raises(FloatingPointError, match="M objective became 3.0 at iteration 0"):
        run_training_loop(step, final, max_iter=2, tol=0.0, labels=strict)
