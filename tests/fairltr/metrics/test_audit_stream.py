"""The streamed audit of a Parquet table (fairltr.metrics.audit_stream) equals the audit in memory:
tables, worst cases, unknown counts and the query-bootstrap intervals, whatever the batch size."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr.errors import ConfigError, DataError
from fairltr.metrics import AuditConfig, audit_ranking
from fairltr.metrics.audit_stream import stream_audit

from audit_tables import C, table  # noqa: E402  (tests/ is on the path: tests/conftest.py)

UNKNOWN = ("", "Decline to state")


@pytest.fixture(scope="module")
def grouped(tmp_path_factory):
    df = table(5).sort_values("qid", kind="stable").reset_index(drop=True)
    path = tmp_path_factory.mktemp("stream") / "t.parquet"
    df.to_parquet(path, index=False, row_group_size=300)
    return df, path


@pytest.mark.parametrize("cfg", [
    AuditConfig(k=10, ci=0.9, n_boot=100, unknown_values=UNKNOWN),
    AuditConfig(k=5, ci=0.9, n_boot=100, scoring="sample", unknown_values=UNKNOWN, exclude_small=False),
    AuditConfig(k=5, ci=0, scoring="per-query", unknown_values=UNKNOWN),
], ids=["selection", "scoring-sample", "scoring-per-query"])
@pytest.mark.parametrize("batch_rows", [77, 100_000])
def test_streamed_audit_equals_the_audit_in_memory(grouped, cfg, batch_rows):
    df, path = grouped
    a = audit_ranking(df, "score", columns=C, config=cfg)
    b = stream_audit(path, columns=C, config=cfg, score_column="score", batch_rows=batch_rows)
    pd.testing.assert_frame_equal(a.table, b.table, rtol=1e-9, check_dtype=False)
    assert a.metrics.keys() == b.metrics.keys() and a.unknown_counts == b.unknown_counts
    for key, value in a.metrics.items():
        assert b.metrics[key] == pytest.approx(value, rel=1e-9, nan_ok=True), key


def test_ranks_stream_as_scores(grouped, tmp_path):
    df, _ = grouped
    ranked = df.assign(rank=df.groupby("qid")["score"].rank(ascending=False, method="min").astype(int))
    ranked.to_parquet(tmp_path / "r.parquet", index=False)
    cfg = AuditConfig(k=10, ci=0, unknown_values=UNKNOWN)
    a = stream_audit(tmp_path / "r.parquet", columns=C, config=cfg, rank_column="rank")
    b = audit_ranking(df, "score", columns=C, config=cfg)
    assert a.metrics["impact_ratio_at_10"] == pytest.approx(b.metrics["impact_ratio_at_10"], rel=1e-12)


def test_ungrouped_tables_and_few_queries_are_refused(grouped, tmp_path):
    df, _ = grouped
    df.sample(frac=1.0, random_state=0).to_parquet(tmp_path / "shuffled.parquet", index=False)
    with pytest.raises(DataError, match="not grouped by query"):
        stream_audit(tmp_path / "shuffled.parquet", columns=C, config=AuditConfig(ci=0, unknown_values=UNKNOWN),
                     score_column="score")
    df[df["qid"] < 10].to_parquet(tmp_path / "few.parquet", index=False)
    with pytest.raises(ConfigError, match="30 queries"):
        stream_audit(tmp_path / "few.parquet", columns=C, config=AuditConfig(ci=0.9, unknown_values=UNKNOWN),
                     score_column="score")
    with pytest.raises(DataError, match="missing value"):
        stream_audit(tmp_path / "few.parquet", columns=C, config=AuditConfig(ci=0), score_column="score")
