"""The "fairltr ranker" MLflow pyfunc: a DELTR, PLRank or LambdaMART model behind ``mlflow.pyfunc``.

A PLRank model is a stochastic Plackett-Luce policy; its pyfunc is deterministic (unless logged with
``serve_sample``, below): it returns the
policy's mean scores and the ranking by decreasing score (the policy's most probable ranking),
never a sampled ranking, so that a registered version's outputs are reproducible.

* weights: the model's own ``.safetensors`` file written by :meth:`fairltr.DELTR.save`, logged as
  a model artifact (no pickle of weights or of the model object); a LambdaMART model logs its
  ``lambdamart.json`` (artifact ``weights``) and LightGBM's text model file ``lambdamart.txt``
  (artifact ``booster``, :meth:`fairltr.gbdt.LambdaMART.save`);
* code: the loader-module form (:mod:`fairltr.tracking.models.loader_form`): MLmodel names the
  installed fairltr's :mod:`~fairltr.tracking.models.verified_loader`, which checks the folder's
  digest before it reads the weights and never imports the staged package; the ``fairltr``
  package is staged under ``code/`` (as a tree and as a wheel that non-local env managers install,
  fairltr not being on PyPI); third-party requirements are pinned explicitly (no 19 s inference).
  Models logged before that form ("models from code": ``ranker_code.py`` + ``code/``) still load
  through :meth:`FairltrRanker.load_context`, unverified at load;
* integrity: the SHA-256 digest of the logged model folder is recorded in the tracking store
  (tag ``fairltr.digest`` on the logged model and the registered version,
  :mod:`fairltr.tracking.models.verify`); promotion and ``fairltr evaluate-model`` check it and build
  the ranker with :meth:`FairltrRanker.from_model` in their own process, never running stored code;
* contract: input = DataFrame with the query-id column and the model's feature columns (extra
  columns are ignored); output = DataFrame ``score`` (float) and ``rank`` (1-based, per query,
  by decreasing score, ties in input order), same index and row order as the input.
* serving-time post-processing (:mod:`fairltr.fair.policy`): a policy recorded at logging time
  (``serve_rerank`` in the model config, e.g. ``fair:p=0.3,alpha=0.1``; inside the digest like
  the weights) and/or the request's ``params`` (``rerank``, ``p``, ``alpha``, ``adjust``, ``k``,
  ``target``) re-rank each query, as far as the recorded ``serve_overrides`` allow (default: none
  once a policy is recorded); the output then carries the query id (and item id), ``score``,
  the re-ranked ``rank`` and ``fair_feasible`` (per query), still in input row order. The
  rankings are deterministic: the model's scores, then the re-ranker. A bad request (unknown
  ``rerank``, an override the model does not allow, a missing group column, bad values) is an
  ``INVALID_PARAMETER_VALUE`` error with one line, which ``mlflow models serve`` answers with HTTP 400;
* sampled serving (``serve_sample`` in the model config, a PLRank model logged with
  ``--serve-sample``): each request's ranking of each query is a draw of the Plackett-Luce policy,
  seeded by the request id (param ``request_id``; a fresh one when absent), the query id and the
  model's recorded ``serve_sample_salt`` (:func:`fairltr.losses.pl_serving.sampled_ranks`), so a
  replay of a request id returns the same ranking; the output adds :data:`SAMPLE_COLUMNS`
  (``sampled`` True, the query's ``sample_seed`` as decimal text, the ``sample_request_id``).
  Re-ranking requests are refused on such a model. Models without the key serve as before;
* served (loaded by the verifying loader): every output also carries :data:`PROVENANCE_COLUMNS`
  (the applied policy, model name, version and digest, a request id), and each request's records
  are appended to the decision log, when one is in use, before the output is returned.
* layout: the model class (what the loaders build) lives in :mod:`fairltr.tracking.models.ranker_model`
  and the staging of the package in :mod:`~fairltr.tracking.models.loader_form`; this module logs
  models and re-exports those names, so every path a logged model or a caller names still imports.
"""

