"""Lightning adapters: DELTR and DPR/LaKDA modules with their data modules."""

from lightning_modules.biencoder import BiEncoderModule, pool
from lightning_modules.parallel_datamodule import ParallelQueryDataModule, ParallelQueryDataset, collate_parallel

__all__ = [
    "BiEncoderModule", "pool",
    "ParallelQueryDataModule", "ParallelQueryDataset", "collate_parallel",
]
