"""The DPR sweep (``--method dpr``): a tiny random BERT on a tiny parallel-query folder, alpha of
the LaKDA loss searched from its registry declaration, retrieval metrics as objectives."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli

VOCAB = {
    "en": "red apple car tree house music video file network editor".split(),
    "de": "rot apfel auto baum haus musik film datei netz schreiber".split(),
}


def tiny_encoder(folder: Path) -> Path:
    """A 2-layer, 32-wide random BERT with a word-level tokenizer, saved for ``from_pretrained``."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted({w for ws in VOCAB.values() for w in ws})]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(words), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=32)).save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def parallel_folder(root: Path, n_items: int = 10) -> Path:
    """Item i: the same two-word query in en and de; one relevant document; last 4 items = test."""
    root.mkdir(parents=True)
    corpus, queries, qrels = [], [], []
    for i in range(n_items):
        a, b = i % 10, (3 * i + 1) % 10
        lang = "en" if i % 2 else "de"
        corpus.append({"_id": f"d{i}", "lang": lang, "text": " ".join(VOCAB[lang][j] for j in (a, b, (a + 5) % 10))})
        split = "test" if i >= n_items - 4 else "train"
        for q in VOCAB:
            queries.append({"_id": f"q{i}-{q}", "parallel_id": f"p{i}", "lang": q, "split": split,
                            "text": f"{VOCAB[q][a]} {VOCAB[q][b]}"})
        qrels.append((f"p{i}", f"d{i}", 1, split))
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    pd.DataFrame(qrels, columns=["parallel_id", "corpus_id", "score", "split"]).to_csv(root / "qrels.tsv", sep="\t", index=False)
    return root


def test_dpr_sweep_searches_alpha_and_logs(tmp_path, mlflow_sqlite):
    pytest.importorskip("lightning")
    enc = tiny_encoder(tmp_path / "enc")
    data = parallel_folder(tmp_path / "data")
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, [
        "sweep", "--method", "dpr", "--train", str(data), "--test", str(data), "--trials", "3", "--study", "dpr",
        "--out", str(out), "--encoder", str(enc), "--steps", "2", "--batch-size", "4", "--no-progress",
        "--tracking-uri", mlflow_sqlite, "--experiment", "tuning-dpr"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    study = optuna.load_study(study_name="dpr", storage=f"sqlite:///{out / 'optuna.db'}")
    trials = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(trials) == 3
    assert study.user_attrs["objectives"] == ["mrr_at_100", "mrc_at_5"]  # the retrieval default
    assert all("alpha_log10" in t.params and "alpha" in t.user_attrs for t in trials)
    for t in trials:
        m = t.user_attrs["metrics"]
        assert 0 <= m["mrr_at_100"] <= 100 and -100 <= m["mrc_at_5"] <= 100
        assert t.values == [m["mrr_at_100"], m["mrc_at_5"]]
    assert (out / "dpr_pareto_front.csv").exists()