from __future__ import annotations

import importlib.metadata as md
import tempfile
import uuid
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairltr.fair.policy import ServingPolicy, overrides_text, parse_overrides, parse_policy
from fairltr.plugins.rankers import RankerDeclaration
from fairltr.rankers import declaration_of
from fairltr.tracking.runs.config import registry_prints_follow_log_level
from fairltr.tracking.models.loader_form import stage_package
from fairltr.tracking.models.ranker_model import (  # noqa: F401 (re-exported: the paths logged models and callers name)
    PROVENANCE_COLUMNS, SAMPLE_COLUMNS, FairltrRanker, Ranker, _check_sampling, load_ranker_artifacts, predict_frame,
    ranker_from_config,
)
from fairltr.tracking.models.signature_types import any_typed_signature, training_types

__all__ = ["FairltrRanker", "log_ranker_model", "ranker_pip_requirements", "predict_frame", "stage_package",
           "load_ranker_artifacts", "ranker_from_config", "MODEL_CODE", "PROVENANCE_COLUMNS", "SAMPLE_COLUMNS"]

MODEL_CODE = Path(__file__).with_name("ranker_code.py")
_REQUIREMENTS = ("torch", "numpy", "pandas", "scipy", "safetensors", "mlflow")


def ranker_pip_requirements(extra: tuple[str, ...] = ()) -> list[str]:
    """Exact pins of the ranker's runtime dependencies, read from the installed versions
    (``extra``: e.g. ``("lightgbm",)`` for a LambdaMART model)."""
    return [f"{name}=={md.version(name).split('+')[0]}" for name in (*_REQUIREMENTS, *extra)]




def _default_example(model: Ranker, n: int = 3) -> pd.DataFrame:
    cols = {model.query_: np.zeros(n, dtype=np.int64)}
    cols.update({f: np.zeros(n, dtype=np.float64) for f in model.feature_names_})
    return pd.DataFrame(cols)


def _with_group(example: pd.DataFrame, group: str | None, text: bool = False) -> pd.DataFrame:
    """``example`` with a group column (alternating 0/1, or two text categories) when it has none:
    what a re-ranking policy reads."""
    if group is None or group in example.columns:
        return example
    values = np.arange(len(example), dtype=np.int64) % 2
    return example.assign(**{group: np.where(values == 1, "b", "a").astype(object) if text else values})


def _group_type(example: pd.DataFrame | None, group: str | None) -> str:
    """The MLflow type of the group column as the training file had it: ``string`` for text
    categories, ``long`` for integer ones (and when the example lacks the column)."""
    from fairltr.data import is_string_categories

    if example is None or group is None or group not in example.columns:
        return "long"
    return "string" if is_string_categories(example[group]) else "long"


def _serving_signature(signature, optional: tuple[str, ...], columns: list[str], shares: bool = False,
                       sample: bool = False):
    """The inputs ``columns`` (and the ``optional`` ones not among them: the group attributes and
    the item column, which a re-ranker and the decision log read) declared Any
    (:func:`~fairltr.tracking.models.signature_types.any_typed_signature`: the model checks them
    against the training file's types), ``signature``'s outputs, and the serving params. Every
    param defaults to None ("the recorded policy's value"): MLflow fills absent params with their
    defaults, and a recorded value there could not be told from a requested one. ``shares``: the
    recorded policy is multinomial FA*IR, whose ``p`` is a share list, so ``p`` is a string
    (``"0.3"`` still asks for binomial FA*IR); otherwise a double, as before. ``sample``: the
    model samples a Plackett-Luce ranking per request, seeded by the ``request_id`` param."""
    from mlflow.models import ModelSignature
    from mlflow.types.schema import ParamSchema, ParamSpec

    from fairltr.fair.policy import request_param_types

    inputs = any_typed_signature(columns, optional=tuple(c for c in optional if c is not None))
    params = ParamSchema([ParamSpec(name, dtype, None) for name, dtype in (  # the declared re-rankers' settings
        *request_param_types(shares), *((("request_id", "string"),) if sample else ()))])
    return ModelSignature(inputs=inputs, outputs=signature.outputs, params=params)


