"""The ``fair_retrieval`` MLflow evaluator plugin (entry point ``mlflow.model_evaluator``).

Usage (``data`` = the queries: ``query_id`` or ``_id``, ``text``, ``lang``, ``parallel_id``)::

    mlflow.models.evaluate("models:/retriever@champion", queries, model_type="fair_retrieval",
                           evaluators=["fair_retrieval"],
                           evaluator_config={"fair_retrieval": {"data_dir": "data/ddtp-mlir",
                                                                "split": "test"}})

The relevance judgments come from ``data_dir`` (a parallel-query folder: its qrels and corpus;
missing ``lang`` / ``parallel_id`` / ``split`` columns of ``data`` are filled from its queries)
or from ``qrels`` (a DataFrame ``parallel_id``, ``corpus_id``, ``score``; optional ``corpus``
DataFrame ``_id``, ``lang`` for document languages, else the model's own index). Options:
``split``, ``languages`` (keep these query languages), ``k`` (100), ``mrc_k`` (5),
``log_artifacts`` (True).

The model's ``predict(queries, params={"k": k})`` gives the run (its ``query_id``, ``doc_id``,
``rank`` rows); every metric is :func:`fairltr.retrieval.evaluate_run`'s (one implementation per
formula): ``mrr_at_<k>``, ``recall_at_<k>`` (x100), ``mrc_at_<m>`` (union rule),
``mrc_at_<m>_intersection``, ``overlap_at_<m>``, ``rbo_at_<m>`` (x100), and per query language
``mrr_at_<k>/<lang>``, ``recall_at_<k>/<lang>``, ``n_queries/<lang>`` and ``mrc_at_<m>/<lang>``
(the mean of the language's row of the MRC pair matrix: its agreement with every other
language). Every language present in the queries is evaluated. Undefined (NaN) values — e.g.
MRC when no item has two languages — are neither logged nor returned.

Artifacts: ``mrc_matrix.png`` (language-pair heat map) and ``mrc_matrix.csv``,
``per_language_metrics.csv``, ``doc_language_share.csv`` (share of top-k slots by document
language, per query language) and ``retrieval_report.json``.

MLflow's ``extra_metrics`` and ``custom_artifacts`` are honoured
(:mod:`fairltr.tracking.evaluation.extras`): their metrics join the result and the run, their
artifacts the result and the run's artifacts.

``can_evaluate`` says yes only when asked: ``model_type == "fair_retrieval"`` or a config naming
``data_dir`` or ``qrels``; other evaluations never run it.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from mlflow.models.evaluation.base import EvaluationResult, ModelEvaluator

from fairltr.errors import ConfigError, DataError
from fairltr.retrieval.parallel_data import ParallelRetrievalData
from fairltr.tracking.evaluation.evaluator import signature_columns

__all__ = [
    "FairRetrievalEvaluator", "MODEL_TYPE", "CONFIG_KEYS", "retrieval_data", "run_from_output",
    "evaluate_retrieval_run", "retrieval_metric_dict", "evaluate_retriever",
]

MODEL_TYPE = "fair_retrieval"
CONFIG_KEYS = ("data_dir", "qrels")
DEFAULT_K, DEFAULT_MRC_K = 100, 5


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"fair_retrieval evaluator: {name} must be an integer >= 1, got {value!r}")
    return int(value)


def _cuts(config: Mapping[str, Any]) -> tuple[int, int]:
    k = _positive_int("k", config.get("k", DEFAULT_K))
    mrc_k = _positive_int("mrc_k", config.get("mrc_k", DEFAULT_MRC_K))
    if mrc_k > k:
        raise ConfigError(f"fair_retrieval evaluator: mrc_k ({mrc_k}) must be <= k ({k})")
    return k, mrc_k


def _index_corpus(model) -> pd.DataFrame | None:
    """``_id``/``lang`` of a fairltr retriever's index (None for other models)."""
    try:
        inner = model.unwrap_python_model()
    except Exception:  # not a PythonModel-based pyfunc
        return None
    corpus = getattr(inner, "corpus", None)
    return corpus if isinstance(corpus, pd.DataFrame) else None


