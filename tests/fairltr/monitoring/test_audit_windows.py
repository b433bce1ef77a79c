"""A window's audit at every cut-off its gates name: the figures and the failing categories of a
``four_fifths@5`` gate come from the audit at k = 5, not from ``--k`` (issue 29)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr.columns import RankingColumns
from fairltr.metrics import AuditConfig, audit_ranking
from fairltr.monitoring.audit_windows import audit_windows, failing_categories


def test_gate_cutoffs_get_their_own_audit_table():
    rng = np.random.default_rng(0)
    n = 30 * 12
    frame = pd.DataFrame({"query_id": np.repeat(np.arange(30), 12), "race": rng.choice(["A", "B", "C"], n),
                          "judgment": rng.integers(0, 2, n).astype(float), "score": rng.normal(size=n)})
    frame.loc[frame["race"] == "B", "score"] -= 0.7
    c = RankingColumns(query="query_id", group="race", judgment="judgment")
    cfg = AuditConfig(k=10, ci=0)
    (w,) = audit_windows([(0, pd.Timestamp("2026-01-05"), pd.Timestamp("2026-02-02"), frame)],
                         lambda f: f["score"].to_numpy(), columns=c, config=cfg, extra_ks=[5])
    at5 = audit_ranking(frame, "score", columns=c, config=AuditConfig(k=5, ci=0))
    assert w.metrics["impact_ratio_at_5"] == pytest.approx(at5.metrics["impact_ratio_at_5"], rel=1e-12)
    pd.testing.assert_frame_equal(w.table_at("impact_ratio_at_5"), at5.table)
    assert w.table_at("impact_ratio_at_10") is w.table
    cats = failing_categories(w.table_at("impact_ratio_at_5"), "impact_ratio_at_5", lambda b: b[0] >= 0.8, False)
    want = at5.table[(at5.table["impact_ratio_at_k"] < 0.8) & ~at5.table["excluded"]]
    assert [x["category"] for x in cats] == list(want["category"])
    assert [x["value"] for x in cats] == pytest.approx(list(want["impact_ratio_at_k"]))
