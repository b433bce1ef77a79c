"""The "fairltr ranker" pyfunc class as a loaded model is: :class:`FairltrRanker` over a DELTR,
PLRank or LambdaMART model, its serving-time policy, sampling and provenance (the contract is in
:mod:`fairltr.tracking.models.pyfunc`, which logs models and re-exports every name here).

This is what the loaders build (:mod:`~fairltr.tracking.models.verified_loader` where MLflow loads
a model, :mod:`~fairltr.tracking.models.verify` in fairltr's process): it reads the weights with
fairltr's validating loaders and knows nothing of logging, so no loader reaches the logging code.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import mlflow.pyfunc

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError, DataError
from fairltr.fair.policy import (NO_POLICY, OVERRIDE_FIELDS, ServingPolicy, apply_policy, overrides_text, parse_overrides,
                                 parse_policy, policy_from_params)
from fairltr.plugins.rankers import Ranker
from fairltr.rankers import declaration_of, load_ranker_files
from fairltr.tracking.models.ranks import aligned_ranks
from fairltr.tracking.models.signature_types import check_identifier_columns

__all__ = ["FairltrRanker", "load_ranker_artifacts", "predict_frame", "ranker_from_config", "PROVENANCE_COLUMNS",
           "SAMPLE_COLUMNS", "Ranker"]

PROVENANCE_COLUMNS = ("policy", "model_name", "model_version", "model_digest", "request_id")
"""The columns a served ranker adds to every output (the response's ``predictions`` records)."""
SAMPLE_COLUMNS = ("sampled", "sample_seed", "sample_request_id")
"""The columns a sampling PLRank pyfunc adds: the ranking was sampled, with which seed, for which request id."""

def load_ranker_artifacts(weights: str | Path, booster: str | Path | None = None) -> Ranker:
    """The ranker of a logged model's artifacts with fairltr's validating loaders: the class the
    weights file's format marker names reads ``weights`` and its companion file ``booster`` (a
    LambdaMART model's LightGBM text file, the artifact key every logged model has used) with
    :meth:`~fairltr.plugins.Ranker.load_saved` (:func:`fairltr.rankers.load_ranker_files`)."""
    return load_ranker_files([weights] if booster is None else [weights, booster])


def predict_frame(model: Ranker, df: pd.DataFrame, query: str | None = None) -> pd.DataFrame:
    """``score`` and per-query ``rank`` of every row of ``df``, aligned with its rows."""
    q = query or model.query_
    if q not in df.columns:
        raise DataError(f"query column {q!r} not in the input; columns: {list(df.columns)}")
    scores = model.predict(df)
    return pd.DataFrame({"score": scores.astype(np.float64), "rank": aligned_ranks(df, scores, q)}, index=df.index)


def _bad_request(exc: Exception):
    """A one-line MLflow error the scoring server answers with HTTP 400 (no traceback)."""
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

    return MlflowException(" ".join(str(exc).split()), error_code=INVALID_PARAMETER_VALUE)


def _given(params: dict[str, Any] | None) -> dict[str, Any]:
    """The request params that carry a value (MLflow fills absent ones with the schema default)."""
    return {k: v for k, v in (params or {}).items() if v is not None}


class FairltrRanker(mlflow.pyfunc.PythonModel):
    """Scores and per-query ranks of a ranker (DELTR or PLRank from its safetensors artifact, a
    LambdaMART model from its JSON + LightGBM text artifacts), with an optional serving-time
    re-ranking policy (module docstring).

    ``model_config``: ``query`` (overrides the query-id column name seen at training), ``group``
    (the group column a re-ranker reads), ``serve_rerank`` (the recorded policy's spec),
    ``serve_overrides`` (the request params allowed, :func:`~fairltr.fair.policy.parse_overrides`),
    ``input_types`` (each input column's type in the training file: an integer query id or group
    column must arrive as integers, :func:`~fairltr.tracking.models.signature_types.check_identifier_columns`).
    """

    provenance = None  # DecisionContext once served (attach); None in-process: no provenance columns
    decision_log = None

    @classmethod
    def from_model(cls, model: Ranker, query: str | None = None, policy: ServingPolicy | str | None = None,
                   group: str | None = None, input_types: dict[str, str] | None = None,
                   overrides: str | None = None, sample: bool = False, salt: str = "") -> "FairltrRanker":
        """The pyfunc of an already loaded model (in-process use; no MLflow context); ``sample``:
        serve Plackett-Luce draws seeded per request id (module docstring; a PLRank model only)."""
        self = cls()
        self.model = model
        self.query = query or model.query_
        self.group = group or model.columns_.group
        self.policy = policy if isinstance(policy, ServingPolicy) else parse_policy(policy)
        self.overrides = parse_overrides(overrides, self.policy)
        self.input_types = dict(input_types or {})
        self.sample, self.salt = _check_sampling(model, bool(sample), self.policy), str(salt or "")
        return self

    def load_context(self, context) -> None:
        """The models-from-code form (models logged before the verifying loader): not verified here."""
        self.model = load_ranker_artifacts(context.artifacts["weights"], context.artifacts.get("booster"))
        config = getattr(context, "model_config", None) or {}
        self.query = config.get("query") or self.model.query_
        self.group = config.get("group") or self.model.columns_.group
        self.policy = parse_policy(config.get("serve_rerank"))
        self.overrides = parse_overrides(config.get("serve_overrides"), self.policy)
        self.input_types = dict(config.get("input_types") or {})
        self.sample = _check_sampling(self.model, bool(config.get("serve_sample")), self.policy)
        self.salt = str(config.get("serve_sample_salt") or "")
        sys.stderr.write("fairltr: this model was logged before load-time verification (models from code): "
                         "its digest was not checked when it loaded\n")

    @property
    def overrides_text(self) -> str:
        """The allowed request params as ``--serve-overrides`` reads them (``none``, ``all``, ``p,k``)."""
        return overrides_text(getattr(self, "overrides", frozenset(OVERRIDE_FIELDS)))

    def attach(self, provenance, decision_log=None) -> None:
        """Serve with provenance columns (a :class:`~fairltr.tracking.models.decision_log.DecisionContext`)
        and, when given, append every request's records to ``decision_log`` before returning."""
        self.provenance = provenance
        self.decision_log = decision_log

    def predict(self, context, model_input: pd.DataFrame, params: dict[str, Any] | None = None) -> pd.DataFrame:
        if not isinstance(model_input, pd.DataFrame):
            model_input = pd.DataFrame(model_input)
        recorded = getattr(self, "policy", NO_POLICY)
        try:
            check_identifier_columns(model_input, getattr(self, "input_types", {}), (self.query, getattr(self, "group", None)))
            requested = _given(params)
            request_id = requested.pop("request_id", None)
            policy = policy_from_params(recorded, requested, getattr(self, "overrides", frozenset(OVERRIDE_FIELDS)))
            if getattr(self, "sample", False):
                out = self._sampled(model_input, policy, request_id)
                return out if self.provenance is None else self._served(model_input, out, policy)
            if request_id is not None:
                raise ConfigError("request_id seeds a sampled ranking; this model serves its deterministic ranking")
            plain = not recorded.active and requested.get("rerank", "none") == "none" and set(requested) <= {"rerank"}
            if plain:  # no policy anywhere: today's output (score, rank)
                out = predict_frame(self.model, model_input, self.query)
            else:
                if self.query not in model_input.columns:
                    raise DataError(f"query column {self.query!r} not in the input; columns: {list(model_input.columns)}")
                scores = self.model.predict(model_input)
                out = apply_policy(model_input, scores, policy,
                                   RankingColumns(query=self.query, group=getattr(self, "group", None), judgment=None))
        except (ConfigError, DataError) as exc:
            raise _bad_request(exc) from None
        return out if self.provenance is None else self._served(model_input, out, policy)

    def _sampled(self, model_input: pd.DataFrame, policy: ServingPolicy, request_id: Any) -> pd.DataFrame:
        """``score``, the sampled 1-based ``rank`` per query and :data:`SAMPLE_COLUMNS` (seed of each
        row's query = :func:`~fairltr.losses.pl_serving.request_seed` of (salt, request id, query id))."""
        from fairltr.losses.pl_serving import request_seed, sampled_ranks

        if policy.active:
            raise ConfigError(f"this model serves sampled Plackett-Luce rankings; re-ranking ({policy.describe()}) "
                              "is not applied to them: drop the rerank params")
        if self.query not in model_input.columns:
            raise DataError(f"query column {self.query!r} not in the input; columns: {list(model_input.columns)}")
        rid = uuid.uuid4().hex if request_id is None else str(request_id)
        scores = np.asarray(self.model.predict(model_input), dtype=np.float64)
        qids = model_input[self.query]
        ranks = sampled_ranks(scores, qids, rid, salt=self.salt)
        seeds = {q: str(request_seed(rid, q, self.salt)) for q in pd.unique(qids)}
        return pd.DataFrame({"score": scores, "rank": np.asarray(ranks, dtype=np.int64), "sampled": True,
                             "sample_seed": qids.map(seeds).astype(object).to_numpy(),
                             "sample_request_id": np.full(len(scores), rid, dtype=object)}, index=model_input.index)

    def _served(self, model_input: pd.DataFrame, out: pd.DataFrame, policy: ServingPolicy) -> pd.DataFrame:
        """``out`` with :data:`PROVENANCE_COLUMNS`, after the request's records are durable in the
        decision log (a failed append fails the request: nothing is served unlogged)."""
        ctx = self.provenance
        request_id = str(out["sample_request_id"].iat[0]) if "sample_request_id" in out and len(out) else uuid.uuid4().hex
        if self.decision_log is not None:
            from fairltr.tracking.models.decision_log import decision_records

            records = decision_records(model_input, out, policy, ctx, request_id, pd.Timestamp.now(tz="UTC"))
            try:
                self.decision_log.append(records)
            except Exception as exc:
                raise _server_error(f"decision log {self.decision_log.uri} refused the request's records "
                                    f"({type(exc).__name__}: {exc}); the ranking was not served") from None
        values = (policy.describe(), ctx.model_name, ctx.model_version, ctx.model_digest, request_id)
        extra = pd.DataFrame({c: np.full(len(out), v, dtype=object) for c, v in zip(PROVENANCE_COLUMNS, values)},
                             index=out.index)
        return pd.concat([out, extra], axis=1)  # a third of the time of DataFrame.assign with text scalars


def _check_sampling(model: Ranker, sample: bool, policy: ServingPolicy) -> bool:
    """``sample``, refused (ConfigError) for a model that is no Plackett-Luce policy or with a re-ranking policy."""
    if sample and not declaration_of(model).stochastic:
        raise ConfigError(f"--serve-sample serves draws of a Plackett-Luce policy: a PLRank model, not "
                          f"{type(model).__name__}")
    if sample and policy.active:
        raise ConfigError(f"--serve-sample and --serve-rerank {policy.describe()!r} exclude each other: a sampled "
                          "ranking is served as drawn")
    return sample


def _server_error(text: str):
    """A one-line MLflow error the scoring server answers with HTTP 500."""
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import INTERNAL_ERROR

    return MlflowException(" ".join(text.split())[:500], error_code=INTERNAL_ERROR)


def _inside(root: Path, rel: str | None) -> Path | None:
    """``root / rel``, refused when it leaves the model folder."""
    if not rel:
        return None
    path = (root / rel).resolve()
    if root.resolve() not in path.parents:
        raise DataError(f"model file {rel!r} lies outside the model folder")
    return path


def ranker_from_config(root: Path, config: dict[str, Any]) -> FairltrRanker:
    """The ranker of a loader-form model folder ``root`` (its MLmodel ``config``: the weight file
    names and the serving settings), read with fairltr's validating loaders."""
    weights = _inside(root, config.get("weights"))
    if weights is None:
        raise DataError(f"{root}: the model config names no weights file")
    files = config.get("files")  # a model of several files: all of them (else weights and booster)
    if files is not None and (not isinstance(files, list) or not files or files[0] != config.get("weights")):
        raise DataError(f"{root}: the model config's files {files!r} do not start with its weights file")
    paths = [_inside(root, f) for f in files or [config.get("weights"), config.get("booster")]]
    # the config's ranker label ("model"; LambdaMART models have always recorded it) picks the loader of
    # a file whose format marker cannot be read, so that its message names the right format
    model = load_ranker_files([p for p in paths if p is not None], label=config.get("model"))
    return FairltrRanker.from_model(model, config.get("query"), policy=config.get("serve_rerank"),
                                    group=config.get("group"), input_types=config.get("input_types"),
                                    overrides=config.get("serve_overrides"), sample=bool(config.get("serve_sample")),
                                    salt=config.get("serve_sample_salt") or "")