def retrieval_data(queries: pd.DataFrame, config: Mapping[str, Any], model=None) -> ParallelRetrievalData:
    """The evaluation set: ``queries`` (filtered by ``split`` / ``languages``) with the qrels and
    corpus named by ``config`` (``data_dir``, or ``qrels`` + optional ``corpus``)."""
    q = _query_table(queries)
    if config.get("data_dir") is not None:
        q, qrels, corpus = _judgments_from_folder(q, config["data_dir"])
    elif config.get("qrels") is not None:
        qrels, corpus = _judgments_from_frames(config, model)
    else:
        raise ConfigError("fair_retrieval evaluator: give the relevance judgments as evaluator_config "
                          "{'data_dir': <parallel-query folder>} or {'qrels': DataFrame(parallel_id, corpus_id, score)}")
    q = _selected_queries(q, config)
    no_rel = ~q["parallel_id"].isin(set(qrels["parallel_id"]))
    if no_rel.any():
        row = q[no_rel].iloc[0]
        raise DataError(f"fair_retrieval evaluator: query {row['_id']!r} (parallel_id {row['parallel_id']!r}) "
                        "has no relevant document in the qrels")
    q = q[["_id", "parallel_id", "lang", "split", "text"]].reset_index(drop=True)
    qrels = qrels[qrels["parallel_id"].isin(set(q["parallel_id"]))].reset_index(drop=True)
    return ParallelRetrievalData(corpus.reset_index(drop=True), q, qrels)


def _query_table(queries: pd.DataFrame) -> pd.DataFrame:
    """The queries with a string ``_id`` (from ``_id`` or ``query_id``); at least one row."""
    if not isinstance(queries, pd.DataFrame):
        raise ConfigError("the fair_retrieval evaluator needs the queries as a pandas DataFrame")
    q = queries.reset_index(drop=True)
    if "_id" not in q.columns:
        if "query_id" not in q.columns:
            raise DataError(f"fair_retrieval evaluator: the queries need a query_id (or _id) column; columns: {list(q.columns)}")
        q = q.rename(columns={"query_id": "_id"})
    if len(q) == 0:
        raise DataError("fair_retrieval evaluator: no queries to evaluate")
    q["_id"] = q["_id"].astype(str)
    return q


def _judgments_from_folder(q: pd.DataFrame, data_dir) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(queries with their missing ``parallel_id`` / ``lang`` / ``split`` / ``text`` filled from
    the folder's queries, the folder's qrels, its corpus)."""
    from fairltr.retrieval import read_parallel_data

    folder = read_parallel_data(data_dir)
    fill = [c for c in ("parallel_id", "lang", "split", "text") if c not in q.columns]
    if fill:
        known = folder.queries.set_index("_id")
        unknown = ~q["_id"].isin(known.index)
        if unknown.any():
            raise DataError(f"fair_retrieval evaluator: query {q['_id'][unknown].iloc[0]!r} is not in "
                            f"{data_dir}/queries.jsonl (needed for column(s) {fill})")
        for c in fill:
            q[c] = known.loc[q["_id"], c].to_numpy()
    return q, folder.qrels, folder.corpus


def _judgments_from_frames(config: Mapping[str, Any], model) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the config's ``qrels`` with a positive score, the corpus: the config's ``corpus``, else the
    model's index, else the qrels' document ids; languages ``unknown`` where not given)."""
    qrels = config["qrels"]
    if not isinstance(qrels, pd.DataFrame):
        raise ConfigError("fair_retrieval evaluator: qrels must be a DataFrame (parallel_id, corpus_id, score)")
    missing = [c for c in ("parallel_id", "corpus_id", "score") if c not in qrels.columns]
    if missing:
        raise DataError(f"fair_retrieval evaluator: qrels lack column(s) {missing}; columns: {list(qrels.columns)}")
    qrels = qrels.assign(parallel_id=qrels["parallel_id"].astype(str), corpus_id=qrels["corpus_id"].astype(str))
    qrels = qrels[pd.to_numeric(qrels["score"], errors="coerce") > 0][["parallel_id", "corpus_id", "score"]]
    corpus = config.get("corpus")
    if corpus is None:
        corpus = _index_corpus(model)
    if corpus is None:  # document languages unknown: ids from the qrels
        corpus = pd.DataFrame({"_id": pd.unique(qrels["corpus_id"])})
    corpus = corpus.assign(_id=corpus["_id"].astype(str))
    corpus = corpus.assign(lang=corpus["lang"].fillna("unknown").astype(str) if "lang" in corpus.columns else "unknown")
    if "text" not in corpus.columns:
        corpus = corpus.assign(text="")
    return qrels, corpus