def _save_artifacts(model: Ranker, declared: RankerDeclaration, folder: Path) -> dict[str, Path]:
    """Save ``model``'s files in ``folder`` (the model's ``artifacts/``): ``{path in the model
    folder: local file}``: the declared model file and its companions (a LambdaMART model's booster)."""
    folder.mkdir(parents=True, exist_ok=True)
    weights = model.save(folder / declared.model_file)
    return {f"artifacts/{f.name}": f for f in model.saved_files(weights)}


def _example_output(model: Ranker, example: pd.DataFrame, policy: ServingPolicy, group: str | None,
                    group_type: str, sample: bool = False) -> pd.DataFrame:
    """What a served request of ``example`` returns (the signature's outputs), provenance included."""
    out = (FairltrRanker.from_model(model, sample=True).predict(None, example, {"request_id": "example"}) if sample
           else predict_frame(model, example) if not policy.active else
           FairltrRanker.from_model(model, policy=policy).predict(
               None, _with_group(example, group, text=group_type == "string")))
    return out.assign(**{c: policy.describe() if c == "policy" else "" for c in PROVENANCE_COLUMNS})


def _model_config(model: Ranker, label: str, policy: ServingPolicy, allowed: str, log_uri: str | None,
                  types: dict[str, str], weights: list[str], sample: bool = False) -> dict[str, Any]:
    """The MLmodel config of a loader-form ranker (read by :func:`ranker_from_config`): the column
    contract, the serving settings and the model's files (``weights``: the main file, then its
    companions, e.g. a LambdaMART model's booster)."""
    from fairltr.tracking.models.verified_loader import LOADER_FORMAT

    c = model.columns_
    return {"format": LOADER_FORMAT, "kind": "ranker", "query": model.query_, "group": c.group,
            "groups": list(c.groups), "item": c.item, "serve_rerank": policy.describe(), "serve_overrides": allowed,
            "decision_log": log_uri, "input_types": types, "weights": weights[0],
            "model": label,  # the ranker whose loader reads a file whose format marker cannot be read
            # a model saved as several files (LambdaMART: + its booster): every file, and the second
            # under "booster", the key earlier fairltr versions read
            **({"booster": weights[1], "files": list(weights)} if len(weights) > 1 else {}),
            **({"serve_sample": True, "serve_sample_salt": uuid.uuid4().hex} if sample else {})}


