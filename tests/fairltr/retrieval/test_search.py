"""Chunked encoding and exact chunked top-k equal the unchunked computation."""

from __future__ import annotations

import pytest
import torch

from fairltr.errors import ConfigError
from fairltr.retrieval import encode_chunked, retrieve, topk_search


@pytest.mark.parametrize("qc,dc", [(1, 1), (3, 7), (5, 1000), (1000, 4)])
def test_chunked_topk_equals_full(qc, dc):
    g = torch.Generator().manual_seed(0)
    q, d = torch.randn(11, 6, generator=g), torch.randn(29, 6, generator=g)
    full_s, full_i = torch.topk(q @ d.T, 8, dim=1)
    s, i = topk_search(q, d, 8, query_chunk=qc, doc_chunk=dc)
    assert torch.equal(i, full_i)
    assert torch.allclose(s, full_s)


def test_k_larger_than_corpus_is_cut():
    q, d = torch.randn(2, 3), torch.randn(4, 3)
    s, i = topk_search(q, d, 10, doc_chunk=3)
    assert i.shape == (2, 4)
    assert sorted(i[0].tolist()) == [0, 1, 2, 3]


def test_shape_errors():
    with pytest.raises(ConfigError, match="share dim"):
        topk_search(torch.randn(2, 3), torch.randn(4, 5), 2)
    with pytest.raises(ConfigError):
        topk_search(torch.randn(2, 3), torch.randn(4, 3), 0)


def test_encode_chunked_matches_one_call():
    w = torch.randn(1, 4)
    texts = [f"t{i}" for i in range(10)]

    def enc(batch):
        return torch.tensor([[float(len(t)), float(t[1:])] for t in batch]) @ torch.ones(2, 1) * w

    seen = []
    out = encode_chunked(enc, texts, batch_size=3, progress=lambda n, tot: seen.append(n))
    assert torch.allclose(out, enc(texts))
    assert seen == [3, 6, 9, 10]


def test_retrieve_maps_ids():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    d = torch.tensor([[0.0, 2.0], [3.0, 0.0], [1.0, 1.0]])
    run = retrieve(q, d, ["qa", "qb"], ["x", "y", "z"], k=2, doc_chunk=2)
    assert run == {"qa": ["y", "z"], "qb": ["x", "z"]}
