"""The decision log of a served ranker: one record per served candidate, appended before the
response is sent, read back by :func:`read_decision_log` (and ``fairltr monitor --decision-log``).

Where (a URI, recorded with the model by ``--decision-log`` and overridden where it is served by
the environment variable ``FAIRLTR_DECISION_LOG``):

* a folder (``/var/log/fairltr/decisions`` or ``file:///...``): Parquet shards, one per served
  request, :mod:`fairltr.tracking.models.decision_log_parquet`;
* ``postgresql://user@host:5432/db?table=fairltr_decisions`` (or ``postgresql+psycopg2://``): one
  transaction per served request, :mod:`fairltr.tracking.models.decision_log_postgres` (the
  ``[postgres]`` extra; the password belongs in ``PGPASSWORD`` or ``~/.pgpass``, never in a
  recorded URI).

Schema (:data:`COLUMNS` and :func:`record_schema`, kept in
:mod:`fairltr.tracking.models.decision_log_schema` for every store and re-exported here; the
columns of :func:`read_decision_log` in this order, then one column per group attribute expanded
from ``groups``):

==============  ====================  ===============================================================
request_id      string                one per served request (uuid4 hex); the response's column too
time            timestamp (UTC, us)   when the model ranked the request (one value per request)
model_name      string                registered model name; "" when served from a run / logged-model URI
model_version   string                registered version; "" likewise
model_digest    string                the recorded ``sha256:`` digest the loader verified
policy          string                the applied policy, :meth:`~fairltr.fair.policy.ServingPolicy.describe`
policy_method   string                none, fair, detgreedy, detcons, detrelaxed, detconstsort
policy_p        double (null)         FA*IR's p
policy_alpha    double                FA*IR's alpha
policy_adjust   bool                  FA*IR's multiple-testing adjustment
policy_k        int64 (null = all)    re-ranked prefix
policy_target   string (null)         Geyik's target mix
query_id        string                the query id as text
item_id         string (null)         the item id as text; null when the model names no item column
row             int64                 the candidate's row in the request (0-based)
score           double                the model's score
rank            int64                 the served rank (1 = top), after the policy
fair_feasible   bool                  whether the policy's constraint was met for the query
groups          string (JSON object)  ``{"race": "b", "sex": 1}``: every group attribute of the model
==============  ====================  ===============================================================

Guarantee: ``append`` returns only once the request's records are durable (fsynced shard renamed
into place and the folder fsynced; a committed transaction), and the response is sent after it:
an acknowledged ranking is logged; a server killed mid-request loses at most that request (its
client got no response). A failed append fails the request (HTTP 500), never drops a record.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import numpy as np
import pandas as pd

from fairltr.errors import ConfigError, DataError
from fairltr.tracking.models.decision_log_schema import COLUMNS, record_schema  # noqa: F401 (re-exported)

__all__ = ["COLUMNS", "ENV_VAR", "DecisionLog", "DecisionContext", "decision_records", "record_schema", "open_decision_log",
           "read_decision_log", "check_recordable_uri", "resolve_decision_log", "is_postgres_uri"]

ENV_VAR = "FAIRLTR_DECISION_LOG"


class DecisionLog(Protocol):
    """Where served decisions go: ``append`` is durable on return (module docstring)."""

    uri: str  # for messages: credentials redacted

    def append(self, records) -> None: ...  # a pyarrow.Table of decision_records

    def read(self) -> pd.DataFrame: ...


@dataclass(frozen=True)
class DecisionContext:
    """What the log records about the model serving a request."""

    model_name: str = ""
    model_version: str = ""
    model_digest: str = ""
    query: str = "query_id"
    item: str | None = None
    groups: tuple[str, ...] = ()


def is_postgres_uri(uri: str) -> bool:
    return str(uri).startswith(("postgresql://", "postgresql+psycopg2://", "postgres://"))


def _text(values: pd.Series):
    """Ids as an Arrow string array: integers (also whole floats) without a trailing .0, missing as null."""
    import pyarrow as pa

    if pd.api.types.is_float_dtype(values) and bool(np.all(np.isfinite(values))) and bool(np.all(values == np.round(values))):
        values = values.astype(np.int64)
    if pd.api.types.is_integer_dtype(values) or pd.api.types.is_string_dtype(values) or pd.api.types.is_bool_dtype(values):
        return pa.array(values, from_pandas=True).cast(pa.string())
    return pa.array([None if v is None or (isinstance(v, float) and np.isnan(v)) else str(v) for v in values.tolist()],
                    type=pa.string())


def _json_value(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return None if np.isnan(f) else int(f) if f.is_integer() else f
    if isinstance(v, np.bool_):
        return bool(v)
    return v if v is None or isinstance(v, (str, int, bool)) else str(v)


def _groups_json(model_input: pd.DataFrame, groups: Sequence[str]) -> list[str]:
    """Each row's ``{"attribute": value, ...}`` (attributes sorted), from each column's distinct values."""
    n = len(model_input)
    if not groups:
        return ["{}"] * n
    parts = []
    for g in sorted(groups):
        codes, uniques = pd.factorize(model_input[g], use_na_sentinel=False)
        frags = np.array([f"{json.dumps(g)}: {json.dumps(_json_value(u))}" for u in uniques], dtype=object)
        parts.append(frags[codes])
    return ["{" + ", ".join(row) + "}" for row in zip(*parts)]


def decision_records(model_input: pd.DataFrame, served: pd.DataFrame, policy: Any, ctx: DecisionContext,
                     request_id: str, time: pd.Timestamp):
    """The records of one served request as an Arrow table of :func:`record_schema`: ``served`` is
    the ranking in input row order (``score``, ``rank``, optional ``fair_feasible``), ``policy``
    the applied :class:`~fairltr.fair.policy.ServingPolicy` (columns built whole, no per-row objects
    but the groups' JSON text)."""
    import pyarrow as pa

    n = len(model_input)

    def same(value, kind):
        return pa.array([value] * n, type=kind)

    groups = [g for g in ctx.groups if g in model_input.columns]
    item = (_text(model_input[ctx.item]) if ctx.item and ctx.item in model_input.columns
            else pa.nulls(n, type=pa.string()))
    feasible = (served["fair_feasible"].to_numpy(dtype=bool) if "fair_feasible" in served.columns
                else np.ones(n, dtype=bool))
    micros = pd.Timestamp(time).tz_convert("UTC").value // 1000  # .value is nanoseconds
    columns = [
        same(request_id, pa.string()), pa.array(np.full(n, micros, dtype=np.int64), type=pa.timestamp("us", tz="UTC")),
        same(ctx.model_name, pa.string()), same(ctx.model_version, pa.string()), same(ctx.model_digest, pa.string()),
        same(policy.describe(), pa.string()), same(policy.method, pa.string()),
        same(None if policy.p is None or isinstance(policy.p, str) else float(policy.p), pa.float64()),  # shares: in the text
        same(float(policy.alpha), pa.float64()),
        same(bool(policy.adjust), pa.bool_()), same(None if policy.k is None else int(policy.k), pa.int64()),
        same(policy.target, pa.string()), _text(model_input[ctx.query]), item, pa.array(np.arange(n, dtype=np.int64)),
        pa.array(served["score"].to_numpy(dtype=np.float64)), pa.array(served["rank"].to_numpy(dtype=np.int64)),
        pa.array(feasible), pa.array(_groups_json(model_input, groups), type=pa.string()),
    ]
    return pa.Table.from_arrays(columns, schema=record_schema())


def check_recordable_uri(uri: str | None) -> str | None:
    """``--decision-log`` as recorded with a model: None/"" = no log; a Postgres URI without a
    password (it would be stored in the artifact store); a folder path made absolute."""
    if uri is None or not str(uri).strip():
        return None
    text = str(uri).strip()
    if is_postgres_uri(text):
        from urllib.parse import urlsplit

        if urlsplit(text).password is not None:
            raise ConfigError("--decision-log: a recorded PostgreSQL URI may not hold a password (it would be "
                              "stored with the model); put it in PGPASSWORD or ~/.pgpass")
        return text
    if "://" in text and not text.startswith("file://"):
        raise ConfigError(f"--decision-log must be a folder (Parquet shards) or a postgresql:// URI; got {text!r}")
    return os.path.abspath(text[len("file://"):] if text.startswith("file://") else text)


def resolve_decision_log(recorded: str | None) -> tuple[str | None, str]:
    """The log in use where the model is served and where that came from: ``FAIRLTR_DECISION_LOG``
    when set (it overrides the recorded one; it cannot switch a log off), else the recorded URI."""
    env = os.environ.get(ENV_VAR)
    if env is not None and env.strip():
        if env.strip().lower() in ("none", "off", "false", "0"):
            raise ConfigError(f"{ENV_VAR}={env.strip()!r}: the variable names where decisions go (a folder or a "
                              "postgresql:// URI); a decision log cannot be switched off where the model is served")
        text = env.strip()
        if is_postgres_uri(text):
            return text, ENV_VAR
        return os.path.abspath(text[len("file://"):] if text.startswith("file://") else text), ENV_VAR
    return (recorded or None), "recorded with the model"


def open_decision_log(uri: str) -> DecisionLog:
    """The log at ``uri``, checked usable now (a folder created and written; a database reached and
    its table created): :class:`ConfigError` in one line otherwise."""
    if is_postgres_uri(uri):
        from fairltr.tracking.models.decision_log_postgres import PostgresDecisionLog

        return PostgresDecisionLog(uri)
    from fairltr.tracking.models.decision_log_parquet import SYNC_ENV, ParquetDecisionLog

    return ParquetDecisionLog(uri, sync=os.environ.get(SYNC_ENV, "full").strip().lower() or "full")


def read_decision_log(uri: str, groups: Sequence[str] | None = None) -> pd.DataFrame:
    """Every complete record of the log at ``uri`` (:data:`COLUMNS`, sorted by time, request_id,
    row), with one column per group attribute expanded from ``groups`` (all of them, or those
    named). ``attrs["incomplete_shards"]``: shards a killed writer left unfinished (skipped; a
    Parquet folder only). :class:`DataError` for an empty or unreadable log."""
    if is_postgres_uri(uri):
        from fairltr.tracking.models.decision_log_postgres import read_postgres_log

        frame, skipped = read_postgres_log(uri), []
    else:
        from fairltr.tracking.models.decision_log_parquet import read_parquet_log

        frame, skipped = read_parquet_log(uri)
    frame = frame.sort_values(["time", "request_id", "row"], kind="stable").reset_index(drop=True)
    expanded = _expand_groups(frame["groups"], groups)
    clash = [g for g in expanded.columns if g in frame.columns]
    if clash:
        raise DataError(f"decision log {uri}: group attribute(s) {clash} clash with the log's own columns")
    out = pd.concat([frame, expanded], axis=1)
    out.attrs["incomplete_shards"] = skipped
    if skipped:
        print(f"fairltr: decision log {uri}: skipped {len(skipped)} unfinished shard(s) left by a killed writer",
              file=sys.stderr)
    return out


def _expand_groups(packed: pd.Series, wanted: Sequence[str] | None) -> pd.DataFrame:
    rows = [json.loads(t) if t else {} for t in packed.tolist()]
    names = list(dict.fromkeys(k for r in rows for k in r)) if wanted is None else list(wanted)
    data = {}
    for name in names:
        values = [r.get(name) for r in rows]
        data[name] = pd.Series(values, dtype=object).infer_objects()
    return pd.DataFrame(data, index=packed.index)
