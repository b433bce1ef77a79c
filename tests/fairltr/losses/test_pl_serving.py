"""Sampled serving rankings (fairltr.losses.pl_serving): the Plackett-Luce law against exact
enumeration, independence across queries, reproducibility per request id (pinned values: a replay
in a later version draws the same rankings), the counter-based uniforms against a plain-int
SplitMix64, errors."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fairltr.errors import ConfigError, DataError
from fairltr.losses.pl_serving import counter_uniforms, request_seed, sampled_ranks


def _pl_probability(scores, order) -> float:
    """P(order) = prod_k exp(s_{o_k}) / sum_{j >= k} exp(s_{o_j})."""
    e = np.exp(np.asarray(scores, dtype=np.float64)[list(order)])
    return float(np.prod(e / np.cumsum(e[::-1])[::-1]))


def _orders(ranks: np.ndarray, n: int) -> list[tuple[int, ...]]:
    """Rankings (item order) of consecutive groups of n rows from their 1-based ranks."""
    return [tuple(np.argsort(r)) for r in ranks.reshape(-1, n)]


def _chi_square_p(observed: dict, expected: dict, m: int) -> float:
    cells = sorted(expected)
    obs = np.array([observed.get(c, 0) for c in cells], dtype=np.float64)
    exp = np.array([expected[c] for c in cells]) * m
    return float(stats.chisquare(obs, exp).pvalue)


def test_the_sampled_rankings_follow_the_exact_plackett_luce_law():
    """24,000 queries of 4 items in one request: the frequency of each of the 24 rankings equals
    its exact PL probability (chi-square); a reversed sign (or no noise) fails by far."""
    scores = np.array([1.0, 0.2, -0.5, 0.7])
    m = 24_000
    ranks = sampled_ranks(np.tile(scores, m), np.repeat(np.arange(m), 4), "req-law")
    counts = pd.Series(_orders(ranks, 4)).value_counts().to_dict()
    exact = {o: _pl_probability(scores, o) for o in itertools.permutations(range(4))}
    assert sum(exact.values()) == pytest.approx(1.0, abs=1e-12)
    assert _chi_square_p(counts, exact, m) > 1e-3
    reversed_law = {o: _pl_probability(-scores, o) for o in exact}
    assert _chi_square_p(counts, reversed_law, m) < 1e-12


def test_request_ids_draw_the_law_too():
    """One query of 3 items served under 3,000 request ids: the rankings' frequencies are PL's."""
    scores = np.array([0.4, -0.3, 1.1])
    m = 3_000
    orders = [tuple(np.argsort(sampled_ranks(scores, np.zeros(3), f"r{i}"))) for i in range(m)]
    exact = {o: _pl_probability(scores, o) for o in itertools.permutations(range(3))}
    assert _chi_square_p(pd.Series(orders).value_counts().to_dict(), exact, m) > 1e-3


def test_queries_of_one_request_are_independent():
    """Pairs of queries (2i, 2i + 1) of 3 items each: their joint rankings' frequencies are the
    product of the two exact laws (36 cells)."""
    a, b = np.array([0.5, 0.0, -0.8]), np.array([-0.2, 0.9, 0.1])
    pairs = 18_000
    scores = np.tile(np.r_[a, b], pairs)
    ranks = sampled_ranks(scores, np.repeat(np.arange(2 * pairs), 3), "req-joint").reshape(pairs, 2, 3)
    joint = pd.Series([(tuple(np.argsort(r[0])), tuple(np.argsort(r[1]))) for r in ranks]).value_counts().to_dict()
    exact = {(x, y): _pl_probability(a, x) * _pl_probability(b, y)
             for x in itertools.permutations(range(3)) for y in itertools.permutations(range(3))}
    assert _chi_square_p(joint, exact, pairs) > 1e-3


def test_a_request_id_fixes_each_querys_ranking():
    """The same id: the same ranks, whatever the other queries of the request and the order of
    its queries' rows; another id or another salt: other rankings (almost always)."""
    rng = np.random.default_rng(0)
    q = np.repeat(np.arange(200), 10)
    s = rng.normal(size=q.size)
    ranks = sampled_ranks(s, q, "req-7")
    np.testing.assert_array_equal(ranks, sampled_ranks(s, q, "req-7"))
    shuffled = np.concatenate([np.flatnonzero(q == i) for i in rng.permutation(200)])  # queries reordered
    np.testing.assert_array_equal(sampled_ranks(s[shuffled], q[shuffled], "req-7"), ranks[shuffled])
    alone = q == 17
    np.testing.assert_array_equal(sampled_ranks(s[alone], q[alone], "req-7"), ranks[alone])
    same = lambda other: np.mean([(other[q == i] == ranks[q == i]).all() for i in range(200)])  # noqa: E731
    assert same(sampled_ranks(s, q, "req-8")) < 0.05
    assert same(sampled_ranks(s, q, "req-7", salt="model-b")) < 0.05
    for i in range(200):  # each query's ranks are a permutation of 1..10
        assert sorted(ranks[q == i]) == list(range(1, 11))


