"""Batches of whole queries (padded + masked) for :class:`~lightning_modules.DELTRModule`.

Each split (a DataFrame or a path read by :func:`fairltr.io.read_ranking`) is padded once by
:func:`fairltr.data.to_batch`; a loader batch is ``RankingBatch.select(query positions)`` trimmed
to its longest query. Features are standardised with the training split's mean / std over real
(unmasked) candidates — the estimator's convention — and the statistics are kept
(``feature_mean``, ``feature_scale``) so new data can be scored the same way.
"""

from __future__ import annotations

import os
from typing import Sequence

import lightning.pytorch as pl
import pandas as pd
import torch
from torch.utils.data import DataLoader, Dataset

from fairltr.columns import ColumnNames, RankingColumns, resolve_columns
from fairltr.data import RankingBatch, to_batch
from fairltr.errors import ConfigError, DataError
from fairltr.io import read_ranking

__all__ = ["RankingDataModule", "QueryDataset", "SelectQueries"]

Source = pd.DataFrame | str | os.PathLike


class QueryDataset(Dataset):
    """Query positions 0..Q-1 of a padded batch (the loader's collate selects them)."""

    def __init__(self, batch: RankingBatch) -> None:
        self.batch = batch

    def __len__(self) -> int:
        return self.batch.n_queries

    def __getitem__(self, index: int) -> int:
        return index


class SelectQueries:
    """Collate: query positions -> ``batch.select(positions)`` cut to the longest selected query."""

    def __init__(self, batch: RankingBatch) -> None:
        self.batch = batch

    def __call__(self, positions: list[int]) -> RankingBatch:
        sub = self.batch.select(positions)
        n = max(int(sub.mask.sum(dim=1).max()), 1)
        return RankingBatch(
            sub.features[:, :n], sub.judgments[:, :n], sub.groups[:, :n], sub.mask[:, :n],
            sub.row_index[:, :n], sub.query_ids, sub.feature_names,
        )


class RankingDataModule(ColumnNames, pl.LightningDataModule):
    """Train / val / test / predict loaders over ranking tables.

    ``columns``: the column contract (default :data:`~fairltr.columns.DEFAULT_COLUMNS`).
    ``batch_size`` counts queries
    (``None`` = all queries in one batch: full-batch DELTR). ``colorblind=True`` drops the group
    column from the features. ``features=None`` takes every numeric column except query,
    judgment and item (the group column included, as in DELTR).
    """

    def __init__(
        self,
        train: Source,
        val: Source | None = None,
        test: Source | None = None,
        *,
        columns: RankingColumns | None = None,
        features: Sequence[str] | None = None,
        colorblind: bool = False,
        standardize: bool = True,
        batch_size: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        super().__init__()
        if batch_size is not None and batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1 query (or None for all), got {batch_size}")
        self.sources = {"train": train, "val": val, "test": test}
        self.columns = resolve_columns(columns).require(
            "group", "judgment", purpose="DELTR training")
        self.features = list(features) if features is not None else None
        self.colorblind, self.standardize = colorblind, standardize
        self.batch_size, self.shuffle, self.seed, self.dtype = batch_size, shuffle, seed, dtype
        self.batches: dict[str, RankingBatch] = {}
        self.feature_names: list[str] = []
        self.feature_mean: torch.Tensor | None = None
        self.feature_scale: torch.Tensor | None = None

    # ---- preparation ----------------------------------------------------------------------
    def _frame(self, src: Source) -> tuple[pd.DataFrame, str | None]:
        if isinstance(src, pd.DataFrame):
            return src, None
        return read_ranking(src, columns=self.columns), str(src)

    def _feature_list(self, df: pd.DataFrame) -> list[str]:
        if self.features is not None:
            feats = list(self.features)
        else:
            skip = set(self.columns.special)
            feats = [c for c in df.columns if c not in skip and pd.api.types.is_numeric_dtype(df[c])]
        if self.colorblind:
            feats = [f for f in feats if f != self.columns.group]
        if not feats:
            raise DataError("no feature columns left (colorblind drops the group column)")
        return feats

    def batch_of(self, src: Source) -> RankingBatch:
        """Pad (and standardise with the training statistics) any table with the module's columns."""
        df, where = self._frame(src)
        group = self.columns.group
        if group not in df.columns:
            raise DataError(f"group column {group!r} not found{' in ' + where if where else ''}; columns: {list(df.columns)}")
        b = to_batch(df, columns=self.columns, features=self.feature_names, dtype=self.dtype, source=where)
        if self.feature_mean is not None:
            x = (b.features - self.feature_mean) / self.feature_scale
            b.features = x.masked_fill(~b.mask.unsqueeze(-1), 0.0)
        return b

    def setup(self, stage: str | None = None) -> None:
        if "train" in self.batches:
            return
        train_df, _ = self._frame(self.sources["train"])
        self.feature_names = self._feature_list(train_df)
        self.feature_mean = self.feature_scale = None
        raw = self.batch_of(train_df)
        if self.standardize:
            real = raw.features[raw.mask]
            mean, std = real.mean(0), real.std(0, unbiased=False)
            self.feature_mean, self.feature_scale = mean, torch.where(std > 0, std, torch.ones_like(std))
        self.batches["train"] = self.batch_of(train_df)
        for name in ("val", "test"):
            if self.sources[name] is not None:
                self.batches[name] = self.batch_of(self.sources[name])

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    # ---- loaders --------------------------------------------------------------------------
    def _loader(self, name: str, shuffle: bool) -> DataLoader:
        batch = self.batches[name]
        size = self.batch_size or batch.n_queries
        gen = torch.Generator().manual_seed(self.seed)
        return DataLoader(QueryDataset(batch), batch_size=size, shuffle=shuffle, generator=gen,
                          collate_fn=SelectQueries(batch))

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", self.shuffle)

    def val_dataloader(self) -> DataLoader | list:
        return self._loader("val", False) if "val" in self.batches else []

    def test_dataloader(self) -> DataLoader | list:
        return self._loader("test", False) if "test" in self.batches else []

    def predict_dataloader(self) -> DataLoader:
        return self._loader("test" if "test" in self.batches else "train", False)
