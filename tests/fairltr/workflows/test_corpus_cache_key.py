"""The corpus-embedding cache key (fairltr.workflows.retriever.CorpusEmbeddingCache.tower_key):
it follows every weight that changes an embedding, and ignores the Hugging Face pooler, which
fairltr never uses and which a tower saved without one gets randomly re-initialised on each load
(so a saved frozen document tower used to miss the cache on every evaluate-retrieval)."""

from __future__ import annotations

import pandas as pd
import torch

from fairltr.workflows.retriever import CorpusEmbeddingCache

CORPUS = pd.DataFrame({"_id": ["d1", "d2"], "text": ["red apple", "blue sky"]})
SETTINGS = {"pooling": "mean", "normalize": True, "max_doc_length": 24}


def _key(model) -> str:
    return CorpusEmbeddingCache.tower_key(model, CORPUS, **SETTINGS)


def test_the_key_ignores_the_pooler_and_follows_every_other_weight(tiny_bert, tmp_path):
    from transformers import AutoModel

    model = AutoModel.from_pretrained(tiny_bert, local_files_only=True)
    assert any(name.startswith("pooler.") for name in model.state_dict())
    base = _key(model)
    # saved without its pooler and loaded back: a random pooler, the same key
    state = {k: v for k, v in model.state_dict().items() if not k.startswith("pooler.")}
    model.save_pretrained(tmp_path / "doc", state_dict=state)
    reloaded = AutoModel.from_pretrained(tmp_path / "doc", local_files_only=True)
    assert not torch.equal(reloaded.pooler.dense.weight, model.pooler.dense.weight)
    assert _key(reloaded) == base
    with torch.no_grad():
        model.pooler.dense.weight.add_(1.0)
    assert _key(model) == base
    with torch.no_grad():  # a weight the embeddings depend on
        model.encoder.layer[0].attention.self.query.weight[0, 0] += 1e-3
    assert _key(model) != base
    assert CorpusEmbeddingCache.tower_key(reloaded, CORPUS, **{**SETTINGS, "max_doc_length": 16}) != base
    assert CorpusEmbeddingCache.tower_key(reloaded, CORPUS.assign(text=["red apple", "blue sea"]), **SETTINGS) != base