def log_ranker_model(
    model: Ranker,
    name: str = "model",
    input_example: pd.DataFrame | None = None,
    register: str | None = None,
    serve_rerank: ServingPolicy | str | None = None,
    serve_overrides: str | None = None,
    decision_log: str | None = None,
    serve_sample: bool = False,
    **log_kwargs: Any,
):
    """Log ``model`` as a pyfunc in the loader-module form (in the active run, if any) and
    optionally register it as a new version of ``register``. Returns MLflow's ``ModelInfo``
    (``model_uri``, ``registered_model_version``...). The folder's digest is recorded on the
    logged model and the version (tag ``fairltr.digest``, :func:`~fairltr.tracking.models.digests.record_digest`)
    and checked by the loader before the model serves.

    ``serve_rerank``: the serving policy (``"fair:p=0.3,alpha=0.1"``); ``serve_overrides``: the
    request params allowed to change it (``"none"``, ``"all"``, ``"p,k"``; default: none once a
    policy is recorded, all otherwise); ``decision_log``: where the served model appends its
    decisions (a folder or a ``postgresql://`` URI without password; ``FAIRLTR_DECISION_LOG``
    overrides it where it is served); ``serve_sample``: serve Plackett-Luce draws seeded per request
    id (a PLRank model, no ``serve_rerank``; a random salt recorded beside it keeps two models' draws
    apart). All are recorded in the model config, inside the
    digest. The signature declares the serving params and, when they are not features, the
    group attributes and the item column as optional inputs."""
    from fairltr.tracking.models.decision_log import check_recordable_uri
    from fairltr.tracking.models.digests import record_digest
    from fairltr.tracking.models.loader_form import build_wheel, log_loader_model, wheel_requirement

    model.check_fitted()
    input_example, group_type, types = _example_and_types(model, input_example)
    policy = serve_rerank if isinstance(serve_rerank, ServingPolicy) else parse_policy(serve_rerank)
    sample = _check_sampling(model, bool(serve_sample), policy)
    allowed = overrides_text(parse_overrides(serve_overrides, policy))
    log_uri = check_recordable_uri(decision_log)
    declared = declaration_of(model)
    with tempfile.TemporaryDirectory(prefix="fairltr-model-") as tmp:
        tmp_path = Path(tmp)
        files = _save_artifacts(model, declared, tmp_path / "artifacts")
        signature = _signature_of(model, input_example, policy, group_type, sample)
        code = stage_package(tmp_path / "code")
        wheel = build_wheel(code, tmp_path / "wheel", md.version("fairltr"))
        files.update({"ranker_code.py": MODEL_CODE, "code/fairltr": code, f"code/{wheel.name}": wheel})
        config = _model_config(model, declared.label, policy, allowed, log_uri, types,
                               [k for k in files if k.startswith("artifacts/")], sample)
        with registry_prints_follow_log_level(), warnings.catch_warnings():
            # MLflow infers the example's schema again: the same hint on the int query id column
            warnings.filterwarnings("ignore", message="Hint: Inferred schema contains integer", category=UserWarning)
            info = log_loader_model(
                name, files, config,
                pip_requirements=[*ranker_pip_requirements(declared.requirements), wheel_requirement(wheel)],
                signature=signature, input_example=input_example, **log_kwargs)
        record_digest(info, files, register=register or None, version_tags={"fairltr.kind": "ranker"})
    return info


def _example_and_types(model: Ranker, input_example: pd.DataFrame | None) -> tuple[pd.DataFrame, Any, dict]:
    """(the input example: 5 rows of the query and feature columns, or a made-up one; the group
    column's type; the training file's own column types). The types go to the model config
    (``input_types``) and the signature declares the inputs Any: MLflow then neither refuses the very
    file the model was trained on (int64 for a double column) nor truncates a served 37.5 to 37 (a
    long column over REST); the model checks its ids itself (an integer-trained query id must
    arrive as an integer)."""
    group = model.columns_.group
    group_type = _group_type(input_example, group)
    if input_example is None:
        input_example = _default_example(model)
    else:
        keep = [c for c in [model.query_, *model.feature_names_] if c in input_example.columns]
        input_example = input_example[keep].head(5).reset_index(drop=True)
    types = {**training_types(input_example), **({group: group_type} if group is not None else {})}
    return input_example, group_type, types


def _signature_of(model: Ranker, input_example: pd.DataFrame, policy: ServingPolicy, group_type: Any,
                  sample: bool):
    """The serving signature: inferred from the example and its served output, with the serving
    params and the optional group / item inputs (:func:`_serving_signature`)."""
    from mlflow.models import infer_signature

    with warnings.catch_warnings():  # the int query id / rank columns trigger a "missing values" hint
        warnings.simplefilter("ignore", UserWarning)
        output = _example_output(model, input_example, policy, model.columns_.group, group_type, sample)
        return _serving_signature(infer_signature(input_example, output),
                                  (*model.columns_.groups, model.columns_.item), list(input_example.columns),
                                  shares=isinstance(policy.p, str), sample=sample)
