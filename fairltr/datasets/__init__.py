"""Real tables for audits and examples, read from local files (no download at import or test time)."""

from fairltr.datasets.compas import (
    COMPAS_COLUMNS, COMPAS_FEATURES, COMPAS_WHEEL, compas_ranking, fetch_compas_wheel, read_compas, split_compas,
    write_compas_task,
)

__all__ = ["COMPAS_COLUMNS", "COMPAS_FEATURES", "COMPAS_WHEEL", "compas_ranking", "fetch_compas_wheel", "read_compas",
           "split_compas", "write_compas_task"]
