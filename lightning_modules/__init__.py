"""Lightning adapters: the DELTR linear ranker, the Plackett-Luce policy (PLPolicyModule) and the DPR/LaKDA
bi-encoder with their data modules.

Both modules take their loss from the :mod:`fairltr.losses` registry by name and read its
declared hyper-parameters (``gamma``, ``alpha``).
"""

from lightning_modules.biencoder import BiEncoderModule, pool
from lightning_modules.biencoder_training import fit_biencoder
from lightning_modules.loggers import mlflow_logger
from lightning_modules.deltr_module import OPTIMIZERS, DELTRModule
from lightning_modules.pl_policy_module import PLPolicyModule
from lightning_modules.parallel_datamodule import ParallelQueryDataModule, ParallelQueryDataset, collate_parallel
from lightning_modules.ranking_datamodule import QueryDataset, RankingDataModule, SelectQueries

__all__ = [
    "DELTRModule", "OPTIMIZERS", "PLPolicyModule", "RankingDataModule", "QueryDataset", "SelectQueries",
    "BiEncoderModule", "pool", "fit_biencoder", "mlflow_logger",
    "ParallelQueryDataModule", "ParallelQueryDataset", "collate_parallel",
]

# Lightning DELTR engine: in-memory and streamed (Parquet) training, DDP batch dealing
from lightning_modules.deltr_training import DELTRTrainingModule, train_deltr_lightning
from lightning_modules.parquet_datamodule import ParquetRankingDataModule, StreamedQueryBatches
from lightning_modules.query_batches import QueryBatchSampler, ShardedRankingDataModule, empty_batch

__all__ += [
    "train_deltr_lightning", "DELTRTrainingModule", "ParquetRankingDataModule", "StreamedQueryBatches",
    "QueryBatchSampler", "ShardedRankingDataModule", "empty_batch",
]
