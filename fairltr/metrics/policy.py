"""Metrics of a stochastic ranking policy, judged as a policy: from S sampled rankings per query.

A Plackett-Luce policy (:class:`fairltr.PLRank`) is deployed by sampling one ranking per
request, so its figures are expectations over its rankings, estimated from ``n_samples`` seeded
draws per query (the Gumbel trick, :func:`fairltr.losses.plackett_luce.sample_rankings`). With
y^1..y^S the sampled rankings of query q and rank_s(i) the 1-based rank of item i in y^s:

* ``expected_ndcg_at_<k>`` = mean over queries (those with IDCG@k > 0) of
  (1/S) sum_s nDCG@k(y^s), nDCG@k as :func:`fairltr.metrics.ndcg_at_k` defines it (its gains and
  discount: the deterministic ``ndcg_at_<k>`` of the same ranking; the ideal DCG once per query);
* expected exposure of item i: Exp_i = (1/S) sum_s v(rank_s(i)), v(r) = 1 / ln(1 + r) (the
  position bias of SPEC section 3 and of the PLRank objective); group exposure Exp_q(G) = the
  mean of Exp_i over the query's items of G, protected = every group >= 1;
  ``expected_exposure_protected`` / ``expected_exposure_nonprotected`` = the means over queries
  of Exp_q(protected) / Exp_q(non-protected), ``expected_exposure_ratio`` = the mean over the
  queries holding both sides of R_q = Exp_q(protected) / Exp_q(non-protected);
* ``expected_exposure_disparity`` = 1 - min(R, 1/R) with R the reported
  ``expected_exposure_ratio`` (0 at parity, lower is better): SPEC section 3's
  ``exposure_disparity`` of the policy's expected group exposure, the quantity (group means of
  Exp_i, the same v) whose gap the PLRank objective penalises (lambda * (Exp(G_0) - Exp(G_p))^2
  per query). For S = 1 every figure is the deterministic figure of that one ranking;
* ``ee_l``, ``ee_d``, ``ee_r``: expected exposure (Diaz et al., CIKM 2020) with the RBP browsing
  model, patience ``patience`` (0.5), of the sampled policy against the judgments' ideal policy
  (:mod:`fairltr.metrics.expected_exposure`), averaged over queries.

Everything is computed on padded queries (length buckets) with masks, over all queries at once;
the samples are processed in chunks of about 2^22 slots, so memory does not grow with S.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd
import torch

from fairltr.buckets import BucketedBatch
from fairltr.columns import RankingColumns
from fairltr.data import RankingBatch
from fairltr.errors import ConfigError
from fairltr.losses.plackett_luce import ranks_of, sample_rankings
from fairltr.metrics.expected_exposure import check_patience, ee_from_exposure, rbp_exposure, target_exposure
from fairltr.metrics.exposure import position_bias
from fairltr.metrics.parity import exposure_disparity
from fairltr.metrics.relevance import _gains

__all__ = ["POLICY_DEFAULT_SAMPLES", "policy_metrics_per_query", "aggregate_policy", "evaluate_policy",
           "check_eval_samples"]

POLICY_DEFAULT_SAMPLES = 100
_CHUNK_SLOTS = 1 << 22


def check_eval_samples(n_samples: int) -> int:
    """The number of sampled rankings per query, an integer >= 1."""
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ConfigError(f"eval samples must be an integer >= 1, got {n_samples!r}")
    return int(n_samples)


def policy_metrics_per_query(scores: torch.Tensor, batch: RankingBatch, *, n_samples: int = POLICY_DEFAULT_SAMPLES,
                             generator: torch.Generator | None = None, k: Iterable[int] = (10,),
                             patience: float = 0.5, rankings: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """Per-query (Q,) policy figures of the module docstring (NaN where undefined) for the
    Plackett-Luce policy of ``scores`` (Q, N) on one padded ``batch``: ``n_samples`` rankings
    drawn with ``generator``, or the given ``rankings`` (S, Q, N) (item indices, real items first)."""
    mask = batch.mask.to(scores.device)
    judgments = batch.judgments.to(scores.device, torch.float64)
    groups = batch.groups.to(scores.device)
    k = tuple(k)
    check_patience(patience)
    if rankings is None:
        rankings = sample_rankings(scores.detach().to(torch.float64), mask, check_eval_samples(n_samples), generator)
    S, Q, N = rankings.shape
    gains = _gains(judgments, mask)                                               # nDCG's gains (relevance.py)
    disc = 1.0 / torch.log2(torch.arange(2, N + 2, dtype=torch.float64, device=mask.device))
    ideal = (torch.sort(gains, dim=-1, descending=True).values * disc).cumsum(-1)  # IDCG@k at column k - 1
    cols = torch.tensor([min(kk, N) - 1 for kk in k], device=mask.device)
    dcg = torch.zeros(Q, len(k), dtype=torch.float64, device=mask.device)
    exposure = torch.zeros(Q, N, dtype=torch.float64, device=mask.device)
    rbp = torch.zeros_like(exposure)
    step = max(1, _CHUNK_SLOTS // max(1, Q * N))
    for start in range(0, S, step):
        block = rankings[start:start + step]
        placed = (torch.gather(gains.expand(block.shape[0], Q, N), -1, block) * disc).cumsum(-1)
        dcg += placed[..., cols].sum(0)
        ranks = ranks_of(block) + 1                                               # (B, Q, N) 1-based
        exposure += position_bias(ranks).masked_fill(~mask, 0.0).sum(0)
        rbp += rbp_exposure(ranks, mask, patience).sum(0)
    idcg = ideal[:, cols]
    nan = torch.tensor(float("nan"), dtype=torch.float64, device=mask.device)
    ndcg = torch.where(idcg > 0, dcg / S / idcg.clamp(min=1e-300), nan)
    out = {f"expected_ndcg_at_{kk}": ndcg[:, i] for i, kk in enumerate(k)}
    exposure /= S
    out.update(_group_exposure(exposure, groups, mask))
    out.update(ee_from_exposure(rbp / S, target_exposure(judgments, mask, patience)))
    return out


def _group_exposure(exposure: torch.Tensor, groups: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-query expected exposure of the protected (>= 1) and non-protected items and their ratio."""
    prot, nprot = (groups >= 1) & mask, (groups == 0) & mask
    n_p, n_n = prot.sum(-1).to(torch.float64), nprot.sum(-1).to(torch.float64)
    nan = torch.tensor(float("nan"), dtype=torch.float64, device=exposure.device)
    exp_p = torch.where(n_p > 0, (exposure * prot).sum(-1) / n_p.clamp(min=1), nan)
    exp_n = torch.where(n_n > 0, (exposure * nprot).sum(-1) / n_n.clamp(min=1), nan)
    return {"expected_exposure_protected": exp_p, "expected_exposure_nonprotected": exp_n,
            "expected_exposure_ratio": torch.where(exp_n > 0, exp_p / exp_n, nan)}


