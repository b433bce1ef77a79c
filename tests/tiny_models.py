"""Tiny offline models and data for tests: a random BERT (hidden 32, 2 layers) with a WordPiece
tokenizer over a fixed, sorted vocabulary (the same token ids in every process: a trained
tokenizer breaks frequency ties in hash order, which differs per process) and saved with
``save_pretrained`` (``AutoModel``/``AutoTokenizer`` load it from disk; nothing is downloaded),
and a parallel-query folder in the ddtp-mlir layout.
Importable from any test (tests/conftest.py puts tests/ on ``sys.path``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

WORDS = {
    "en": ["red", "apple", "car", "tree", "house", "music", "video", "file", "network", "editor"],
    "de": ["rot", "apfel", "auto", "baum", "haus", "musik", "film", "datei", "netz", "schreiber"],
    "fr": ["rouge", "pomme", "voiture", "arbre", "maison", "musique", "vidéo", "fichier", "réseau", "éditeur"],
}


def build_tiny_bert(folder: Path) -> Path:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = sorted({w for ws in WORDS.values() for w in ws})
    chars = sorted({c for w in words for c in w})
    tokens = specials + words + chars + [f"##{c}" for c in chars]
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(tokens)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]",
    )
    config = BertConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    import torch

    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def write_parallel_layout(root: Path, n_items: int = 12, langs=("en", "de", "fr")) -> Path:
    """Item i: query = two words in each language; its document = four words in one language."""
    root.mkdir(parents=True, exist_ok=True)
    corpus, queries, qrels = [], [], []
    for i in range(n_items):
        a, b = i % 10, (i * 3 + 1) % 10
        doc_lang = langs[i % len(langs)]
        corpus.append({"_id": f"d{i}", "lang": doc_lang,
                       "text": " ".join(WORDS[doc_lang][j] for j in (a, b, (a + 5) % 10, b))})
        split = "test" if i >= n_items - 4 else "train"
        for lang in langs:
            queries.append({"_id": f"q{i}-{lang}", "parallel_id": f"p{i}", "lang": lang, "split": split,
                            "text": f"{WORDS[lang][a]} {WORDS[lang][b]}"})
        qrels.append((f"p{i}", f"d{i}", 1, split))
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    pd.DataFrame(qrels, columns=["parallel_id", "corpus_id", "score", "split"]).to_csv(
        root / "qrels.tsv", sep="\t", index=False)
    return root
