"""``fairltr rerank --method fair --p "A=0.2,B=0.1"`` (multinomial FA*IR) through click's test runner:
the output against brute-force enumeration (the multinomial test's fail probability over every
group sequence, the adjusted alpha over every binomial CDF value, the best fair ranking over
every permutation), the two-category case against binomial FA*IR, and the one-line refusals."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy.stats import binom

import fairltr.cli  # noqa: F401 - registers the command modules
from fairltr.cli.app import cli
from fairltr.fair import rerank_multinomial

K, P, ALPHA = 6, (0.4, 0.3), 0.2  # protected B (0.4) and H (0.3); W the rest


def _brute_fail(table: np.ndarray, p: tuple) -> float:
    """P(some prefix holds fewer than m_j(i) of group j), summed over all (g + 1)^k sequences."""
    k, g = table.shape
    probs = [1 - sum(p), *p]
    total = 0.0
    for seq in itertools.product(range(g + 1), repeat=k):
        counts = np.cumsum(np.asarray(seq)[:, None] == np.arange(1, g + 1)[None, :], axis=0)
        if (counts < table).any():
            total += float(np.prod([probs[x] for x in seq]))
    return total


def _brute_table(k: int, p: tuple, alpha: float) -> np.ndarray:
    """The table at the largest binomial CDF value alpha_c <= alpha whose brute-force fail
    probability is <= alpha (the table only changes at those values)."""
    i = np.arange(1, k + 1)
    cands = sorted({float(binom.cdf(m, n, pj)) for pj in p for n in range(1, k + 1) for m in range(n + 1)})
    best = None
    for a in cands:
        if a > alpha:
            break
        table = np.stack([binom.ppf(a, i, pj) for pj in p], axis=1).astype(int)
        if _brute_fail(table, p) <= alpha:
            best = table
    return best


def _best_fair(groups: np.ndarray, scores: np.ndarray, table: np.ndarray) -> tuple | None:
    """The score sequence, lexicographically largest, of the permutations passing ``table``."""
    best = None
    for perm in itertools.permutations(range(len(groups))):
        counts = np.cumsum(groups[list(perm)][:, None] == np.arange(1, table.shape[1] + 1)[None, :], axis=0)
        if (counts >= table).all():
            seq = tuple(scores[list(perm)])
            best = seq if best is None or seq > best else best
    return best


def _invoke(*args: str):
    return CliRunner().invoke(cli, ["rerank", *args])


def test_rerank_multinomial_cli_matches_enumeration(tmp_path):
    rng = np.random.default_rng(3)
    n_q = 6
    groups = np.concatenate([rng.permutation(np.r_[1, 2, rng.choice(3, K - 2, p=[0.6, 0.2, 0.2])])
                             for _ in range(n_q)])
    df = pd.DataFrame({"qid": np.repeat(np.arange(n_q), K), "race": np.array(["W", "B", "H"])[groups],
                       "pred": rng.normal(size=n_q * K)})
    src, dst = tmp_path / "scored.csv", tmp_path / "fair.csv"
    df.to_csv(src, index=False)
    res = _invoke("--input", str(src), "--scores-col", "pred", "--query", "qid", "--group", "race",
                  "--p", "B=0.4,H=0.3", "--alpha", str(ALPHA), "--out", str(dst))
    assert res.exit_code == 0, res.output
    assert "method: fair (multinomial)  queries: 6  infeasible (a protected category ran out): 0" in res.output
    table = _brute_table(K, P, ALPHA)
    assert table[-1].sum() > 0  # the test bites at this size
    out = pd.read_csv(dst)
    for q in range(n_q):
        mine = out[out["qid"] == q].sort_values("rank")
        want = _best_fair(groups[df["qid"] == q], df.loc[df["qid"] == q, "pred"].to_numpy(), table)
        np.testing.assert_allclose(mine["pred"].to_numpy(), want)


def test_rerank_two_categories_equals_binomial(tmp_path):
    rng = np.random.default_rng(1)
    n = 120
    df = pd.DataFrame({"qid": np.repeat([1, 2, 3, 4], n // 4), "grp": (rng.random(n) < 0.25).astype(int),
                       "pred": rng.normal(size=n)})
    src, dst = tmp_path / "scored.csv", tmp_path / "fair.csv"
    df.to_csv(src, index=False)
    res = _invoke("--input", str(src), "--scores-col", "pred", "--query", "qid", "--group", "grp",
                  "--p", "0.5", "--k", "20", "--out", str(dst))
    assert res.exit_code == 0, res.output
    binomial = pd.read_csv(dst)
    multi = rerank_multinomial(df, "pred", p={"1": 0.5}, k=20, query="qid", group="grp")
    key = ["qid", "rank"]
    pd.testing.assert_frame_equal(binomial.sort_values(key).reset_index(drop=True)[["qid", "pred", "rank"]],
                                  multi.sort_values(key).reset_index(drop=True)[["qid", "pred", "rank"]])
    assert (binomial.groupby("qid")["fair_feasible"].first() == multi.groupby("qid")["fair_feasible"].first()).all()


@pytest.mark.parametrize("p, group, message", [
    ("B=0.2,X=0.1", "race", "p names category 'X', which does not occur in group column 'race'"),
    ("B=0.6,H=0.5", "race", "minimum shares sum to 1.1"),
    ("B=1.2", "race", "minimum share of 'B' must be in the open interval (0, 1)"),
    ("B=0", "race", "minimum share of 'B' must be in the open interval (0, 1)"),
    ("B=0.2,H", "race", "'H' is not 'category=share'"),
    ("B=0.2,B=0.1", "race", "category 'B' given twice"),
    ("B=0.2,H=0.1,W=0.1", "race", "leave at least one non-protected category out of --p"),
    ("1=0.2", "bin", "group column 'bin' has 2 categories (0, 1); that is binomial FA*IR: give --p as a plain"),
])
def test_rerank_multinomial_refusals(tmp_path, p, group, message):
    src = tmp_path / "scored.csv"
    pd.DataFrame({"query_id": [1, 1, 1, 1], "race": ["W", "B", "H", "W"], "bin": [0, 1, 0, 1],
                  "score": [0.1, 0.2, 0.3, 0.4]}).to_csv(src, index=False)
    res = _invoke("--input", str(src), "--group", group, "--p", p, "--out", str(tmp_path / "o.csv"))
    assert res.exit_code != 0 and message in res.output, res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "o.csv").exists()