def aggregate_policy(per_query: dict[str, torch.Tensor]) -> dict[str, float]:
    """Means over the queries where each figure is defined, with ``<name>_n_queries``
    (:func:`fairltr.metrics.aggregate`); and ``expected_exposure_disparity`` = 1 - min(R, 1/R)
    of the averaged ``expected_exposure_ratio`` R (as ``exposure_disparity`` of the reported ratio)."""
    from fairltr.metrics.evaluate import aggregate

    out = aggregate(per_query)
    if "expected_exposure_ratio" in out:
        out["expected_exposure_disparity"] = float(exposure_disparity(out["expected_exposure_ratio"]))
        out["expected_exposure_disparity_n_queries"] = out["expected_exposure_ratio_n_queries"]
    return out


def evaluate_policy(df: pd.DataFrame, scores: Sequence[float] | np.ndarray | pd.Series | str, *,
                    columns: RankingColumns | None = None, n_samples: int = POLICY_DEFAULT_SAMPLES, seed: int = 0,
                    k: Iterable[int] = (10,), patience: float = 0.5) -> dict[str, float]:
    """The policy figures (module docstring) of the Plackett-Luce policy whose scores are ``scores``
    (one per row of ``df``, or a column name), averaged over queries: ``n_samples`` rankings per
    query, drawn from ``torch.Generator().manual_seed(seed)`` (the same seed, the same figures)."""
    from fairltr.metrics.evaluate import score_buckets

    n_samples = check_eval_samples(n_samples)
    buckets, s = score_buckets(df, scores, columns=columns)
    gen = torch.Generator().manual_seed(int(seed))
    per = [policy_metrics_per_query(si, b, n_samples=n_samples, generator=gen, k=k, patience=patience)
           for si, b in zip(s, buckets.batches)]
    return aggregate_policy(_in_table_order(buckets, per))


def _in_table_order(buckets: BucketedBatch, per: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    return {name: buckets.per_query([p[name] for p in per]) for name in per[0]}