def _selected_queries(q: pd.DataFrame, config: Mapping[str, Any]) -> pd.DataFrame:
    """The queries of the config's ``split`` and ``languages`` (string ``parallel_id`` / ``lang``,
    a ``split`` column, empty when the queries have none)."""
    missing = [c for c in ("text", "parallel_id", "lang") if c not in q.columns]
    if missing:
        raise DataError(f"fair_retrieval evaluator: the queries lack column(s) {missing}; columns: {list(q.columns)}")
    q["parallel_id"] = q["parallel_id"].astype(str)
    q["lang"] = q["lang"].astype(str)
    split = config.get("split")
    if split is not None:
        if "split" not in q.columns:
            raise DataError(f"fair_retrieval evaluator: split={split!r} asked but the queries have no split column")
        q = q[q["split"].astype(str) == str(split)]
        if len(q) == 0:
            raise DataError(f"fair_retrieval evaluator: no query in split {split!r}")
    languages = config.get("languages")
    if languages is not None:
        languages = [languages] if isinstance(languages, str) else [str(x) for x in languages]
        present = sorted(q["lang"].unique())
        unknown = [x for x in languages if x not in present]
        if unknown:
            raise DataError(f"fair_retrieval evaluator: language(s) {unknown} not among the queries' languages {present}")
        q = q[q["lang"].isin(languages)]
    if "split" not in q.columns:
        q = q.assign(split="")
    return q


def run_from_output(output: Any, query_ids: Sequence[str]) -> dict[str, list[str]]:
    """``{query id: [doc ids by rank]}`` from a retriever's predict output (rows ``query_id``,
    ``doc_id``, ``rank``); queries without rows get an empty list."""
    if not isinstance(output, pd.DataFrame):
        raise DataError(f"the model returned {type(output).__name__}; a retriever returns a DataFrame "
                        "with columns query_id, doc_id, rank, score")
    missing = [c for c in ("query_id", "doc_id", "rank") if c not in output.columns]
    if missing:
        raise DataError(f"model output lacks column(s) {missing}; columns: {list(output.columns)}")
    out = output.assign(query_id=output["query_id"].astype(str), doc_id=output["doc_id"].astype(str))
    out = out.sort_values(["query_id", "rank"], kind="stable")
    grouped = out.groupby("query_id", sort=False)["doc_id"].agg(list)
    known = set(query_ids)
    extra = [x for x in grouped.index if x not in known]
    if extra:
        raise DataError(f"model output has query_id {extra[0]!r}, which is not among the evaluated queries")
    return {qid: grouped.get(qid, []) for qid in query_ids}


def evaluate_retrieval_run(run: Mapping[str, Sequence[str]], data: ParallelRetrievalData, *, k: int, mrc_k: int) -> dict:
    """:func:`fairltr.retrieval.evaluate_run`; where no parallel item has two query languages
    (a single-language evaluation) the cross-language figures are undefined and left out."""
    from fairltr.retrieval import doc_language_share, evaluate_run, retrieval_metrics

    if (data.queries.groupby("parallel_id")["lang"].nunique() >= 2).any():
        return evaluate_run(run, data, k=k, mrc_k=mrc_k)
    per_lang = retrieval_metrics(run, data.queries, data.qrels, k)
    return {
        f"mrr_at_{k}": float(per_lang.loc["all", f"mrr_at_{k}"]),
        f"recall_at_{k}": float(per_lang.loc["all", f"recall_at_{k}"]),
        "per_language": per_lang,
        "doc_language_share": doc_language_share(run, data.queries, data.corpus, k),
        "mrc_matrix": None,
    }


