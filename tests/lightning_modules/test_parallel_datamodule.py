"""ParallelQueryDataModule: one example per item, parallel version in another language drawn
uniformly, seeded draws, equal batches across runs, and data errors."""

from __future__ import annotations

from collections import Counter

import pytest

from fairltr.errors import DataError
from fairltr.retrieval import read_parallel_data
from lightning_modules import ParallelQueryDataModule, ParallelQueryDataset


def test_examples_pair_a_query_with_its_positive_and_another_language(parallel_dir):
    data = read_parallel_data(parallel_dir).split("train")
    ds = ParallelQueryDataset(data, seed=3)
    assert len(ds) == 8
    texts = dict(zip(data.corpus["_id"], data.corpus["text"]))
    by_id = data.queries.set_index(["parallel_id", "lang"])["text"]
    for i in range(len(ds)):
        ex = ds[i]
        assert ex["query_lang"] != ex["parallel_lang"]
        assert ex["query"] == by_id[(ex["item"], ex["query_lang"])]
        assert ex["parallel"] == by_id[(ex["item"], ex["parallel_lang"])]
        assert ex["positive"] == texts["d" + ex["item"][1:]]


def test_draws_are_uniform_and_seeded(parallel_dir):
    data = read_parallel_data(parallel_dir).split("train")
    ds = ParallelQueryDataset(data, seed=0)
    pairs = Counter()
    for epoch in range(300):
        ds.set_epoch(epoch)
        ex = ds[0]
        pairs[(ex["query_lang"], ex["parallel_lang"])] += 1
    assert len(pairs) == 6  # every ordered pair of distinct languages among en, de, fr
    assert min(pairs.values()) > 300 / 6 * 0.6
    again = ParallelQueryDataset(data, seed=0)
    again.set_epoch(7)
    ds.set_epoch(7)
    assert [again[i] for i in range(8)] == [ds[i] for i in range(8)]
    other = ParallelQueryDataset(data, seed=1)
    other.set_epoch(7)
    assert [other[i] for i in range(8)] != [ds[i] for i in range(8)]


def test_loader_batches_are_reproducible_and_full(parallel_dir):
    def batches(seed):
        dm = ParallelQueryDataModule(parallel_dir, batch_size=3, seed=seed, val_split="test")
        dm.setup()
        return [b for b in dm.train_dataloader()], list(dm.val_dataloader())

    a, val = batches(0)
    b, _ = batches(0)
    assert a == b
    assert len(a) == 2 and all(len(x["query"]) == 3 for x in a)  # 8 items, last partial batch dropped
    assert len(val) == 1 and set(val[0]) >= {"query", "parallel", "positive"}


def test_hard_negatives_and_errors(parallel_dir):
    data = read_parallel_data(parallel_dir)
    train = data.split("train")
    negs = {pid: ["d0" if pid != "p0" else "d1"] for pid in train.queries["parallel_id"]}
    ds = ParallelQueryDataset(train, hard_negatives=negs)
    texts = dict(zip(data.corpus["_id"], data.corpus["text"]))
    assert ds[0]["negative"] == texts[negs[ds[0]["item"]][0]]
    with pytest.raises(DataError, match="no hard negative"):
        ParallelQueryDataset(train, hard_negatives={})
    one_lang = train.split("train")
    one_lang.queries = one_lang.queries[one_lang.queries["lang"] == "en"]
    with pytest.raises(DataError, match="one language only"):
        ParallelQueryDataset(one_lang)
    with pytest.raises(DataError, match="fewer than batch_size"):
        ParallelQueryDataModule(parallel_dir, batch_size=100).setup()
