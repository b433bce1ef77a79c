"""fairltr: fair learning to rank — DELTR, FA*IR, LaKDA/MRC@k — with MLOps adapters.

The core imports torch, numpy, pandas and scipy only; MLflow, Lightning, Optuna and
transformers are imported by the adapters (``fairltr.tracking``, ``lightning_modules``,
``tuning``) when used. The exports below are lazy (:mod:`fairltr.lazy`): ``import fairltr``
loads no torch until ``fairltr.DELTR`` (or another name that needs it) is used.
"""

from fairltr import startup as _startup

if _startup.is_console_script():  # Ctrl-C while the CLI imports: one line, exit 130
    _startup.guard_startup()

from fairltr.columns import DEFAULT_COLUMNS, RankingColumns, resolve_columns  # noqa: E402
from fairltr.errors import ConfigError, DataError, FairltrError, NotFittedError  # noqa: E402
from fairltr.lazy import lazy_exports, moved_modules  # noqa: E402

moved_modules(__name__, {"cli.registry_commands": "cli.model_registry_commands"})  # an old module name

__version__ = "0.1.0"

__all__ = [
    "DELTR", "PLRank", "load_ranker", "RankingBatch", "to_batch", "BucketedBatch", "to_buckets", "length_buckets", "RankingColumns",
    "DEFAULT_COLUMNS", "resolve_columns", "rank_frame", "evaluate_ranking", "FairltrError", "DataError", "ConfigError",
    "NotFittedError", "__version__",
    "Gate", "GateResult", "Bound", "GatePreset", "GATE_PRESETS", "parse_gate", "check_gates", "expand_preset",
    "gate_cutoffs",
]

lazy_exports(__name__, {
    "BucketedBatch": "fairltr.buckets", "length_buckets": "fairltr.buckets", "to_buckets": "fairltr.buckets",
    "RankingBatch": "fairltr.data", "to_batch": "fairltr.data",
    "DELTR": "fairltr.deltr", "rank_frame": "fairltr.linear_ranker", "PLRank": "fairltr.plrank",
    "load_ranker": "fairltr.rankers",
    "evaluate_ranking": "fairltr.metrics",
    **dict.fromkeys(["Gate", "GateResult", "Bound", "GatePreset", "GATE_PRESETS", "parse_gate", "check_gates",
                     "expand_preset", "gate_cutoffs"], "fairltr.gates"),  # the one gate/constraint grammar
})