def retrieval_metric_dict(result: Mapping[str, Any], *, k: int, mrc_k: int) -> dict[str, float]:
    """Finite scalar metrics of an :func:`evaluate_run` result, overall and per query language."""
    out: dict[str, float] = {}
    for key in (f"mrr_at_{k}", f"recall_at_{k}", f"mrc_at_{mrc_k}", f"mrc_at_{mrc_k}_intersection",
                f"overlap_at_{mrc_k}", f"rbo_at_{mrc_k}"):
        if key in result:
            out[key] = float(result[key])
    per_lang: pd.DataFrame = result["per_language"]
    for lang in per_lang.index:
        if lang == "all":
            continue
        for col in (f"mrr_at_{k}", f"recall_at_{k}", "n_queries"):
            out[f"{col}/{lang}"] = float(per_lang.loc[lang, col])
    matrix = result.get("mrc_matrix")
    if isinstance(matrix, pd.DataFrame):
        values = matrix.to_numpy(dtype=np.float64).copy()
        np.fill_diagonal(values, np.nan)
        for i, lang in enumerate(matrix.index):
            row = values[i][np.isfinite(values[i])]
            if len(row):
                out[f"mrc_at_{mrc_k}/{lang}"] = float(row.mean())
    return {key: v for key, v in out.items() if math.isfinite(v)}


class FairRetrievalEvaluator(ModelEvaluator):
    """Retrieval quality and cross-language consistency (MRC@k) of a retriever, per query language."""

    @classmethod
    def can_evaluate(cls, *, model_type=None, evaluator_config=None, **kwargs) -> bool:
        if model_type == MODEL_TYPE:
            return True
        return isinstance(evaluator_config, Mapping) and any(key in evaluator_config for key in CONFIG_KEYS)

    def evaluate(
        self,
        *,
        model_type=None,
        dataset=None,
        run_id=None,
        evaluator_config=None,
        model=None,
        extra_metrics=None,
        custom_artifacts=None,
        predictions=None,
        **kwargs,
    ) -> EvaluationResult:
        """The metrics (with the user's ``extra_metrics``, :mod:`~fairltr.tracking.evaluation.extras`)
        and, in run ``run_id``, the artifacts (with the user's ``custom_artifacts``)."""
        from fairltr.tracking.evaluation.extras import extra_metric_values, unlogged_custom_artifacts

        config = dict(evaluator_config or {})
        k, mrc_k = _cuts(config)
        if model is None:
            raise ConfigError("the fair_retrieval evaluator needs a model (a retriever whose predict returns "
                              "query_id, doc_id, rank rows)")
        data = retrieval_data(dataset.features_data, config, model)
        inputs = pd.DataFrame({"query_id": data.queries["_id"], "text": data.queries["text"],
                               "lang": data.queries["lang"]})
        t0 = time.perf_counter()
        output = model.predict(signature_columns(model, inputs, require_all=False), params={"k": k})
        predict_s = time.perf_counter() - t0
        run = run_from_output(output, data.queries["_id"].tolist())
        result = evaluate_retrieval_run(run, data, k=k, mrc_k=mrc_k)
        metrics = retrieval_metric_dict(result, k=k, mrc_k=mrc_k)
        eval_df = retrieval_eval_df(run, data)
        queries = data.queries.rename(columns={"_id": "query_id"})
        metrics.update(extra_metric_values(extra_metrics, eval_df, queries, metrics, config, evaluator=MODEL_TYPE))
        if run_id is None:
            artifacts = unlogged_custom_artifacts(custom_artifacts, eval_df, metrics, evaluator=MODEL_TYPE)
        else:
            artifacts = _log_into_run(run_id, result, metrics, data, config, eval_df, custom_artifacts,
                                      k=k, mrc_k=mrc_k, predict_s=predict_s)
        return EvaluationResult(metrics=metrics, artifacts=artifacts, run_id=run_id)


