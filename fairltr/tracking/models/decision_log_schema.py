"""The record schema of the decision log (:mod:`fairltr.tracking.models.decision_log`, whose
docstring describes every column): the column names in order (:data:`COLUMNS`) and their Arrow
types (:func:`record_schema`). The log and its stores (Parquet shards) read it from here, so no
store reaches back into the log that opens it."""

from __future__ import annotations

__all__ = ["COLUMNS", "record_schema"]

COLUMNS = ("request_id", "time", "model_name", "model_version", "model_digest", "policy", "policy_method",
           "policy_p", "policy_alpha", "policy_adjust", "policy_k", "policy_target", "query_id", "item_id", "row",
           "score", "rank", "fair_feasible", "groups")


def _schema():
    import pyarrow as pa

    return pa.schema([
        ("request_id", pa.string()), ("time", pa.timestamp("us", tz="UTC")), ("model_name", pa.string()),
        ("model_version", pa.string()), ("model_digest", pa.string()), ("policy", pa.string()),
        ("policy_method", pa.string()), ("policy_p", pa.float64()), ("policy_alpha", pa.float64()),
        ("policy_adjust", pa.bool_()), ("policy_k", pa.int64()), ("policy_target", pa.string()),
        ("query_id", pa.string()), ("item_id", pa.string()), ("row", pa.int64()), ("score", pa.float64()),
        ("rank", pa.int64()), ("fair_feasible", pa.bool_()), ("groups", pa.string()),
    ])


def record_schema():
    """The Arrow schema of the records (:data:`COLUMNS` with their types, module docstring)."""
    global _SCHEMA
    if _SCHEMA is None:
        _SCHEMA = _schema()
    return _SCHEMA


_SCHEMA = None
