"""The parallel-query retrieval layout (ddtp-mlir, MultiEuP-v2 converted to it).

A folder holds three files:

* ``corpus.jsonl``  one JSON object per line: ``_id``, ``lang``, ``text``
* ``queries.jsonl`` one JSON object per line: ``_id``, ``parallel_id``, ``lang``, ``split``, ``text``
  (the same ``parallel_id`` in several languages = parallel versions of one query)
* ``qrels.tsv``     tab-separated with a header: ``parallel_id``, ``corpus_id``, ``score``, ``split``

Relevance is per parallel item: every language version of an item has the item's relevant
documents (``score > 0``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fairltr.errors import DataError

__all__ = ["ParallelRetrievalData", "read_parallel_data", "read_jsonl"]

PathLike = str | os.PathLike

CORPUS_COLUMNS = ("_id", "lang", "text")
QUERY_COLUMNS = ("_id", "parallel_id", "lang", "split", "text")
QREL_COLUMNS = ("parallel_id", "corpus_id", "score")


def read_jsonl(path: PathLike, columns: tuple[str, ...], *, text: tuple[str, ...] = ("text",)) -> pd.DataFrame:
    """Read a JSON-lines file into a DataFrame with string ``columns``; errors name file, line and field.

    Every line is UTF-8 JSON object holding ``columns``; a field is a string or an integer
    (ids), never null; the fields of ``text`` are strings."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"file not found: {p}")
    rows: list[dict] = []
    with open(p, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"{p}, line {lineno}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                                f"{exc.start + 1}); save the file as UTF-8") from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{p}, line {lineno}: invalid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise DataError(f"{p}, line {lineno}: expected a JSON object, got {type(obj).__name__}")
            missing = [c for c in columns if c not in obj]
            if missing:
                raise DataError(f"{p}, line {lineno}: missing field(s) {missing}; required: {list(columns)}")
            for c in columns:
                value = obj[c]
                wanted = (str,) if c in text else (str, int)
                if not isinstance(value, wanted) or isinstance(value, bool):
                    kind = "null" if value is None else type(value).__name__
                    raise DataError(f"{p}, line {lineno}: field {c!r} is {kind}; expected "
                                    f"{'a string' if c in text else 'a string or an integer'}")
            rows.append({c: obj[c] for c in columns})
    if not rows:
        raise DataError(f"empty file: {p}")
    df = pd.DataFrame(rows, columns=list(columns))
    for c in columns:
        df[c] = df[c].astype(str)
    return df


@dataclass
class ParallelRetrievalData:
    """Corpus, queries and qrels of a parallel-query retrieval set (all string ids)."""

    corpus: pd.DataFrame   # _id, lang, text
    queries: pd.DataFrame  # _id, parallel_id, lang, split, text
    qrels: pd.DataFrame    # parallel_id, corpus_id, score (> 0 only)

    @property
    def languages(self) -> list[str]:
        """Query languages, sorted."""
        return sorted(self.queries["lang"].unique())

    def split(self, name: str, max_items: int | None = None, seed: int = 0) -> "ParallelRetrievalData":
        """Queries (and their qrels) of one split; ``max_items`` keeps a seeded sample of parallel items.

        The corpus is kept whole: retrieval is always over the full collection.
        """
        splits = sorted(self.queries["split"].unique())
        if name not in splits:
            raise DataError(f"unknown split {name!r}; the queries have splits {splits}")
        q = self.queries[self.queries["split"] == name]
        items = pd.unique(q["parallel_id"])
        if max_items is not None and max_items < len(items):
            rng = np.random.default_rng(seed)
            keep = set(rng.choice(items, size=max_items, replace=False).tolist())
            q = q[q["parallel_id"].isin(keep)]
        qr = self.qrels[self.qrels["parallel_id"].isin(set(q["parallel_id"]))]
        return ParallelRetrievalData(self.corpus, q.reset_index(drop=True), qr.reset_index(drop=True))

    def relevant(self) -> dict[str, set[str]]:
        """parallel_id -> set of relevant corpus ids."""
        return {pid: set(g) for pid, g in self.qrels.groupby("parallel_id", sort=False)["corpus_id"]}

    def positives(self) -> pd.Series:
        """One relevant corpus id per parallel item (the first in qrels order), indexed by parallel_id."""
        return self.qrels.drop_duplicates("parallel_id").set_index("parallel_id")["corpus_id"]


def read_parallel_data(folder: PathLike) -> ParallelRetrievalData:
    """Read ``corpus.jsonl``, ``queries.jsonl`` and ``qrels.tsv`` from ``folder`` and check them.

    Checks: unique corpus and query ids, qrels rows pointing at known documents and query items,
    every query item with at least one relevant document.
    """
    root = Path(folder)
    if not root.is_dir():
        raise DataError(f"not a directory: {root} (expected corpus.jsonl, queries.jsonl, qrels.tsv)")
    corpus = read_jsonl(root / "corpus.jsonl", CORPUS_COLUMNS)
    queries = read_jsonl(root / "queries.jsonl", QUERY_COLUMNS)
    qrels_path = root / "qrels.tsv"
    if not qrels_path.is_file():
        raise DataError(f"file not found: {qrels_path}")
    qrels = pd.read_csv(qrels_path, sep="\t", dtype={"parallel_id": str, "corpus_id": str})
    missing = [c for c in QREL_COLUMNS if c not in qrels.columns]
    if missing:
        raise DataError(f"{qrels_path}: missing column(s) {missing}; columns are {list(qrels.columns)}")
    score = pd.to_numeric(qrels["score"], errors="coerce")
    if score.isna().any():
        row = int(np.flatnonzero(score.isna().to_numpy())[0])
        raise DataError(f"{qrels_path}, line {row + 2}: non-numeric score {qrels['score'].iloc[row]!r}")
    qrels = qrels.assign(score=score, line=np.arange(len(qrels)) + 2)  # file line of each row (header = 1)
    qrels = qrels[qrels["score"] > 0].reset_index(drop=True)

    for name, df in (("corpus.jsonl", corpus), ("queries.jsonl", queries)):
        dup = df["_id"].duplicated()
        if dup.any():
            row = int(np.flatnonzero(dup.to_numpy())[0])
            raise DataError(f"{root / name}: duplicate _id {df['_id'].iloc[row]!r} (record {row + 1})")
    for field, known, where in (("corpus_id", corpus["_id"], "corpus.jsonl"),
                                ("parallel_id", queries["parallel_id"], "queries.jsonl")):
        unknown = ~qrels[field].isin(set(known))
        if unknown.any():
            row = int(np.flatnonzero(unknown.to_numpy())[0])
            raise DataError(f"{qrels_path}, line {int(qrels['line'].iloc[row])}: {field} {qrels[field].iloc[row]!r} "
                            f"is not in {where}")
    qrels = qrels[["parallel_id", "corpus_id", "score"]]
    no_rel = ~queries["parallel_id"].isin(set(qrels["parallel_id"]))
    if no_rel.any():
        row = int(np.flatnonzero(no_rel.to_numpy())[0])
        raise DataError(
            f"{root / 'queries.jsonl'}: query {queries['_id'].iloc[row]!r} (parallel_id "
            f"{queries['parallel_id'].iloc[row]!r}) has no relevant document in qrels.tsv"
        )
    return ParallelRetrievalData(corpus, queries, qrels)
