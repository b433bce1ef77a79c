"""MRC@k, overlap@k and RBO against brute-force implementations (scipy for the correlations)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from fairltr.errors import ConfigError, DataError
from fairltr.retrieval import mrc_at_k, mrc_matrix, overlap_at_k, rbo


def brute_union(a: list, b: list, k: int) -> float:
    a, b = a[:k], b[:k]
    if a == b:
        return 1.0
    union = list(dict.fromkeys(a + b))
    m = len(union)
    ra = [a.index(d) + 1 if d in a else (len(a) + 1 + m) / 2 for d in union]
    rb = [b.index(d) + 1 if d in b else (len(b) + 1 + m) / 2 for d in union]
    return float(stats.pearsonr(ra, rb)[0])


def brute_intersection(a: list, b: list, k: int) -> float:
    a, b = a[:k], b[:k]
    common = [d for d in a if d in b]
    if len(common) < 2:
        return 0.0
    return float(stats.spearmanr([a.index(d) for d in common], [b.index(d) for d in common])[0])


def brute_rbo(a: list, b: list, k: int, p: float) -> float:
    a, b = a[:k], b[:k]
    agree = [len(set(a[:d]) & set(b[:d])) / d for d in range(1, k + 1)]
    return sum((1 - p) / p * p**d * agree[d - 1] for d in range(1, k + 1)) + agree[-1] * p**k


def brute_item_mean(rankings: dict, k: int, fn) -> float:
    per_item = []
    for per in rankings.values():
        langs = sorted(per)
        vals = [fn(list(per[x]), list(per[y]), k) for x, y in itertools.combinations(langs, 2)]
        if vals:
            per_item.append(np.mean(vals))
    return float(np.mean(per_item))


def random_rankings(seed: int, n_items: int = 40, n_docs: int = 9, k: int = 5) -> dict:
    """Random lists over a small document pool: many partial overlaps, some short lists,
    items with 1-4 languages."""
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(n_items):
        langs = rng.choice(["en", "de", "fr", "it"], size=rng.integers(1, 5), replace=False)
        out[f"p{i}"] = {
            str(lang): [f"d{j}" for j in rng.permutation(n_docs)[: rng.integers(1, k + 3)]] for lang in langs
        }
    out["two"] = {"en": ["d1", "d2"], "de": ["d2", "d1"]}  # at least one pair exists
    return out


def test_named_cases_union():
    k = 5
    a = list("abcde")
    assert mrc_at_k({"x": {"en": a, "de": a}}, k) == pytest.approx(100.0)
    assert mrc_at_k({"x": {"en": a, "de": a[::-1]}}, k) == pytest.approx(-100.0)
    disjoint = mrc_at_k({"x": {"en": a, "de": list("fghij")}}, k)
    assert disjoint == pytest.approx(100 * brute_union(a, list("fghij"), k))
    assert disjoint == pytest.approx(-86.2, abs=0.1)  # docs/spec.md §5: "about -86 (k = 5)"
    partial = {"x": {"en": a, "de": list("abxyz")}}
    assert mrc_at_k(partial, k) == pytest.approx(100 * brute_union(a, list("abxyz"), k))
    assert -86.3 < mrc_at_k(partial, k) < 100


def test_named_cases_intersection():
    a = list("abcde")
    assert mrc_at_k({"x": {"en": a, "de": a}}, 5, "intersection") == pytest.approx(100.0)
    assert mrc_at_k({"x": {"en": a, "de": a[::-1]}}, 5, "intersection") == pytest.approx(-100.0)
    assert mrc_at_k({"x": {"en": a, "de": list("fghij")}}, 5, "intersection") == 0.0
    assert mrc_at_k({"x": {"en": a, "de": list("fghia")}}, 5, "intersection") == 0.0  # one common
    # 'a','b','c' common in orders (1,2,3) and (3,1,2): spearman = -0.5
    assert mrc_at_k({"x": {"en": a, "de": list("bcxya")}}, 5, "intersection") == pytest.approx(-50.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_random_lists_match_brute_force(seed, k):
    r = random_rankings(seed, k=k)
    assert mrc_at_k(r, k) == pytest.approx(100 * brute_item_mean(r, k, brute_union), abs=1e-9)
    assert mrc_at_k(r, k, "intersection") == pytest.approx(100 * brute_item_mean(r, k, brute_intersection), abs=1e-9)
    assert overlap_at_k(r, k) == pytest.approx(
        brute_item_mean(r, k, lambda a, b, kk: len(set(a[:kk]) & set(b[:kk])) / kk)
    )
    assert rbo(r, k, 0.9) == pytest.approx(brute_item_mean(r, k, lambda a, b, kk: brute_rbo(a, b, kk, 0.9)))


def test_lists_longer_than_k_are_cut():
    r = {"x": {"en": list("abcdefg"), "de": list("abcdgfe")}}
    assert mrc_at_k(r, 4) == pytest.approx(100.0)
    assert mrc_at_k(r, 5) < 100.0


def test_matrix_pair_means_and_symmetry():
    r = random_rankings(5)
    mat = mrc_matrix(r, 5)
    assert list(mat.index) == ["de", "en", "fr", "it"]
    assert np.allclose(mat.to_numpy(), mat.to_numpy().T, equal_nan=True)
    assert (np.diag(mat.to_numpy()) == 100).all()
    pair = [100 * brute_union(list(p["de"]), list(p["fr"]), 5) for p in r.values() if "de" in p and "fr" in p]
    assert mat.loc["de", "fr"] == pytest.approx(np.mean(pair))
    inter = mrc_matrix(r, 5, mode="intersection")
    pair = [100 * brute_intersection(list(p["en"]), list(p["it"]), 5) for p in r.values() if "en" in p and "it" in p]
    assert inter.loc["en", "it"] == pytest.approx(np.mean(pair))


def test_rbo_extremes():
    a = list("abcde")
    assert rbo({"x": {"en": a, "de": a}}, 5) == pytest.approx(1.0)
    assert rbo({"x": {"en": a, "de": list("fghij")}}, 5) == 0.0


def test_errors():
    with pytest.raises(ConfigError, match="mode"):
        mrc_at_k({"x": {"en": ["a"], "de": ["a"]}}, 5, mode="both")
    with pytest.raises(ConfigError, match="k must"):
        mrc_at_k({"x": {"en": ["a"], "de": ["a"]}}, 0)
    with pytest.raises(DataError, match="twice"):
        mrc_at_k({"x": {"en": ["a", "a"], "de": ["a"]}}, 5)
    with pytest.raises(DataError, match="two or more languages"):
        mrc_at_k({"x": {"en": ["a"]}}, 5)
    with pytest.raises(ConfigError, match="persistence"):
        rbo({"x": {"en": ["a"], "de": ["a"]}}, 5, p=1.0)
