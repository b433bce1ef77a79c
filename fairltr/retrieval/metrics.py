"""Retrieval metrics per query language (docs/spec.md §3, §5 names).

``run`` maps a query id to its ranked document ids (best first). Relevance comes from the
item-level qrels: a query is relevant to the documents of its ``parallel_id``.

* ``mrr_at_k``: 1 / rank of the first relevant document within the top k (0 if none).
* ``recall_at_k``: |relevant ∩ top k| / |relevant|.
* doc-language share: the fraction of top-k slots filled by each document language
  (the LaKDA paper's Figure 6), per query language.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.errors import DataError

__all__ = ["run_matrix", "retrieval_metrics", "doc_language_share", "rankings_by_item"]


def _query_table(run: Mapping, queries: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in ("_id", "parallel_id", "lang") if c not in queries.columns]
    if missing:
        raise DataError(f"queries table lacks column(s) {missing}; has {list(queries.columns)}")
    q = queries.set_index("_id", drop=False)
    unknown = [qid for qid in run if qid not in q.index]
    if unknown:
        raise DataError(f"run has query id {unknown[0]!r} not in the queries table ({len(unknown)} unknown)")
    return q.loc[list(run)]


def run_matrix(run: Mapping, k: int, doc_codes: Mapping) -> np.ndarray:
    """(Q, k) int array of document codes in run order; -1 pads short lists and unknown ids."""
    out = np.full((len(run), k), -1, dtype=np.int64)
    for i, docs in enumerate(run.values()):
        row = [doc_codes.get(d, -1) for d in list(docs)[:k]]
        out[i, : len(row)] = row
    return out


def retrieval_metrics(
    run: Mapping[str, Sequence[str]],
    queries: pd.DataFrame,
    qrels: pd.DataFrame,
    k: int = 100,
) -> pd.DataFrame:
    """MRR@k and Recall@k per query language and overall.

    Returns a DataFrame indexed by language (plus ``"all"``) with columns ``mrr_at_<k>``,
    ``recall_at_<k>`` (x100) and ``n_queries``.
    """
    q = _query_table(run, queries)
    doc_codes_arr, doc_ids = pd.factorize(qrels["corpus_id"])
    codes = {d: i for i, d in enumerate(doc_ids)}
    ranked = run_matrix(run, k, codes)  # (Q, k); documents never relevant map to -1
    item_codes, items = pd.factorize(pd.concat([q["parallel_id"], qrels["parallel_id"]], ignore_index=True))
    q_item = item_codes[: len(q)]
    rel_item = item_codes[len(q):]
    n_docs = len(doc_ids) + 1
    rel_keys = np.unique(rel_item.astype(np.int64) * n_docs + doc_codes_arr)
    keys = q_item[:, None].astype(np.int64) * n_docs + ranked
    hits = np.isin(keys, rel_keys) & (ranked >= 0)
    n_rel = np.bincount(rel_item, minlength=len(items))[q_item]
    first = np.where(hits.any(axis=1), hits.argmax(axis=1) + 1, 0)
    rr = np.where(first > 0, 1.0 / np.maximum(first, 1), 0.0)
    recall = hits.sum(axis=1) / np.maximum(n_rel, 1)
    per = pd.DataFrame({"lang": q["lang"].to_numpy(), f"mrr_at_{k}": 100 * rr, f"recall_at_{k}": 100 * recall})
    table = per.groupby("lang").agg(**{
        f"mrr_at_{k}": (f"mrr_at_{k}", "mean"),
        f"recall_at_{k}": (f"recall_at_{k}", "mean"),
        "n_queries": (f"mrr_at_{k}", "size"),
    })
    table.loc["all"] = [per[f"mrr_at_{k}"].mean(), per[f"recall_at_{k}"].mean(), len(per)]
    table["n_queries"] = table["n_queries"].astype(int)
    return table


def doc_language_share(
    run: Mapping[str, Sequence[str]],
    queries: pd.DataFrame,
    corpus: pd.DataFrame,
    k: int = 100,
) -> pd.DataFrame:
    """Rows: query language; columns: document language; values: share (x100) of top-k slots."""
    q = _query_table(run, queries)
    doc_codes, doc_ids = pd.factorize(corpus["_id"])
    lang_codes, langs = pd.factorize(corpus["lang"], sort=True)
    ranked = run_matrix(run, k, {d: i for i, d in enumerate(doc_ids)})
    valid = ranked >= 0
    doc_lang = np.where(valid, lang_codes[np.maximum(ranked, 0)], -1)
    counts = np.stack([(doc_lang == j).sum(axis=1) for j in range(len(langs))], axis=1)
    frame = pd.DataFrame(counts, columns=list(langs))
    frame["lang"] = q["lang"].to_numpy()
    summed = frame.groupby("lang").sum()
    return 100.0 * summed.div(summed.sum(axis=1).replace(0, 1), axis=0)


def rankings_by_item(run: Mapping[str, Sequence[str]], queries: pd.DataFrame) -> dict:
    """Regroup a run as ``{parallel_id: {lang: ranked doc ids}}`` (the input of MRC@k)."""
    q = _query_table(run, queries)
    out: dict = {}
    for qid, pid, lang in zip(q["_id"], q["parallel_id"], q["lang"]):
        out.setdefault(pid, {})[lang] = list(run[qid])
    return out
