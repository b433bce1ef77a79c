"""MLflow's ``extra_metrics`` and ``custom_artifacts`` in fairltr's evaluator plugins, under the
contract of ``mlflow.models.evaluate`` (MLflow 3) and of its default evaluator:

* an extra metric is an :class:`mlflow.models.EvaluationMetric` (``mlflow.models.make_metric``).
  Its ``eval_fn`` is called with ``(eval_df, builtin_metrics)`` when it has two parameters not
  named ``predictions`` / ``targets``; otherwise each parameter is looked up by name (after
  ``evaluator_config["col_mapping"]``): ``predictions`` and ``targets`` are the ``prediction`` and
  ``target`` columns of ``eval_df``, ``metrics`` the metrics so far as
  :class:`mlflow.metrics.MetricValue` s, any other name a column of the evaluation data, an
  ``evaluator_config`` key or the name of a metric, else the parameter's default. It returns a
  number or a ``MetricValue``; its aggregate ``name`` is logged as ``name`` (``name/version``
  with a version), any other aggregate ``agg`` as ``name/agg``. Non-finite values are undefined
  and neither logged nor returned (as the evaluators' own metrics).
* a custom artifact is a function ``(eval_df, builtin_metrics, artifacts_dir) -> {name: object}``;
  an object is a path to a file (``.png``, ``.jpg``, ``.json``, ``.csv``, ``.npy``, ``.parquet``,
  ``.txt``, ``.html``), a JSON string, a DataFrame (``.csv``), a numpy array (``.npy``), a
  matplotlib Figure (``.png``) or a JSON-serialisable value (``.json``). Unlike MLflow's default
  evaluator nothing is pickled: any other object is a one-line :class:`~fairltr.errors.ConfigError`.

A name that is already one of the evaluator's own metrics or artifacts is an error, not an
overwrite; so is a parameter no source can fill, and a metric that returns something else.
"""

from __future__ import annotations

import copy
import inspect
import json
import math
import shutil
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.errors import ConfigError

__all__ = ["extra_metric_values", "write_custom_artifacts", "unlogged_custom_artifacts", "artifact_entry",
           "ARTIFACT_SUFFIXES"]

ARTIFACT_SUFFIXES = (".png", ".jpg", ".jpeg", ".json", ".csv", ".npy", ".parquet", ".txt", ".html")


def _metric_values(metrics: Mapping[str, float]) -> dict[str, Any]:
    from mlflow.metrics import MetricValue

    return {name: MetricValue(aggregate_results={name: value}) for name, value in metrics.items()}


def _arguments(metric, eval_df: pd.DataFrame, data: pd.DataFrame, metrics: Mapping[str, float],
               config: Mapping[str, Any], evaluator: str) -> list[Any]:
    """The arguments of ``metric.eval_fn``, read from its signature (the contract above)."""
    params = inspect.signature(metric.eval_fn).parameters
    names = list(params)
    if len(names) == 2 and names[0] != "predictions" and names[1] != "targets":
        return [eval_df.copy(), dict(metrics)]
    mapping = config.get("col_mapping") or {}
    args = []
    for name, param in params.items():
        source = mapping.get(name, name)
        if not isinstance(source, str):  # col_mapping may hand over the values themselves
            args.append(source)
        elif source in ("predictions", "prediction"):
            args.append(eval_df["prediction"].copy())
        elif source in ("targets", "target"):
            args.append(eval_df["target"].copy())
        elif source == "metrics":
            args.append(_metric_values(metrics))
        elif source in data.columns:
            args.append(data[source].copy())
        elif source in config:
            args.append(copy.deepcopy(config[source]))
        elif source in metrics:
            args.append(_metric_values({source: metrics[source]})[source])
        elif param.default is not inspect.Parameter.empty:
            args.append(param.default)
        else:
            raise ConfigError(f"{evaluator} evaluator: extra metric {metric.name!r} needs parameter {name!r}, which is "
                              "not a column of the evaluation data, an evaluator_config key or a metric "
                              "(map it with evaluator_config['col_mapping'])")
    return args


