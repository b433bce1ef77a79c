"""DPR bi-encoder with a pluggable language-fairness loss (docs/spec.md §5).

s(q, d) = <E_Q(q), E_D(d)> / temperature, E = CLS or masked-mean pooled last hidden state of any
Hugging Face encoder (name or local folder, loaded with ``AutoModel`` / ``AutoTokenizer``),
one shared tower or separate query / document towers.

Loss per batch of B items (query q, positive document d+, optional hard negative, parallel q'):
    L_DPR  = mean_q -log softmax_{d in D}(s(q, d))[d+],  D = every document of the global batch
    total  = L_DPR + alpha * L_fair
with L_fair from the registry (kind ``"retrieval"``): ``lakda_kl`` = KL(p || p'),
p = softmax(s(q, D)), p' = softmax(s(q', D)); ``mse_align`` = MSE(E_Q(q), E_Q(q')); ``none``.

Under DDP the documents are gathered from every process with gradients (``all_gather``
``sync_grads=True``), so the loss and the averaged gradient equal those of one process
holding the whole global batch.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import lightning.pytorch as pl
import torch

from fairltr.errors import ConfigError
from fairltr.losses import FairnessLoss, available_losses, get_loss
from fairltr.retrieval.pooling import POOLINGS, pool

__all__ = ["BiEncoderModule", "pool", "resolve_fairness_loss"]

BIENCODER_OPTIMIZERS = ("adamw", "sgd")


def _check_settings(*, pooling: str, temperature: float, lr: float, optimizer: str, shared: bool,
                    train_documents: bool) -> None:
    """ConfigError for a pooling, temperature, lr, optimizer or tower layout the module cannot train."""
    if pooling not in POOLINGS:
        raise ConfigError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    if not temperature > 0:
        raise ConfigError(f"temperature must be > 0, got {temperature}")
    if lr <= 0:
        raise ConfigError(f"lr must be > 0, got {lr}")
    if optimizer not in BIENCODER_OPTIMIZERS:
        raise ConfigError(f"optimizer must be 'adamw' or 'sgd', got {optimizer!r}")
    if not train_documents and shared:
        raise ConfigError("train_documents=False freezes the document tower: it needs shared=False")


def resolve_fairness_loss(name: str, alpha: float | None, overrides: Mapping[str, Any] | None = None
                          ) -> tuple[FairnessLoss, float, dict[str, Any]]:
    """The registered retrieval loss ``name`` (or ``none``), its weight and its options.

    ``alpha=None`` takes the loss's declared default, checked by its :class:`HyperParam` (0 for a
    loss without a weight); ``overrides`` with a None value keep the declared option, the others
    are validated by :meth:`FairnessLoss.resolve_options`.
    """
    loss = get_loss(name)
    if name != "none" and loss.kind != "retrieval":
        raise ConfigError(
            f"fairness_loss {name!r} is a {loss.kind} loss; retrieval losses: "
            f"{['none', *available_losses('retrieval')]}"
        )
    weight = loss.weight_param
    alpha = 0.0 if weight is None else weight.validate(weight.default if alpha is None else alpha)
    options = loss.resolve_options({k: v for k, v in (overrides or {}).items() if v is not None})
    return loss, float(alpha), options


class BiEncoderModule(pl.LightningModule):
    """DPR with in-batch (and optional hard) negatives and ``fairness_loss`` in the registry's
    retrieval losses (``none``, ``lakda_kl``, ``mse_align``) weighted by ``alpha``.

    ``alpha=None`` takes the registry's declared default (0.5). ``lakda_temperature`` and
    ``symmetric`` override the loss's registered options. What the loss compares is what its
    registry entry declares (:attr:`~fairltr.losses.FairnessLoss.inputs`): ``"embeddings"``
    (``mse_align``) receives the two (B, H) query embeddings, ``"scores"`` (``lakda_kl``, the
    default for plugins) the (B, D) scores of the queries and of their parallel versions against
    the same batch documents.
    ``train_documents=False`` freezes the document tower (then :meth:`set_document_cache` may
    supply precomputed document embeddings).
    """

    def __init__(
        self,
        model_name_or_path: str,
        *,
        shared: bool = True,
        train_documents: bool = True,
        pooling: str = "cls",
        normalize: bool = False,
        temperature: float = 1.0,
        fairness_loss: str = "none",
        alpha: float | None = None,
        lakda_temperature: float | None = None,
        symmetric: bool | None = None,
        lr: float = 2e-5,
        optimizer: str = "adamw",
        weight_decay: float = 0.01,
        warmup_steps: int = 0,
        max_query_length: int = 32,
        max_doc_length: int = 64,
        local_files_only: bool = True,
    ) -> None:
        super().__init__()
        _check_settings(pooling=pooling, temperature=temperature, lr=lr, optimizer=optimizer,
                        shared=shared, train_documents=train_documents)
        loss, alpha, self.fair_options = resolve_fairness_loss(
            fairness_loss, alpha, {"temperature": lakda_temperature, "symmetric": symmetric})
        self.save_hyperparameters(logger=False)  # the workflow logs the training parameters once (alpha resolved)
        self.alpha = alpha
        self._fair_fn = loss.fn
        self._fair_inputs = loss.inputs
        self._load_towers(model_name_or_path, shared=shared, train_documents=train_documents,
                          local_files_only=local_files_only)
        self._doc_cache: tuple[dict[str, int], torch.Tensor] | None = None
        self.train()  # from_pretrained returns eval mode; Lightning keeps a module's mode

    def _load_towers(self, model_name_or_path: str, *, shared: bool, train_documents: bool,
                     local_files_only: bool) -> None:
        """Tokenizer and query / document encoders from ``model_name_or_path`` (one tower when
        ``shared``), without their unused pooler heads; the document tower frozen unless
        ``train_documents``."""
        from transformers import AutoModel, AutoTokenizer

        from lightning_modules.quiet import quiet_weight_loading

        load = dict(local_files_only=local_files_only)
        with quiet_weight_loading():
            self.tokenizer = AutoTokenizer.from_pretrained(model_name_or_path, **load)
            self.query_encoder = AutoModel.from_pretrained(model_name_or_path, **load)
            self.doc_encoder = self.query_encoder if shared else AutoModel.from_pretrained(model_name_or_path, **load)
        for enc in {id(self.query_encoder): self.query_encoder, id(self.doc_encoder): self.doc_encoder}.values():
            if getattr(enc, "pooler", None) is not None:
                enc.pooler = None  # BERT-style pooler head: unused (we pool the last hidden state); DDP needs every parameter used
        if not train_documents:
            self.doc_encoder.requires_grad_(False)

    # ---- encoding -------------------------------------------------------------------------
    def tokenize(self, texts: Sequence[str], max_length: int) -> dict[str, torch.Tensor]:
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        return {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}

    def _embed(self, encoder: torch.nn.Module, texts: Sequence[str], max_length: int) -> torch.Tensor:
        enc = self.tokenize(texts, max_length)
        hidden = encoder(**enc).last_hidden_state
        emb = pool(hidden, enc["attention_mask"], self.hparams.pooling)
        return torch.nn.functional.normalize(emb, dim=-1) if self.hparams.normalize else emb

    def encode_queries(self, texts: Sequence[str]) -> torch.Tensor:
        """E_Q of ``texts`` (B, H); differentiable (wrap in no_grad / inference_mode to evaluate)."""
        return self._embed(self.query_encoder, texts, self.hparams.max_query_length)

    def encode_documents(self, texts: Sequence[str]) -> torch.Tensor:
        """E_D of ``texts`` (B, H)."""
        return self._embed(self.doc_encoder, texts, self.hparams.max_doc_length)

    def train(self, mode: bool = True) -> "BiEncoderModule":
        super().train(mode)
        if not self.hparams.train_documents:
            self.doc_encoder.eval()  # frozen tower: no dropout
        return self

    def set_document_cache(self, doc_ids: Sequence[str], embeddings: torch.Tensor) -> None:
        """Use precomputed E_D rows for batch documents (by ``positive_id`` / ``negative_id``).

        Only for a frozen document tower (``train_documents=False``), whose embeddings never change.
        """
        if self.hparams.train_documents:
            raise ConfigError("a document cache needs a frozen document tower (train_documents=False)")
        if len(doc_ids) != embeddings.shape[0]:
            raise ConfigError(f"{len(doc_ids)} doc ids for {embeddings.shape[0]} embedding rows")
        self._doc_cache = ({d: i for i, d in enumerate(doc_ids)}, embeddings.detach())

    def _documents(self, batch: dict[str, Any]) -> torch.Tensor:
        ids = list(batch.get("positive_id") or []) + list(batch.get("negative_id") or [])
        if self._doc_cache is not None and ids:
            index, emb = self._doc_cache
            return emb[torch.tensor([index[d] for d in ids])].to(self.device)
        docs = list(batch["positive"]) + list(batch.get("negative") or [])
        if not self.hparams.train_documents:
            with torch.no_grad():
                return self.encode_documents(docs)
        return self.encode_documents(docs)

    # ---- loss -----------------------------------------------------------------------------
    def _gather(self, t: torch.Tensor) -> torch.Tensor:
        if self._trainer is None or self._trainer.world_size <= 1:
            return t
        g = self.all_gather(t, sync_grads=True)  # (world, B, ...)
        return g.reshape(-1, *t.shape[1:])

    def compute_loss(self, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        """Loss terms of one (local) batch: ``loss``, ``dpr`` and ``fair`` (0 for ``none``)."""
        q = self.encode_queries(batch["query"])
        d_local = self._documents(batch)
        d = self._gather(d_local)
        rank = self.global_rank if self._trainer is not None and self._trainer.world_size > 1 else 0
        n_pos_local = len(batch["positive"])
        per_rank = d_local.shape[0]
        # global document layout: [rank0: positives, negatives][rank1: ...]; positives of this rank
        target = rank * per_rank + torch.arange(n_pos_local, device=q.device)
        t = self.hparams.temperature
        scores = q @ d.T / t
        dpr = torch.nn.functional.cross_entropy(scores, target)
        name = self.hparams.fairness_loss
        if name == "none":
            fair = torch.zeros((), device=q.device, dtype=dpr.dtype)
        else:
            qp = self.encode_queries(batch["parallel"])
            if self._fair_inputs == "embeddings":  # fn(query_embeddings, parallel_embeddings, **options)
                fair = self._fair_fn(q, qp, **self.fair_options)
            else:  # "scores": fn(scores, parallel_scores, **options)
                fair = self._fair_fn(scores, qp @ d.T / t, **self.fair_options)
        return {"loss": dpr + self.alpha * fair, "dpr": dpr, "fair": fair}

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        terms = self.compute_loss(batch)
        bs = len(batch["query"])
        self.log("train/loss", terms["loss"], prog_bar=True, batch_size=bs)
        self.log("train/dpr_loss", terms["dpr"], batch_size=bs)
        self.log(f"train/{self.hparams.fairness_loss}", terms["fair"], batch_size=bs)
        return terms["loss"]

    def validation_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        terms = self.compute_loss(batch)
        bs = len(batch["query"])
        self.log("val/loss", terms["loss"], batch_size=bs, sync_dist=True)
        self.log("val/dpr_loss", terms["dpr"], batch_size=bs, sync_dist=True)

    def on_train_epoch_start(self) -> None:
        dm = getattr(self.trainer, "datamodule", None)
        if dm is not None and hasattr(dm, "set_epoch"):
            dm.set_epoch(self.current_epoch)

    def configure_optimizers(self):
        hp = self.hparams
        if hp.optimizer == "sgd":
            opt = torch.optim.SGD(self.parameters(), lr=hp.lr, weight_decay=hp.weight_decay)
        else:
            opt = torch.optim.AdamW(self.parameters(), lr=hp.lr, weight_decay=hp.weight_decay)
        warm = int(self.hparams.warmup_steps)
        if warm <= 0:
            return opt
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / warm))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    # ---- persistence ----------------------------------------------------------------------
    def save_encoders(self, folder: str) -> None:
        """``save_pretrained`` the tower(s) and tokenizer: ``folder/query`` (+ ``folder/doc`` if separate)."""
        from pathlib import Path

        root = Path(folder)
        self.query_encoder.save_pretrained(root / "query")
        self.tokenizer.save_pretrained(root / "query")
        if self.doc_encoder is not self.query_encoder:
            self.doc_encoder.save_pretrained(root / "doc")
            self.tokenizer.save_pretrained(root / "doc")
