"""DELTR trained by Lightning: in memory (a DataFrame) or streamed from Parquet, on 1..N processes.

:func:`train_deltr_lightning` returns a fitted :class:`fairltr.DELTR` (weights in standardised
units, ``mean_`` / ``scale_``, history, ...) set exactly as the estimator sets them, so
``DELTR.save`` / ``DELTR.load`` and the ranker pyfunc work unchanged.

Objective (the estimator's): sum over queries of ListNet_q + gamma * U_q, plus l2 * ||w||^2.
A step on a batch B of whole queries minimises sum_{q in B} (ListNet_q + gamma * U_q)
+ l2 * (|B| / Q) * ||w||^2, so one epoch's steps add up to the whole objective.

Defaults (measured on Law race and synthetic data, see ``benchmarks/results/streaming.md``):

* ``optimizer="auto"``: L-BFGS (the estimator's settings: strong-Wolfe line search, history 20,
  lr 1, stop when the epoch objective changes by <= tol relative) when one batch holds every
  training query; Adam (lr 0.01, decayed to 0 along a cosine over the run) for true mini-batches.
  With L-BFGS one epoch is one optimizer step on the whole table, so the result is the
  estimator's model. With a constant Adam lr the mini-batch noise kept the 10^6-row benchmark's
  objective 0.17 above the full-batch optimum after 420 steps (exposure_ratio off by 0.006); the
  cosine decay brought it to 0.0004 (metrics within 0.0001) in the same steps.
* ``batch_queries=None``: all queries (in memory) or :data:`STREAM_BATCH_QUERIES` (streamed).
* ``epochs=None``: 200 for L-BFGS (it stops at ``tol`` long before); for Adam enough epochs for
  :data:`ADAM_STEPS` steps and at least :data:`ADAM_MIN_EPOCHS` (:func:`default_epochs`).

DDP: ``devices > 1`` uses Lightning's ``ddp_spawn`` strategy (gloo on CPU, NCCL on GPU): the
calling process spawns ``devices`` fresh workers (multiprocessing "spawn"), each re-imports this
module and gets a pickled copy of the module and data module; rank 0 sends the final state dict
(weights plus the history buffers) back and the caller builds the DELTR from it. This works from
a library call, a console script and a test because nothing re-executes the caller's command
line; Lightning's subprocess launcher (``strategy="ddp"``) re-runs ``sys.argv`` in every worker,
which would repeat a CLI command's other work (or the whole pytest session), so it is not used.
The caller's script needs the usual ``if __name__ == "__main__":`` guard (spawn imports it).
Each step's loss is the global objective of the global batch (all-reduced) with the gradient of
``world * local`` objective, so DDP's gradient mean is the gradient of the global sum and
L-BFGS's line search sees the same value on every process.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import pandas as pd
import torch

from fairltr.columns import UNSET, RankingColumns, resolve_columns
from fairltr.data import RankingBatch
from fairltr.deltr import DELTR
from fairltr.errors import ConfigError, DataError
from fairltr.parquet_stream import DEFAULT_CHUNK_ROWS, iter_query_batches, scan_parquet
from lightning_modules.deltr_module import DELTRModule
from lightning_modules.interrupt import fit
from lightning_modules.quiet import quiet_lightning

__all__ = [
    "DELTRTrainingModule", "train_deltr_lightning", "default_epochs", "quiet_lightning",
    "STREAM_BATCH_QUERIES", "ADAM_STEPS", "ADAM_MIN_EPOCHS", "ADAM_LR", "ADAM_LR_DECAY", "LBFGS_EPOCHS",
    "LBFGS_LR", "LR_DECAYS",
]

STREAM_BATCH_QUERIES = 16  # streamed default: queries per optimizer step (all processes together)
ADAM_LR = 0.01
ADAM_LR_DECAY = "cosine"  # lr_t = lr (1 + cos(pi t / T)) / 2 over the T steps of the run
ADAM_STEPS = 400  # default Adam budget: at least this many steps ...
ADAM_MIN_EPOCHS = 10  # ... and at least this many epochs
LBFGS_EPOCHS = 200  # the estimator's max_iter; the tol rule stops far earlier
LBFGS_LR = 1.0

LR_DECAYS = ("none", "cosine", "linear")

Callback = Callable[[int, dict[str, float]], None]


class DELTRTrainingModule(DELTRModule):
    """:class:`DELTRModule` with the estimator's optimizer settings, DDP-exact sums and a history.

    ``n_queries``: training queries (the l2 share of a batch is ``|B| / n_queries``);
    ``max_epochs`` sizes the history buffer; ``tol``: stop when the epoch objective changes by
    <= ``tol * max(1, |objective|)`` (the estimator's rule). ``history_terms[e]`` holds
    (total, listnet, exposure) summed over the batches of epoch ``e``, each batch at the weights
    it was trained from (for one full batch: the objective after ``e`` steps, as the estimator
    records it). ``epoch_callback(epoch, record)`` sees every record (single process only).
    """

    def __init__(self, n_features: int, *, n_queries: int, max_epochs: int, tol: float = 1e-10,
                 lr_decay: str = "none", **kw: Any) -> None:
        super().__init__(n_features, **kw)
        if lr_decay not in LR_DECAYS:
            raise ConfigError(f"lr_decay must be one of {LR_DECAYS}, got {lr_decay!r}")
        self.n_queries = int(n_queries)
        self.tol = float(tol)
        self.lr_decay = lr_decay
        self.register_buffer("history_terms", torch.full((max_epochs, 3), float("nan"), dtype=torch.float64))
        self.register_buffer("epochs_done", torch.zeros((), dtype=torch.long))
        self.epoch_callback: Callback | None = None
        self._first_call = True
        self._epoch_sum = torch.zeros(3, dtype=torch.float64)

    # ---- objective -------------------------------------------------------------------------
    def local_objective(self, batch: RankingBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """(this process's share of the objective, detached (total, listnet, exposure))."""
        if not bool(batch.mask.any()):  # padding step of a process with no data left
            zero = (self.weight * 0.0).sum()
            return zero, torch.zeros(3, dtype=torch.float64, device=zero.device)
        t = self.objective(batch)
        total = t.total
        l2 = self.hparams.l2
        if l2:
            share = float(batch.mask.any(dim=1).sum()) / self.n_queries
            total = total + l2 * share * (self.weight * self.weight).sum()
        terms = torch.stack([total.detach(), t.listnet.detach(), t.exposure.detach()]).to(torch.float64)
        return total, terms

    def training_step(self, batch: RankingBatch, batch_idx: int) -> torch.Tensor:
        local, terms = self.local_objective(batch)
        world = self.trainer.world_size
        loss = local
        if world > 1:
            terms = self.trainer.strategy.reduce(terms.clone(), reduce_op="sum")
            # value: the global batch's objective; gradient: world * local, averaged by DDP to the sum
            loss = local * world + (terms[0].to(local.dtype) - local.detach() * world)
        if self._first_call:  # L-BFGS calls this again in its line search: count the first call only
            self._epoch_sum += terms.detach().cpu()
            self._first_call = False
        self.log("train/loss", terms[0], prog_bar=True, batch_size=max(batch.n_queries, 1), logger=False)
        return loss

    # ---- bookkeeping -----------------------------------------------------------------------
    def on_train_epoch_start(self) -> None:
        self._epoch_sum = torch.zeros(3, dtype=torch.float64)
        loader = self.trainer.train_dataloader
        dataset = getattr(loader, "dataset", None)
        if hasattr(dataset, "set_epoch"):
            dataset.set_epoch(self.current_epoch)

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        self._first_call = True

    def on_train_epoch_end(self) -> None:
        e = self.current_epoch
        self.history_terms[e] = self._epoch_sum.to(self.history_terms.device)
        self.epochs_done.fill_(e + 1)
        total = float(self._epoch_sum[0])
        if not math.isfinite(total):
            raise FloatingPointError(f"DELTR objective became {total} in epoch {e}; try a smaller lr or gamma")
        if self.epoch_callback is not None:
            self.epoch_callback(e, record(e, self._epoch_sum))
        if e > 0:
            prev = float(self.history_terms[e - 1, 0])
            if abs(prev - total) <= self.tol * max(1.0, abs(total)):
                self.trainer.should_stop = True

    def configure_optimizers(self) -> Any:
        if self.hparams.optimizer == "lbfgs":  # exactly the estimator's L-BFGS
            return torch.optim.LBFGS(
                self.parameters(), lr=self.hparams.lr, max_iter=1, max_eval=25, history_size=20,
                line_search_fn="strong_wolfe", tolerance_grad=0.0, tolerance_change=0.0,
            )
        opt = super().configure_optimizers()
        if self.lr_decay == "none":
            return opt
        total = max(int(self.trainer.estimated_stepping_batches), 1)
        if self.lr_decay == "cosine":  # lr_t = lr * (1 + cos(pi t / T)) / 2

            def factor(t: int) -> float:
                return 0.5 * (1.0 + math.cos(math.pi * min(t, total) / total))
        else:  # linear: lr_t = lr * (1 - t / T)

            def factor(t: int) -> float:
                return max(0.0, 1.0 - t / total)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def record(iteration: int, terms: torch.Tensor | Sequence[float]) -> dict[str, float]:
    """A history entry as the estimator writes it."""
    t = [float(v) for v in terms]
    return {"iteration": int(iteration), "total": t[0], "listnet": t[1], "exposure": t[2]}


@torch.no_grad()
def objective_over(module: DELTRModule, batches: Iterable[RankingBatch], l2: float = 0.0) -> torch.Tensor:
    """(total, listnet, exposure) of the whole training set at the module's weights."""
    acc = torch.zeros(3, dtype=torch.float64)
    for b in batches:
        t = module.objective(b.to(module.weight.device))
        acc += torch.stack([t.total, t.listnet, t.exposure]).double().cpu()
    if l2:
        acc[0] += l2 * float((module.weight.double() ** 2).sum())
    return acc


def default_epochs(optimizer: str, steps_per_epoch: int) -> int:
    """L-BFGS: :data:`LBFGS_EPOCHS`; Adam: max(:data:`ADAM_MIN_EPOCHS`, ceil(:data:`ADAM_STEPS` / steps))."""
    if optimizer == "lbfgs":
        return LBFGS_EPOCHS
    return max(ADAM_MIN_EPOCHS, math.ceil(ADAM_STEPS / max(steps_per_epoch, 1)))


def _is_parquet(train: Any) -> bool:
    return isinstance(train, (str, os.PathLike))


def _device_name(accelerator: str) -> str:
    return {"gpu": "cuda", "cuda": "cuda", "cpu": "cpu"}.get(str(accelerator), "auto")


def _fit_on_nodes(trainer: Any, module: DELTRTrainingModule, dm: Any, rdv: Any) -> None:
    """One node's fit of a multi-node run (:func:`lightning_modules.multinode.fit_on_nodes`)."""
    from lightning_modules.multinode import fit_on_nodes

    fit_on_nodes(trainer, module, dm, rdv)


def train_deltr_lightning(
    train: pd.DataFrame | str | os.PathLike,
    *,
    gamma: float,
    fairness_loss: str = "exposure_hinge",
    reduce: str = "max",
    colorblind: bool = False,
    features: Sequence[str] | None = None,
    query: str = UNSET,
    group: str = UNSET,
    judgment: str = UNSET,
    epochs: int | None = None,
    batch_queries: int | None = None,
    optimizer: str = "auto",
    lr: float | None = None,
    lr_decay: str | None = None,
    l2: float = 0.0,
    tol: float = 1e-10,
    shuffle: bool = True,
    accelerator: str = "auto",
    devices: int = 1,
    num_nodes: int = 1,
    ddp_timeout: float | None = None,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: bool = False,
    callback: Callback | None = None,
    trainer_options: Mapping[str, Any] | None = None,
    columns: RankingColumns | None = None,
) -> DELTR:
    """Train DELTR with Lightning on a DataFrame (in memory) or a Parquet file / folder (streamed).

    ``columns``: the column contract (default :data:`~fairltr.columns.DEFAULT_COLUMNS`; the loose
    ``query`` / ``group`` / ``judgment`` keywords override it); features exclude its query,
    judgment and item columns, as the estimator's do.

    ``batch_queries`` whole queries per optimizer step over all processes; ``optimizer`` "auto",
    "lbfgs" (full batches only) or "adam"; ``lr_decay`` (Adam) "cosine" (default), "linear" or
    "none" over the whole run's steps. History: ``history[e]`` for e < ``n_iter_`` is epoch
    e's objective summed over its batches (see :class:`DELTRTrainingModule`); the last entry,
    ``history[n_iter_]``, is the exact objective of the whole training set at the returned
    weights. ``n_iter_`` = epochs run. ``callback(iteration, record)`` is called for every
    history entry: live with one process, after training with several (the workers are other
    processes). With several processes only this (the calling) process returns the model.
    ``trainer_options``: extra ``lightning.pytorch.Trainer`` arguments (a logger, callbacks,
    ``limit_train_batches``...); the epoch count, devices and strategy are this function's.
    ``num_nodes > 1``: one process per host with Lightning's standard rendezvous
    (``MASTER_ADDR`` / ``MASTER_PORT`` / ``NODE_RANK``, :mod:`lightning_modules.multinode`); every
    node runs this call, streams its own share of row groups, and returns the same model
    (``training_["node_rank"]`` says which node it is). ``ddp_timeout`` (seconds, default
    :data:`~lightning_modules.multinode.DEFAULT_DDP_TIMEOUT`) bounds the wait for the other nodes
    and each collective; a node that never joins or is lost is a one-line
    :class:`~fairltr.errors.ClusterError` naming it.
    A Parquet table must be grouped by query id; it is read twice per epoch at most (once to
    train, once at the end for the final objective) plus one scan for validation and statistics.

    Long because the signature and this documentation of its 28 keywords are most of it; its
    body (about 45 lines) only sequences the jobs below (checks, data, optimiser plan, trainer,
    final history, the fitted estimator).
    """
    c = resolve_columns(columns, query=query, group=group, judgment=judgment)
    DELTR(gamma, protected=c.group, colorblind=colorblind, l2=l2, tol=tol, seed=seed, fairness_loss=fairness_loss,
          reduce=reduce, dtype=dtype, columns=c).settings()  # the estimator's checks of the shared settings
    _check_run_settings(optimizer=optimizer, epochs=epochs, batch_queries=batch_queries, devices=devices, lr=lr)
    devices = int(devices)
    rendezvous = _rendezvous(num_nodes, ddp_timeout, devices)
    world = devices * (rendezvous.num_nodes if rendezvous else 1)
    data = _training_data(train, c, features=features, colorblind=colorblind, batch_queries=batch_queries,
                          shuffle=shuffle, seed=seed, dtype=dtype, chunk_rows=chunk_rows)
    optimizer, lr, lr_decay, epochs = _optimiser_plan(optimizer, lr, lr_decay, epochs, data)

    module = DELTRTrainingModule(
        len(data.names), n_queries=data.n_queries, max_epochs=epochs, tol=tol, lr_decay=lr_decay,
        fairness_loss=fairness_loss, gamma=gamma,
        reduce=reduce, n_groups=data.n_groups, lr=lr, optimizer=optimizer, l2=l2, seed=seed, dtype=dtype,
    )
    if world == 1:
        module.epoch_callback = callback
    options = _trainer_settings(epochs=epochs, accelerator=accelerator, devices=devices, rendezvous=rendezvous,
                                progress=progress, trainer_options=trainer_options)
    _run_trainer(options, module, data.dm, rendezvous, progress)
    node_rank = rendezvous.node_rank if rendezvous else 0
    module.epoch_callback = None
    module = module.cpu()

    history = _final_history(module, data, l2, dtype=dtype, chunk_rows=chunk_rows)
    if callback is not None:
        for rec in history if world > 1 else history[-1:]:
            callback(rec["iteration"], rec)

    # protected= as well as columns=: model.protected keeps naming the group for its older readers
    model = DELTR(gamma, protected=c.group, colorblind=colorblind, standardize=True, l2=l2, optimizer=optimizer,
                  max_iter=epochs, lr=lr, tol=tol, seed=seed, device=_device_name(accelerator),
                  fairness_loss=fairness_loss, reduce=reduce, dtype=dtype, columns=c)
    model.set_fitted_state(columns=c, feature_names=data.names, weights=module.weight.detach().double().numpy(),
                           mean=data.mean, scale=data.scale, n_iter=int(module.epochs_done), history=history)
    model.training_ = {
        "engine": "lightning", "streamed": data.streamed, "batch_queries": data.size, "devices": devices,
        **({"num_nodes": rendezvous.num_nodes, "node_rank": node_rank} if rendezvous else {}),
        "accelerator": str(accelerator), "shuffle": bool(shuffle and not data.full_batch),
        "n_queries": data.n_queries, "lr_decay": lr_decay,
        "source": str(Path(train)) if data.streamed else None,
    }
    return model


def _check_run_settings(*, optimizer: str, epochs: int | None, batch_queries: int | None, devices: int,
                        lr: float | None) -> None:
    """ConfigError for an optimizer, epoch count, batch size, device count or lr the run cannot use."""
    if optimizer not in ("auto", "lbfgs", "adam"):
        raise ConfigError(f"optimizer must be 'auto', 'lbfgs' or 'adam', got {optimizer!r}")
    if epochs is not None and (isinstance(epochs, bool) or int(epochs) != epochs or epochs < 1):
        raise ConfigError(f"epochs must be an integer >= 1, got {epochs!r}")
    if batch_queries is not None and (isinstance(batch_queries, bool) or int(batch_queries) != batch_queries
                                      or batch_queries < 1):
        raise ConfigError(f"batch_queries must be an integer >= 1 (or None), got {batch_queries!r}")
    if isinstance(devices, bool) or int(devices) != devices or devices < 1:
        raise ConfigError(f"devices must be an integer >= 1, got {devices!r}")
    if lr is not None and not lr > 0:
        raise ConfigError(f"lr must be > 0, got {lr}")


def _rendezvous(num_nodes: int, ddp_timeout: float | None, devices: int) -> Any:
    """The multi-node rendezvous read from the environment (None for one node)."""
    if num_nodes == 1:
        return None
    from lightning_modules.multinode import rendezvous_from_env

    rendezvous = rendezvous_from_env(num_nodes, ddp_timeout)
    if devices != 1:
        raise ConfigError(f"num_nodes > 1 runs one process per node: devices must be 1, got {devices}")
    return rendezvous


@dataclass
class _TrainingData:
    """The training data of one run: its data module, shape, feature statistics and how to re-read it.

    ``size``: queries per step; ``layout`` (streamed) or ``full`` (in memory) gives the batches
    of the final objective."""

    dm: Any
    streamed: bool
    n_queries: int
    size: int
    names: list[str]
    mean: Any
    scale: Any
    n_groups: int
    layout: Any = None
    full: RankingBatch | None = None

    @property
    def full_batch(self) -> bool:
        return self.size >= self.n_queries

    def batches(self, *, dtype: torch.dtype, chunk_rows: int) -> Iterable[RankingBatch]:
        """The training set once, in steps of ``size`` queries."""
        if self.streamed:
            return iter_query_batches(self.layout, batch_queries=self.size, dtype=dtype, chunk_rows=chunk_rows)
        full, n, size = self.full, self.n_queries, self.size
        return (full.select(list(range(i, min(i + size, n)))) for i in range(0, n, size))


def _training_data(train: Any, c: RankingColumns, *, features: Sequence[str] | None, colorblind: bool,
                   batch_queries: int | None, shuffle: bool, seed: int, dtype: torch.dtype,
                   chunk_rows: int) -> _TrainingData:
    """The data module of ``train``: a Parquet path streamed (default :data:`STREAM_BATCH_QUERIES`
    queries a step) or a DataFrame in memory (default: all queries a step)."""
    from lightning_modules.parquet_datamodule import ParquetRankingDataModule
    from lightning_modules.query_batches import ShardedRankingDataModule

    if _is_parquet(train):
        layout = scan_parquet(train, columns=c, features=features, colorblind=colorblind, chunk_rows=chunk_rows)
        n_queries = layout.n_queries
        size = batch_queries or min(STREAM_BATCH_QUERIES, n_queries)
        dm = ParquetRankingDataModule(
            train, columns=c, features=features, colorblind=colorblind,
            batch_queries=size, shuffle=shuffle and size < n_queries, seed=seed, dtype=dtype,
            chunk_rows=chunk_rows, layout=layout,
        )
        return _TrainingData(dm, True, n_queries, size, layout.feature_names, layout.mean, layout.scale,
                             layout.n_groups, layout=layout)
    if not isinstance(train, pd.DataFrame):
        raise ConfigError(f"train must be a DataFrame or a path to Parquet data, got {type(train).__name__}")
    if c.group not in train.columns:
        raise DataError(f"group column {c.group!r} not in the training table; columns: {list(train.columns)}")
    dm = ShardedRankingDataModule(train, columns=c, features=features, colorblind=colorblind,
                                  batch_size=batch_queries, shuffle=shuffle, seed=seed, dtype=dtype)
    dm.setup("fit")
    full = dm.batches["train"]
    n_queries = full.n_queries
    size = min(batch_queries or n_queries, n_queries)
    dm.batch_size, dm.shuffle = size, shuffle and size < n_queries
    return _TrainingData(dm, False, n_queries, size, dm.feature_names, dm.feature_mean.double().numpy(),
                         dm.feature_scale.double().numpy(), max(2, int(full.groups[full.mask].max()) + 1), full=full)


def _optimiser_plan(optimizer: str, lr: float | None, lr_decay: str | None, epochs: int | None,
                    data: _TrainingData) -> tuple[str, float, str, int]:
    """(optimizer, lr, lr_decay, epochs) with the module docstring's defaults filled in: "auto" is
    L-BFGS for full batches and Adam otherwise; L-BFGS needs full batches and no lr decay."""
    if optimizer == "auto":
        optimizer = "lbfgs" if data.full_batch else "adam"
    if optimizer == "lbfgs" and not data.full_batch:
        raise ConfigError(
            f"optimizer 'lbfgs' needs full batches (batch_queries >= {data.n_queries} training queries); "
            f"use 'adam' for mini-batches of {data.size} queries"
        )
    lr = lr if lr is not None else (LBFGS_LR if optimizer == "lbfgs" else ADAM_LR)
    lr_decay = lr_decay or ("none" if optimizer == "lbfgs" else ADAM_LR_DECAY)
    if lr_decay not in LR_DECAYS:
        raise ConfigError(f"lr_decay must be one of {LR_DECAYS}, got {lr_decay!r}")
    if optimizer == "lbfgs" and lr_decay != "none":
        raise ConfigError("lr_decay applies to Adam only (L-BFGS has its own line search)")
    epochs = int(epochs) if epochs is not None else default_epochs(optimizer, math.ceil(data.n_queries / data.size))
    return optimizer, lr, lr_decay, epochs


def _trainer_settings(*, epochs: int, accelerator: str, devices: int, rendezvous: Any, progress: bool,
                      trainer_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``lightning.pytorch.Trainer`` arguments: this function's (epochs, devices, strategy:
    ``ddp_spawn`` for several local processes, DDP with the rendezvous timeout across nodes), then
    the caller's ``trainer_options``, which may not override those."""
    strategy: Any = "ddp_spawn" if devices > 1 else "auto"
    if rendezvous is not None:
        from datetime import timedelta

        from lightning.pytorch.strategies import DDPStrategy

        strategy = DDPStrategy(timeout=timedelta(seconds=rendezvous.timeout))
    options = dict(
        max_epochs=epochs, accelerator=accelerator, devices=devices, strategy=strategy, use_distributed_sampler=False,
        logger=False, enable_checkpointing=False, enable_model_summary=False, enable_progress_bar=progress,
        num_sanity_val_steps=0, limit_val_batches=0,
    )
    fixed = {"max_epochs", "accelerator", "devices", "strategy", "use_distributed_sampler"}
    if rendezvous is not None:  # else trainer_options={"num_nodes": M} keeps working for a launcher's script
        fixed.add("num_nodes")
        options["num_nodes"] = rendezvous.num_nodes
    clash = fixed & set(trainer_options or {})
    if clash:
        raise ConfigError(f"trainer_options may not set {sorted(clash)}: use the function's own arguments")
    options.update(trainer_options or {})
    return options


def _run_trainer(options: dict[str, Any], module: DELTRTrainingModule, dm: Any, rendezvous: Any,
                 progress: bool) -> None:
    """Build the Trainer and fit (across nodes with a rendezvous); Ctrl-C is a KeyboardInterrupt."""
    import lightning.pytorch as pl

    with quiet_lightning(not progress):
        trainer = pl.Trainer(**options)
        if rendezvous is None:
            fit(trainer, module, datamodule=dm)  # Ctrl-C: KeyboardInterrupt (Lightning would exit 1)
        else:
            _fit_on_nodes(trainer, module, dm, rendezvous)


def _final_history(module: DELTRTrainingModule, data: _TrainingData, l2: float, *, dtype: torch.dtype,
                   chunk_rows: int) -> list[dict[str, float]]:
    """The epochs' records plus the exact objective of the whole training set at the final weights."""
    done = int(module.epochs_done)
    history = [record(e, module.history_terms[e]) for e in range(done)]
    final = record(done, objective_over(module, data.batches(dtype=dtype, chunk_rows=chunk_rows), l2))
    if not math.isfinite(final["total"]):
        raise FloatingPointError(f"DELTR objective became {final['total']} after {done} epochs; try a smaller lr")
    history.append(final)
    return history