def retrieval_eval_df(run: Mapping[str, Sequence[str]], data: ParallelRetrievalData) -> pd.DataFrame:
    """The ``eval_df`` of the user's extra metrics and custom artifacts, one row per query:
    ``query_id``, ``parallel_id``, ``lang``, ``prediction`` (the retrieved document ids by rank)
    and ``target`` (the ids of its relevant documents)."""
    relevant = data.qrels.groupby("parallel_id", sort=False)["corpus_id"].agg(list)
    q = data.queries
    return pd.DataFrame({"query_id": q["_id"].to_numpy(), "parallel_id": q["parallel_id"].to_numpy(),
                         "lang": q["lang"].to_numpy(),
                         "prediction": [list(run.get(qid, [])) for qid in q["_id"]],
                         "target": [list(relevant.get(pid, [])) for pid in q["parallel_id"]]})


def _log_into_run(run_id: str, result, metrics: dict[str, float], data: ParallelRetrievalData, config, eval_df,
                  custom_artifacts, *, k: int, mrc_k: int, predict_s: float) -> dict[str, Any]:
    """Log the metrics (headline first), the evaluator's artifacts (unless ``log_artifacts`` is
    false) and the custom artifacts into ``run_id`` in one upload; returns the result's artifacts."""
    from mlflow import MlflowClient

    from fairltr.tracking.evaluation.extras import artifact_entry, write_custom_artifacts
    from fairltr.tracking.evaluation.result_metrics import log_result_metrics

    client = MlflowClient()
    log_result_metrics(run_id, metrics)  # one call, headline first; the client splits large batches
    artifacts: dict[str, Any] = {}
    if not (config.get("log_artifacts", True) or custom_artifacts):
        return artifacts
    base = client.get_run(run_id).info.artifact_uri.rstrip("/")
    with tempfile.TemporaryDirectory(prefix="fairltr-eval-") as tmp:
        if config.get("log_artifacts", True):
            paths = _write_artifacts(Path(tmp), result, metrics, data, config, k=k, mrc_k=mrc_k, predict_s=predict_s)
            artifacts = {p.stem: _artifact_kind(p)(uri=f"{base}/{p.name}") for p in paths}
        custom = write_custom_artifacts(custom_artifacts, eval_df, metrics, Path(tmp), evaluator=MODEL_TYPE,
                                        taken=list(artifacts))
        artifacts.update({name: artifact_entry(path, f"{base}/{path.name}") for name, path in custom.items()})
        client.log_artifacts(run_id, tmp)  # one upload call
    return artifacts


def _artifact_kind(path: Path):
    from mlflow.models.evaluation.artifacts import (
        CsvEvaluationArtifact, ImageEvaluationArtifact, JsonEvaluationArtifact,
    )

    return {".png": ImageEvaluationArtifact, ".csv": CsvEvaluationArtifact, ".json": JsonEvaluationArtifact}[path.suffix]


def _jsonable(frame: pd.DataFrame | None) -> dict | None:
    if frame is None:
        return None
    return json.loads(frame.to_json(orient="index"))  # NaN -> null


