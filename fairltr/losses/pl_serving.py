"""Serving a Plackett-Luce policy by sampling: one ranking per request, reproducible per request id.

A PL policy (:class:`fairltr.PLRank`) is deployed by drawing a ranking per request (amortised
fairness: the exposure it was trained for is the expectation over requests). For replays and
audits the draw must be a function of the request alone: here the ranking of query q in a
request with id r is

* seed_q = the first 8 bytes (little-endian) of BLAKE2b(salt, r, q) over their UTF-8 text
  (:func:`request_seed`: stable across processes, platforms and Python's hash randomisation);
* u_qj = a counter-based uniform in (0, 1) of (seed_q, j) for the query's j-th row
  (SplitMix64's output function of seed_q + (j + 1) * 0x9E3779B97F4A7C15, top 53 bits, +1/2 ulp);
* the items in decreasing order of s_j + G_j with G_j = -log(-log u_qj), a standard Gumbel
  (the Gumbel-max trick: the order is a PL draw with P(i first) = exp(s_i) / sum_j exp(s_j)).

So a request id (and the salt: a model's own, so that two models do not share draws) fixes the
ranking of each of its queries, whatever else the request holds and in whatever order its
queries come; the j-th row of a query keeps its noise, so the same rows in the same order give
the same ranking. Everything is vectorised over the rows; only the seeds are hashed per query.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pandas as pd

from fairltr.errors import ConfigError, DataError

__all__ = ["request_seed", "counter_uniforms", "sampled_ranks"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _text(value: Any) -> bytes:
    """The UTF-8 text of a salt or query id (a numpy scalar as its Python value: ``np.int64(3)`` -> ``b"3"``)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, np.generic):
        value = value.item()
    return str(value).encode("utf-8")


def request_seed(request_id: str, query_id: Any = "", salt: str = "") -> int:
    """seed = int.from_bytes(BLAKE2b-64(len-prefixed salt, request id, query id), "little"): a
    uint64 that depends on the three texts only (``str`` of the query id: ``3`` and ``"3"`` agree)."""
    if not isinstance(request_id, str) or not request_id:
        raise ConfigError(f"a sampled ranking needs a non-empty request id string, got {request_id!r}")
    h = hashlib.blake2b(digest_size=8)
    for part in (_text(salt), request_id.encode("utf-8"), _text(query_id)):
        h.update(len(part).to_bytes(8, "little"))  # length-prefixed: ("ab", "c") != ("a", "bc")
        h.update(part)
    return int.from_bytes(h.digest(), "little")


def counter_uniforms(seeds: np.ndarray, counters: np.ndarray) -> np.ndarray:
    """u = ((SplitMix64(seed + (counter + 1) * golden) >> 11) + 0.5) / 2^53, elementwise over
    broadcast uint64 ``seeds`` and ``counters``: doubles in (0, 1), never 0 or 1."""
    seeds = np.asarray(seeds, dtype=np.uint64)
    counters = np.asarray(counters, dtype=np.uint64)
    with np.errstate(over="ignore"):  # uint64 arithmetic wraps by design
        z = seeds + (counters + np.uint64(1)) * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        z = z ^ (z >> np.uint64(31))
    return ((z >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / 9007199254740992.0)


def sampled_ranks(scores: np.ndarray, query: np.ndarray | pd.Series, request_id: str, salt: str = ""
                  ) -> np.ndarray:
    """The 1-based rank of every row in its query's sampled ranking (module docstring) for the
    request ``request_id``: ``scores`` (n,) the policy's scores, ``query`` (n,) each row's query
    id (any values; a query's rows need not be adjacent). int64 (n,), aligned with the rows."""
    s = np.asarray(scores, dtype=np.float64)
    q = np.asarray(query)
    if s.ndim != 1 or q.shape != s.shape:
        raise DataError(f"scores and query ids must be 1-D of one length, got {s.shape} and {q.shape}")
    bad = np.flatnonzero(~np.isfinite(s))
    if bad.size:
        raise DataError(f"score of row {int(bad[0])} is {s[bad[0]]}: a sampled ranking needs finite scores")
    if s.size == 0:
        return np.zeros(0, dtype=np.int64)
    codes, uniques = pd.factorize(q, sort=False)
    seeds = np.array([request_seed(request_id, u, salt) for u in uniques], dtype=np.uint64)
    position = pd.Series(codes).groupby(codes).cumcount().to_numpy()        # the row's place in its query
    u = counter_uniforms(seeds[codes], position)
    keys = s - np.log(-np.log(u))                                           # s + Gumbel(0, 1)
    order = np.lexsort((position, -keys, codes))                            # by query, key descending
    first = np.r_[0, np.flatnonzero(np.diff(codes[order])) + 1]
    ranks = np.empty(s.size, dtype=np.int64)
    ranks[order] = np.arange(s.size) - np.repeat(first, np.diff(np.r_[first, s.size])) + 1
    return ranks
