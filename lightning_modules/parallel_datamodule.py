"""Batches of parallel queries for DPR / LaKDA training (the ddtp-mlir / MultiEuP layout).

One example = one parallel item of the split: a query in a language drawn uniformly among the
item's languages, the item's positive document, and a parallel version of the query in another
language drawn uniformly among the item's *other* languages (optionally also a hard negative).
Draws depend only on (seed, epoch, item), so a run is reproducible and DPR and LaKDA runs with
the same seed see exactly the same batches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import lightning.pytorch as pl
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from fairltr.errors import ConfigError, DataError
from fairltr.retrieval.parallel_data import ParallelRetrievalData, read_parallel_data

__all__ = ["ParallelQueryDataset", "ParallelQueryDataModule", "collate_parallel"]


class ParallelQueryDataset(Dataset):
    """Items of one split; ``__getitem__`` returns a dict of strings (see module docstring)."""

    def __init__(
        self,
        data: ParallelRetrievalData,
        *,
        seed: int = 0,
        hard_negatives: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        q = data.queries
        by_item = {pid: (g["lang"].tolist(), g["text"].tolist()) for pid, g in q.groupby("parallel_id", sort=True)}
        single = [pid for pid, (langs, _) in by_item.items() if len(langs) < 2]
        if single:
            raise DataError(
                f"parallel item {single[0]!r} has a query in one language only ({len(single)} such items); "
                "every item needs at least two languages for a parallel version"
            )
        positives = data.positives()
        texts = dict(zip(data.corpus["_id"], data.corpus["text"]))
        self.items = list(by_item)
        self.queries = [by_item[pid] for pid in self.items]
        self.positive_ids = [positives[pid] for pid in self.items]
        self.positive_texts = [texts[d] for d in self.positive_ids]
        self.negative_ids: list[list[str]] | None = None
        if hard_negatives is not None:
            self.negative_ids = [[d for d in hard_negatives.get(pid, []) if d in texts] for pid in self.items]
            self.negative_texts = [[texts[d] for d in negs] for negs in self.negative_ids]
            empty = [pid for pid, negs in zip(self.items, self.negative_ids) if not negs]
            if empty:
                raise DataError(f"no hard negative for parallel item {empty[0]!r} ({len(empty)} items lack one)")
        self.seed = int(seed)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, str]:
        rng = np.random.default_rng([self.seed, self.epoch, int(index)])
        langs, texts = self.queries[index]
        i = int(rng.integers(len(langs)))
        j = int(rng.integers(len(langs) - 1))
        j = j + (j >= i)  # uniform among the other languages
        out = {
            "item": self.items[index],
            "query": texts[i],
            "query_lang": langs[i],
            "parallel": texts[j],
            "parallel_lang": langs[j],
            "positive": self.positive_texts[index],
            "positive_id": self.positive_ids[index],
        }
        if self.negative_ids is not None:
            pick = int(rng.integers(len(self.negative_ids[index])))
            out["negative"] = self.negative_texts[index][pick]
            out["negative_id"] = self.negative_ids[index][pick]
        return out


def collate_parallel(examples: list[dict[str, str]]) -> dict[str, list[str]]:
    """List of examples -> dict of lists (texts are tokenised by the module, on its device)."""
    return {key: [ex[key] for ex in examples] for key in examples[0]}


class ParallelQueryDataModule(pl.LightningDataModule):
    """Train / validation loaders over the items of ``train_split`` / ``val_split``.

    ``data`` is a folder in the parallel layout or an already read :class:`ParallelRetrievalData`.
    ``max_train_items`` / ``max_val_items`` keep a seeded sample of items. ``batch_size`` is per
    process; training drops the last incomplete batch (all processes need equal batches).
    """

    def __init__(
        self,
        data: str | Path | ParallelRetrievalData,
        *,
        batch_size: int = 32,
        train_split: str = "train",
        val_split: str | None = None,
        max_train_items: int | None = None,
        max_val_items: int | None = None,
        seed: int = 0,
        shuffle: bool = True,
        hard_negatives: Mapping[str, Sequence[str]] | None = None,
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        self.data = data
        self.batch_size = int(batch_size)
        self.train_split, self.val_split = train_split, val_split
        self.max_train_items, self.max_val_items = max_train_items, max_val_items
        self.seed, self.shuffle, self.num_workers = int(seed), bool(shuffle), int(num_workers)
        self.hard_negatives = hard_negatives
        self.train_dataset: ParallelQueryDataset | None = None
        self.val_dataset: ParallelQueryDataset | None = None

    def setup(self, stage: str | None = None) -> None:
        if not isinstance(self.data, ParallelRetrievalData):
            self.data = read_parallel_data(self.data)
        if self.train_dataset is None:
            train = self.data.split(self.train_split, self.max_train_items, self.seed)
            self.train_dataset = ParallelQueryDataset(train, seed=self.seed, hard_negatives=self.hard_negatives)
            if len(self.train_dataset) < self.batch_size:
                raise DataError(
                    f"split {self.train_split!r} has {len(self.train_dataset)} items, fewer than batch_size {self.batch_size}"
                )
        if self.val_split is not None and self.val_dataset is None:
            val = self.data.split(self.val_split, self.max_val_items, self.seed)
            self.val_dataset = ParallelQueryDataset(val, seed=self.seed, hard_negatives=self.hard_negatives)

    def set_epoch(self, epoch: int) -> None:
        """Called by the module at each epoch start: fresh (but seeded) language draws."""
        if self.train_dataset is not None:
            self.train_dataset.set_epoch(epoch)

    def _world(self) -> tuple[int, int]:
        trainer = getattr(self, "trainer", None)
        if trainer is None:
            return 1, 0
        return int(trainer.world_size), int(trainer.global_rank)

    def train_dataloader(self) -> DataLoader:
        world, rank = self._world()
        if world > 1:
            # explicit sampler: global order = the seeded permutation (or 0..n-1 without shuffle),
            # global batch t = items [t*B*world, (t+1)*B*world), dealt round-robin to the processes
            sampler = DistributedSampler(self.train_dataset, num_replicas=world, rank=rank,
                                         shuffle=self.shuffle, seed=self.seed, drop_last=True)
            sampler.set_epoch(self.train_dataset.epoch)
            return DataLoader(self.train_dataset, batch_size=self.batch_size, sampler=sampler, drop_last=True,
                              collate_fn=collate_parallel, num_workers=self.num_workers)
        gen = torch.Generator().manual_seed(self.seed)
        return DataLoader(
            self.train_dataset, batch_size=self.batch_size, shuffle=self.shuffle, generator=gen,
            drop_last=True, collate_fn=collate_parallel, num_workers=self.num_workers,
        )

    def val_dataloader(self) -> DataLoader | list:
        if self.val_dataset is None:
            return []
        return DataLoader(
            self.val_dataset, batch_size=self.batch_size, shuffle=False, drop_last=True,
            collate_fn=collate_parallel, num_workers=self.num_workers,
        )
