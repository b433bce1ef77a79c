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


def test_encode_chunked_bf16_autocasts_the_products_and_returns_float32():
    g = torch.Generator().manual_seed(0)
    weight = torch.randn(16, 8, generator=g)
    features = {f"t{i}": torch.randn(16, generator=g) for i in range(9)}
    dtypes = []

    def enc(batch):
        out = torch.stack([features[t] for t in batch]) @ weight  # autocast: a bfloat16 product
        dtypes.append(out.dtype)
        return out

    exact = encode_chunked(enc, list(features), batch_size=4)
    assert set(dtypes) == {torch.float32}
    dtypes.clear()
    low = encode_chunked(enc, list(features), batch_size=4, precision="bf16")
    assert set(dtypes) == {torch.bfloat16} and low.dtype == torch.float32
    # bfloat16 keeps 8 significant bits: each product within a few 2^-8 of the float32 one
    assert torch.nn.functional.cosine_similarity(low, exact).min() > 0.999
    assert not torch.equal(low, exact)
    with pytest.raises(ConfigError, match="precision must be one of"):
        encode_chunked(enc, ["t0"], precision="fp16")


def test_pool_of_a_bfloat16_state_is_float32():
    from fairltr.retrieval.pooling import pool

    hidden = torch.randn(2, 5, 4)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    low = pool(hidden.to(torch.bfloat16), mask, "mean")
    assert low.dtype == torch.float32
    assert torch.allclose(low, pool(hidden.to(torch.bfloat16).float(), mask, "mean"))
    assert torch.allclose(low, pool(hidden, mask, "mean"), atol=0.02)
