"""Global batches of whole queries dealt to the processes of a data-parallel run.

One optimizer step consumes one *global* batch of ``batch_queries`` queries. With ``world``
processes, each global batch is cut into ``world`` contiguous parts and process ``rank`` trains
on part ``rank``; a process whose part is empty gets :func:`empty_batch` (no real candidate,
zero loss, zero gradient), so every process takes the same number of steps and the
collective operations of DDP stay in step. The global batches are the same for any
``world``, so a DDP run follows the single-process run up to summation order.

Lightning's ``DistributedSampler`` is not used here: it pads a rank's share by repeating
samples (a repeated query would count twice in DELTR's summed objective) and it deals
samples, not whole global batches.
"""

from __future__ import annotations

import math
from typing import Iterator

import torch
from torch.utils.data import DataLoader, Sampler

from fairltr.data import RankingBatch
from fairltr.errors import ConfigError
from lightning_modules.ranking_datamodule import QueryDataset, RankingDataModule, SelectQueries

__all__ = ["QueryBatchSampler", "SelectQueriesOrEmpty", "ShardedRankingDataModule", "empty_batch"]


def empty_batch(
    n_features: int, dtype: torch.dtype = torch.float64, feature_names: list[str] | None = None
) -> RankingBatch:
    """A batch of one query with no real candidate (mask all False): it adds nothing to the loss."""
    return RankingBatch(
        features=torch.zeros(1, 1, n_features, dtype=dtype), judgments=torch.zeros(1, 1, dtype=dtype),
        groups=torch.zeros(1, 1, dtype=torch.long), mask=torch.zeros(1, 1, dtype=torch.bool),
        row_index=torch.full((1, 1), -1, dtype=torch.long), query_ids=[], feature_names=list(feature_names or []),
    )


class QueryBatchSampler(Sampler[list[int]]):
    """This process's query positions for every global batch of an epoch.

    Epoch ``e`` orders the queries by a permutation drawn from ``seed + e`` (or keeps them in
    order with ``shuffle=False``), cuts the order into global batches of ``batch_queries`` and
    yields part ``rank`` of ``world`` equal contiguous parts of each (possibly empty).
    Lightning calls :meth:`set_epoch` before each epoch.
    """

    def __init__(self, n_queries: int, batch_queries: int, *, rank: int = 0, world: int = 1,
                 shuffle: bool = True, seed: int = 0) -> None:
        if batch_queries < 1:
            raise ConfigError(f"batch_queries must be >= 1, got {batch_queries}")
        if not 0 <= rank < world:
            raise ConfigError(f"rank must be in [0, {world}), got {rank}")
        self.n_queries, self.batch_queries = n_queries, batch_queries
        self.rank, self.world, self.shuffle, self.seed = rank, world, shuffle, seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return math.ceil(self.n_queries / self.batch_queries)

    def __iter__(self) -> Iterator[list[int]]:
        if self.shuffle:
            order = torch.randperm(self.n_queries, generator=torch.Generator().manual_seed(self.seed + self.epoch))
        else:
            order = torch.arange(self.n_queries)
        for start in range(0, self.n_queries, self.batch_queries):
            glob = order[start:start + self.batch_queries]
            part = math.ceil(len(glob) / self.world)
            yield glob[self.rank * part:(self.rank + 1) * part].tolist()


class SelectQueriesOrEmpty(SelectQueries):
    """:class:`SelectQueries`, or :func:`empty_batch` for an empty list of positions."""

    def __call__(self, positions: list[int]) -> RankingBatch:
        if not positions:
            b = self.batch
            return empty_batch(b.features.shape[-1], b.features.dtype, b.feature_names)
        return super().__call__(positions)


class ShardedRankingDataModule(RankingDataModule):
    """:class:`RankingDataModule` whose training loader deals global batches to processes.

    ``batch_size`` (queries per optimizer step over all processes; ``None`` = all queries) and
    ``shuffle`` / ``seed`` mean what they mean for :class:`QueryBatchSampler`. Use it with
    ``Trainer(use_distributed_sampler=False)``.
    """

    def train_dataloader(self) -> DataLoader:
        batch = self.batches["train"]
        trainer = getattr(self, "trainer", None)
        rank, world = (trainer.global_rank, trainer.world_size) if trainer is not None else (0, 1)
        sampler = QueryBatchSampler(batch.n_queries, self.batch_size or batch.n_queries, rank=rank, world=world,
                                    shuffle=self.shuffle, seed=self.seed)
        # batch_size=None: the sampler already yields a list of positions per step
        return DataLoader(QueryDataset(batch), sampler=sampler, batch_size=None,
                          collate_fn=SelectQueriesOrEmpty(batch))