def _values_of(metric, returned: Any, evaluator: str) -> dict[str, float]:
    """What ``eval_fn`` returned, as ``{logged name: value}`` (MLflow's naming of aggregates)."""
    from mlflow.metrics import MetricValue

    name = f"{metric.name}/{metric.version}" if getattr(metric, "version", None) else metric.name
    if isinstance(returned, (int, float, np.number)) and not isinstance(returned, (bool, np.bool_)):
        return {name: float(returned)}
    if not isinstance(returned, MetricValue):
        raise ConfigError(f"{evaluator} evaluator: extra metric {metric.name!r} returned {type(returned).__name__}; "
                          "expected a number or an mlflow.metrics.MetricValue")
    out: dict[str, float] = {}
    for agg, value in (returned.aggregate_results or {}).items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
            raise ConfigError(f"{evaluator} evaluator: extra metric {metric.name!r} returned aggregate {agg!r} = "
                              f"{value!r}; expected a number")
        out[name if agg == name.split("/")[0] else f"{name}/{agg}"] = float(value)
    return out


def extra_metric_values(extra_metrics: Sequence[Any] | None, eval_df: pd.DataFrame, data: pd.DataFrame,
                        metrics: Mapping[str, float], config: Mapping[str, Any], *, evaluator: str) -> dict[str, float]:
    """The finite values of ``extra_metrics``, computed in order (each one sees the evaluator's
    ``metrics`` and the extra metrics before it). ``eval_df``: ``prediction``, ``target`` (and
    the evaluator's other per-row columns); ``data``: the evaluation data, for parameters named
    after its columns."""
    if not extra_metrics:
        return {}
    known = dict(metrics)
    out: dict[str, float] = {}
    for metric in extra_metrics:
        if not callable(getattr(metric, "eval_fn", None)) or not getattr(metric, "name", None):
            raise ConfigError(f"{evaluator} evaluator: extra_metrics holds {type(metric).__name__}; "
                              "expected mlflow.models.make_metric(...) objects")
        values = _values_of(metric, metric.eval_fn(*_arguments(metric, eval_df, data, known, config, evaluator)),
                            evaluator)
        clash = [k for k in values if k in metrics]
        if clash:
            raise ConfigError(f"{evaluator} evaluator: extra metric {metric.name!r} would replace the evaluator's "
                              f"metric {clash[0]!r}; give it another name")
        finite = {k: v for k, v in values.items() if math.isfinite(v)}
        known.update(finite)
        out.update(finite)
    return out