def test_pinned_draws_replay_across_versions():
    """The scheme is part of the contract: these values must never change."""
    want = hashlib.blake2b(b"".join(len(p).to_bytes(8, "little") + p for p in (b"m", b"req-1", b"7")),
                           digest_size=8).digest()
    assert request_seed("req-1", 7, salt="m") == int.from_bytes(want, "little")
    assert request_seed("req-1", np.int64(7), salt="m") == request_seed("req-1", "7", salt="m")
    assert request_seed("ab", "c") != request_seed("a", "bc")
    scores, query = [0.3, -1.0, 2.0, 0.0, 0.5], ["x"] * 3 + ["y"] * 2
    got = sampled_ranks(np.array(scores), np.array(query), "replay-1", "m")
    np.testing.assert_array_equal(got, [3, 2, 1, 2, 1])
    # the same from the module docstring's recipe, in plain Python ints and floats
    want = []
    for name, rows in (("x", [0, 1, 2]), ("y", [3, 4])):
        seed = request_seed("replay-1", name, salt="m")
        keys = [scores[r] - np.log(-np.log(((_splitmix64(seed + (j + 1) * 0x9E3779B97F4A7C15) >> 11) + 0.5) / 2.0**53))
                for j, r in enumerate(rows)]
        want += [1 + sum(other > key for other in keys) for key in keys]
    assert got.tolist() == want


def _splitmix64(x: int) -> int:
    mask = (1 << 64) - 1
    z = x & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


def test_counter_uniforms_are_splitmix64_doubles_in_the_open_interval():
    seeds = np.array([0, 1, 2**63, 2**64 - 1], dtype=np.uint64)
    counters = np.arange(5, dtype=np.uint64)
    got = counter_uniforms(seeds[:, None], counters[None, :])
    for i, seed in enumerate(seeds.tolist()):
        for j in range(5):
            z = _splitmix64(seed + (j + 1) * 0x9E3779B97F4A7C15)
            assert got[i, j] == ((z >> 11) + 0.5) / 2.0**53
    many = counter_uniforms(np.uint64(12345), np.arange(200_000, dtype=np.uint64))
    assert 0.0 < many.min() and many.max() < 1.0
    assert stats.kstest(many, "uniform").pvalue > 1e-3


def test_scores_far_apart_rank_the_best_first_and_edge_cases():
    assert sampled_ranks(np.array([40.0, 0.0, -40.0]), np.zeros(3), "r").tolist() == [1, 2, 3]
    assert sampled_ranks(np.array([0.5]), np.array([3]), "r").tolist() == [1]
    assert sampled_ranks(np.zeros(0), np.zeros(0), "r").shape == (0,)


@pytest.mark.parametrize("scores,query,rid,error,needle", [
    (np.array([0.1, np.nan]), np.zeros(2), "r", DataError, "row 1"),
    (np.array([0.1, np.inf]), np.zeros(2), "r", DataError, "row 1"),
    (np.array([0.1, 0.2]), np.zeros(3), "r", DataError, "one length"),
    (np.array([0.1]), np.zeros(1), "", ConfigError, "request id"),
    (np.array([0.1]), np.zeros(1), 5, ConfigError, "request id"),
])
def test_bad_input_is_a_one_line_error(scores, query, rid, error, needle):
    with pytest.raises(error, match=needle):
        sampled_ranks(scores, query, rid)
