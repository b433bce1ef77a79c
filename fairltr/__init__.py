"""fairltr: fair learning to rank — DELTR, Plackett-Luce policies (PLRank), FA*IR, LaKDA/MRC@k — with MLOps adapters.

The core imports torch, numpy, pandas and scipy only; MLflow, Lightning, Optuna and
transformers are imported by the adapters (``fairltr.tracking``, ``lightning_modules``,
``tuning``) when used.
"""

from fairltr.buckets import BucketedBatch, length_buckets, to_buckets
from fairltr.columns import DEFAULT_COLUMNS, RankingColumns, resolve_columns
from fairltr.data import RankingBatch, to_batch
from fairltr.deltr import DELTR, rank_frame
from fairltr.errors import ConfigError, DataError, FairltrError, NotFittedError
from fairltr.metrics import evaluate_ranking
from fairltr.plrank import PLRank
from fairltr.rankers import load_ranker

__version__ = "0.1.0"

__all__ = [
    "DELTR", "PLRank", "load_ranker", "RankingBatch", "to_batch", "BucketedBatch", "to_buckets", "length_buckets", "RankingColumns",
    "DEFAULT_COLUMNS", "resolve_columns", "rank_frame", "evaluate_ranking", "FairltrError", "DataError", "ConfigError",
    "NotFittedError", "__version__",
]
