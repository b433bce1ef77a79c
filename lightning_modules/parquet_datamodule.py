"""Streamed training batches of whole queries from Parquet (never the whole table in memory).

:class:`ParquetRankingDataModule` scans the file once (:func:`fairltr.parquet_stream.scan_parquet`:
validation, query layout, mean / std) and then streams padded, standardised batches of whole
queries. Under DDP each process reads its own contiguous share of row groups
(:func:`fairltr.parquet_stream.split_units`), trains on ``ceil(batch_queries / world)`` queries
per step, and pads its epoch with :func:`~lightning_modules.query_batches.empty_batch` so that
every process takes the same number of steps. ``shuffle=True`` visits a process's row groups in
a new order every epoch (seed + epoch; the training module calls ``set_epoch`` on the
loader's dataset); queries inside a row group keep their file order.
"""

from __future__ import annotations

import math
import os
from typing import Iterator, Sequence

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from fairltr.columns import RankingColumns, resolve_columns
from fairltr.data import RankingBatch
from fairltr.errors import ConfigError
from fairltr.parquet_stream import DEFAULT_CHUNK_ROWS, ParquetLayout, iter_query_batches, scan_parquet, split_units
from lightning_modules.query_batches import empty_batch

__all__ = ["StreamedQueryBatches", "ParquetRankingDataModule", "steps_per_epoch"]


def steps_per_epoch(layout: ParquetLayout, shares: Sequence[np.ndarray], local_batch: int) -> int:
    """Optimizer steps per epoch: the most batches any process's share of queries needs."""
    return max(math.ceil(len(layout.queries_of(s)) / local_batch) for s in shares) if shares else 0


class StreamedQueryBatches(IterableDataset):
    """Batches of ``batch_queries`` whole queries starting in ``units``, then empty batches up to
    ``steps`` per epoch. Call :meth:`set_epoch` before iterating (the shuffle seed)."""

    def __init__(self, layout: ParquetLayout, units: np.ndarray, *, batch_queries: int, steps: int,
                 shuffle: bool = True, seed: int = 0, dtype: torch.dtype = torch.float64,
                 chunk_rows: int = DEFAULT_CHUNK_ROWS) -> None:
        self.layout, self.units = layout, np.asarray(units, dtype=np.int64)
        self.batch_queries, self.steps = batch_queries, steps
        self.shuffle, self.seed, self.dtype, self.chunk_rows = shuffle, seed, dtype, chunk_rows
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.steps

    def order(self) -> np.ndarray:
        """Units in this epoch's reading order."""
        if not self.shuffle:
            return self.units
        return self.units[np.random.default_rng([self.seed, self.epoch]).permutation(len(self.units))]

    def __iter__(self) -> Iterator[RankingBatch]:
        n = 0
        for batch in iter_query_batches(self.layout, self.order(), batch_queries=self.batch_queries,
                                        dtype=self.dtype, chunk_rows=self.chunk_rows):
            yield batch
            n += 1
        while n < self.steps:
            yield empty_batch(len(self.layout.feature_names), self.dtype, self.layout.feature_names)
            n += 1


class ParquetRankingDataModule(pl.LightningDataModule):
    """Training loader streaming a Parquet file (or folder of Parquet files) grouped by query.

    ``columns``: the column contract (default :data:`~fairltr.columns.DEFAULT_COLUMNS`);
    ``batch_queries`` counts queries per optimizer step over all processes;
    ``layout`` may be passed when the file was scanned already (the scan is one full pass).
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        columns: RankingColumns | None = None,
        features: Sequence[str] | None = None,
        colorblind: bool = False,
        standardize: bool = True,
        batch_queries: int = 64,
        shuffle: bool = True,
        seed: int = 0,
        dtype: torch.dtype = torch.float64,
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
        layout: ParquetLayout | None = None,
    ) -> None:
        super().__init__()
        if batch_queries < 1:
            raise ConfigError(f"batch_queries must be >= 1, got {batch_queries}")
        self.path = str(path)
        self.columns = resolve_columns(columns)
        self.scan_options = dict(columns=self.columns, features=features,
                                 colorblind=colorblind, standardize=standardize, chunk_rows=chunk_rows)
        self.batch_queries, self.shuffle, self.seed = batch_queries, shuffle, seed
        self.dtype, self.chunk_rows = dtype, chunk_rows
        self.layout = layout

    def setup(self, stage: str | None = None) -> None:
        if self.layout is None:
            self.layout = scan_parquet(self.path, **self.scan_options)

    @property
    def n_features(self) -> int:
        return len(self.layout.feature_names)

    @property
    def feature_names(self) -> list[str]:
        return list(self.layout.feature_names)

    def train_dataloader(self) -> DataLoader:
        self.setup()
        trainer = getattr(self, "trainer", None)
        rank, world = (trainer.global_rank, trainer.world_size) if trainer is not None else (0, 1)
        shares = split_units(self.layout, world)
        local = math.ceil(self.batch_queries / world)
        dataset = StreamedQueryBatches(
            self.layout, shares[rank], batch_queries=local, steps=steps_per_epoch(self.layout, shares, local),
            shuffle=self.shuffle, seed=self.seed, dtype=self.dtype, chunk_rows=self.chunk_rows,
        )
        return DataLoader(dataset, batch_size=None, num_workers=0)
