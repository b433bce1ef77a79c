"""The retrieval evaluation's declared keys and the cut-offs read from metric names."""

from __future__ import annotations

import pytest

from fairltr.retrieval import SUMMARY_KEYS, retrieval_cutoffs, summary_of


@pytest.mark.parametrize("names, expected", [
    (["mrr_at_100:max", "mrc_at_5:max"], (100, 5)),
    (["mrr_at_10:max", "mrc_at_3:max", "recall_at_10>=20"], (10, 3)),
    (["rbo_at_20/de", "overlap_at_20"], (100, 20)),          # per-language suffix; k kept
    (["mrr_at_10", "recall_at_50"], (100, 5)),              # two retrieval cut-offs: the given one
    (["mrc_at_50", "mrr_at_10"], (50, 50)),                 # k is raised to mrc_k (same run)
    (["ndcg_at_10", "exposure_ratio", "four_fifths"], (100, 5)),  # ranking names: ignored
    ([], (100, 5)),
])
def test_retrieval_cutoffs(names, expected):
    assert retrieval_cutoffs(names) == expected


def test_retrieval_cutoffs_keep_the_given_defaults():
    assert retrieval_cutoffs(["exposure_ratio"], k=30, mrc_k=7) == (30, 7)


def test_summary_of_reads_every_declared_key():
    res = {key.format(k=10, m=3): float(i) for i, key in enumerate(SUMMARY_KEYS)} | {"per_language": None}
    assert summary_of(res, 10, 3) == {key.format(k=10, m=3): float(i) for i, key in enumerate(SUMMARY_KEYS)}
    with pytest.raises(KeyError):
        summary_of(res, 100, 5)