def _json_scalar(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(type(value).__name__)


def _write_one(name: str, obj: Any, out_dir: Path, where: str) -> Path:
    """``obj`` written into ``out_dir`` as ``name`` + the suffix of its kind (the contract above)."""
    if isinstance(obj, str) and not Path(obj).is_file():
        try:
            json.loads(obj)
        except ValueError:
            raise ConfigError(f"{where} artifact {name!r} is {obj[:80]!r}: neither a file nor a JSON string") from None
        target = out_dir / f"{name}.json"
        target.write_text(obj, encoding="utf-8")
        return target
    if isinstance(obj, (str, Path)):
        src = Path(obj)
        if not src.is_file():
            raise ConfigError(f"{where} artifact {name!r}: {src} is not a file")
        if src.suffix.lower() not in ARTIFACT_SUFFIXES:
            raise ConfigError(f"{where} artifact {name!r}: {src.name} is not one of {', '.join(ARTIFACT_SUFFIXES)}")
        target = out_dir / f"{name}{src.suffix.lower()}"
        shutil.copyfile(src, target)
        return target
    if isinstance(obj, pd.DataFrame):
        obj.to_csv(out_dir / f"{name}.csv", index=False)
        return out_dir / f"{name}.csv"
    if isinstance(obj, np.ndarray):
        np.save(out_dir / f"{name}.npy", obj, allow_pickle=False)
        return out_dir / f"{name}.npy"
    if callable(getattr(obj, "savefig", None)):  # a matplotlib Figure
        obj.savefig(out_dir / f"{name}.png")
        return out_dir / f"{name}.png"
    try:
        text = json.dumps(obj, default=_json_scalar)
    except (TypeError, ValueError):
        raise ConfigError(f"{where} artifact {name!r} is a {type(obj).__name__}: give a file path, a DataFrame, "
                          "a numpy array, a matplotlib Figure or a JSON value (nothing is pickled)") from None
    (out_dir / f"{name}.json").write_text(text, encoding="utf-8")
    return out_dir / f"{name}.json"


def write_custom_artifacts(custom_artifacts: Sequence[Callable] | None, eval_df: pd.DataFrame,
                           metrics: Mapping[str, float], out_dir: Path, *, evaluator: str,
                           taken: Sequence[str] = ()) -> dict[str, Path]:
    """Call each custom artifact function with ``(eval_df, metrics, artifacts_dir)`` and write
    what it returns into ``out_dir``; returns ``{artifact name: file}``. ``taken``: the names of
    the evaluator's own artifacts (a clash is an error)."""
    import tempfile

    out: dict[str, Path] = {}
    for index, fn in enumerate(custom_artifacts or ()):
        where = f"{evaluator} evaluator: custom artifact function {getattr(fn, '__name__', repr(fn))!r} (index {index}):"
        with tempfile.TemporaryDirectory(prefix="fairltr-artifact-") as scratch:
            produced = fn(eval_df.copy(), dict(metrics), scratch)
            if produced is None:
                continue
            if not isinstance(produced, Mapping) or not all(isinstance(k, str) for k in produced):
                raise ConfigError(f"{where} returned {type(produced).__name__}; expected a dict of artifact names "
                                  "to objects or file paths")
            for name, obj in produced.items():
                if name in taken or name in out or any(p.stem == name for p in out_dir.iterdir()):
                    raise ConfigError(f"{where} artifact {name!r} has the name of another artifact; give it another name")
                out[name] = _write_one(name, obj, out_dir, where)
    return out


def artifact_entry(path: Path, uri: str):
    """The result's :class:`mlflow.models.EvaluationArtifact` for a written file (content loaded)."""
    from mlflow.models.evaluation.artifacts import (
        CsvEvaluationArtifact, ImageEvaluationArtifact, JsonEvaluationArtifact, NumpyEvaluationArtifact,
        ParquetEvaluationArtifact, TextEvaluationArtifact,
    )

    kinds = {".png": ImageEvaluationArtifact, ".jpg": ImageEvaluationArtifact, ".jpeg": ImageEvaluationArtifact,
             ".json": JsonEvaluationArtifact, ".csv": CsvEvaluationArtifact, ".npy": NumpyEvaluationArtifact,
             ".parquet": ParquetEvaluationArtifact, ".txt": TextEvaluationArtifact, ".html": TextEvaluationArtifact}
    artifact = kinds[path.suffix](uri=uri)
    artifact._load(str(path))  # MLflow's own evaluators load the content the same way
    return artifact


def unlogged_custom_artifacts(custom_artifacts: Sequence[Callable] | None, eval_df: pd.DataFrame,
                              metrics: Mapping[str, float], *, evaluator: str) -> dict[str, Any]:
    """The custom artifacts of an evaluation without a run (an evaluator called directly): their
    content, loaded from files written to a temporary folder, and no URI."""
    import tempfile

    if not custom_artifacts:
        return {}
    with tempfile.TemporaryDirectory(prefix="fairltr-eval-") as tmp:
        custom = write_custom_artifacts(custom_artifacts, eval_df, metrics, Path(tmp), evaluator=evaluator)
        return {name: artifact_entry(path, "") for name, path in custom.items()}