def _write_artifacts(tmp: Path, result, metrics, data: ParallelRetrievalData, config, *, k: int, mrc_k: int,
                     predict_s: float) -> list[Path]:
    paths: list[Path] = []
    per_lang: pd.DataFrame = result["per_language"]
    per_lang.rename_axis("lang").to_csv(tmp / "per_language_metrics.csv")
    paths.append(tmp / "per_language_metrics.csv")
    result["doc_language_share"].rename_axis("query_lang").to_csv(tmp / "doc_language_share.csv")
    paths.append(tmp / "doc_language_share.csv")
    matrix = result.get("mrc_matrix")
    if isinstance(matrix, pd.DataFrame):
        from fairltr.tracking.evaluation.plots import figure_to_png, mrc_heatmap

        matrix.rename_axis("lang").to_csv(tmp / "mrc_matrix.csv")
        paths.append(tmp / "mrc_matrix.csv")
        (tmp / "mrc_matrix.png").write_bytes(figure_to_png(mrc_heatmap(matrix, title=f"MRC@{mrc_k} by language pair")))
        paths.append(tmp / "mrc_matrix.png")
    settings = {key: v for key, v in config.items() if isinstance(v, (str, int, float, bool)) or v is None}
    if isinstance(config.get("languages"), (list, tuple)):
        settings["languages"] = [str(x) for x in config["languages"]]
    report = {
        "evaluator": MODEL_TYPE, "k": k, "mrc_k": mrc_k, "config": settings,
        "n_queries": int(len(data.queries)), "n_items": int(data.queries["parallel_id"].nunique()),
        "languages": sorted(data.queries["lang"].unique().tolist()), "predict_seconds": predict_s,
        "metrics": metrics, "per_language": _jsonable(per_lang),
        "doc_language_share": _jsonable(result["doc_language_share"]), "mrc_matrix": _jsonable(matrix),
    }
    (tmp / "retrieval_report.json").write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    paths.append(tmp / "retrieval_report.json")
    return paths


def evaluate_retriever(
    model_uri: Any,
    data_dir: str | Path,
    *,
    split: str | None = "test",
    languages: Sequence[str] | None = None,
    max_items: int | None = None,
    seed: int = 0,
    run_name: str | None = None,
    k: int = DEFAULT_K,
    mrc_k: int = DEFAULT_MRC_K,
    label: str | None = None,
) -> tuple[dict[str, float], str]:
    """Evaluate ``model_uri`` (a model URI, or a ``PyFuncModel`` such as
    :func:`fairltr.tracking.models.verify.load_verified` builds in process) on a parallel-query folder
    with ``mlflow.models.evaluate`` and this evaluator, in a new run (nested when a run is active)
    tagged ``fairltr.model_uri`` = ``label`` (default: the URI). ``split`` (None: every query) and
    ``max_items`` (a ``seed``ed sample of parallel items) select the queries. Returns the metrics
    and the run id."""
    import mlflow
    import mlflow.data

    from fairltr.retrieval import read_parallel_data
    from fairltr.tracking.runs.racing_writes import log_input

    data = read_parallel_data(data_dir)
    if split is not None:
        data = data.split(split, max_items=max_items, seed=seed)
    elif max_items is not None:
        raise ConfigError("max_items needs a split")
    config: dict[str, Any] = {"qrels": data.qrels, "corpus": data.corpus[["_id", "lang"]], "k": k, "mrc_k": mrc_k}
    if languages is not None:
        config["languages"] = list(languages)
    queries = data.queries.rename(columns={"_id": "query_id"})
    with mlflow.start_run(run_name=run_name, nested=mlflow.active_run() is not None) as run:
        shown = label or (model_uri if isinstance(model_uri, str) else "in-process model")
        mlflow.set_tags({"fairltr.evaluator": MODEL_TYPE, "fairltr.model_uri": shown})
        mlflow.log_params({"data_dir": str(data_dir), "split": str(split), "max_items": str(max_items),
                           "seed": seed, "k": k, "mrc_k": mrc_k,
                           "languages": ",".join(languages) if languages is not None else "all"})
        dataset = mlflow.data.from_pandas(queries, source=str(Path(data_dir).resolve()),
                                          name=f"{Path(data_dir).name} {split or 'all'} queries")
        log_input(dataset, context="evaluation")  # first, racing-safe: evaluate's own log then finds it
        result = mlflow.models.evaluate(model_uri, dataset, model_type=MODEL_TYPE, evaluators=[MODEL_TYPE],
                                        evaluator_config={MODEL_TYPE: config})
    return dict(result.metrics), run.info.run_id
