"""Compiled CPU kernels (numba, the ``[fast]`` extra) for Plackett-Luce sampling and the PL-Rank gradient.

The math is that of :mod:`fairltr.losses.plackett_luce` (same keys, same gradient); these loops
only fuse the per-element passes that the tensor version makes one by one. One block of samples
(``BLOCK_ELEMENTS`` samples x queries x candidates) stays in cache from the random bits to the
gradient:

1. numpy's uniform doubles (53 bits, ``Generator(SFC64)``, seeded by one draw of the caller's torch
   generator), written into the block's own buffer;
2. numpy's SIMD ``log``; key = -log(u) exp(-s) (the exponential race: its increasing order is a
   PL draw); the key's bits with the item index in the low ``bit_length(n - 1)`` bits (a
   non-negative double's bits order as the double; :func:`plackett_luce._argsort_rows`).
3. numpy's integer sort of every row (rows <= 256 wide: its sorting network; wider rows are sorted
   in runs of 256 and merged here, since the wide sort's partition step is slow on some CPUs).
4. the PL-Rank-3 pass per sampled row: gathers, the reverse sum Z_k, 1/Z_k, the three forward
   sums and the scatter into the gradient, in one loop each (no (S, Q, N) temporaries).

Importing this module imports numba (about 0.3-1 s; :func:`available` is cheap and lazy); the
first call of each kernel compiles it (cached on disk by numba afterwards).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = ["BLOCK_ELEMENTS", "RUN", "Inputs", "prepare", "sample", "gradient_of_rankings", "sample_gradient",
           "sample_key_blocks", "plrank_rows", "unpack_rows", "key_width", "sort_rows"]

# elements per block: the keys (8 bytes each) and the row scratch stay in the core's L2 cache
BLOCK_ELEMENTS = 1 << 17
# rows wider than this are sorted in runs of RUN and merged (numpy's network sorts <= 256 wide)
RUN = 256
_MAX_INT64 = np.iinfo(np.int64).max


@njit(cache=True, nogil=True, boundscheck=False)
def _pack_keys(log_u, neg_rate, low, keys):  # pragma: no cover - compiled
    """keys[b, q, k] = bits(log_u[b, q, k] * neg_rate[q, k]) with the low bits replaced by k
    (neg_rate = -exp(-s), -inf on padding: the key is +inf there and sorts last; a real item's key
    is at most the largest double, even for u = 0). Columns of ``keys`` past N (the run padding of
    wide rows) get int64 max. ``keys`` may be ``log_u``'s own memory (read before written)."""
    B, Q, N = log_u.shape
    width = keys.shape[2]
    high = ~low
    for b in range(B):
        for q in range(Q):
            for k in range(N):
                x = log_u[b, q, k] * neg_rate[q, k]
                if x > 1.7976931348623157e308 and neg_rate[q, k] > -np.inf:
                    x = 1.7976931348623157e308
                v = np.float64(x)
                keys[b, q, k] = (v.view(np.int64) & high) | k
            for k in range(N, width):
                keys[b, q, k] = 9223372036854775807


_BIG = np.iinfo(np.int64).max
_SMALL = np.iinfo(np.int64).min


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def _merge_runs(keys, run, length, scratch):  # pragma: no cover - compiled
    """Bottom-up merge of the first ``length`` columns of every row of ``keys`` (R, W), whose
    runs of ``run`` are each sorted, into one sorted prefix (columns past ``length`` are left as
    they are; ``scratch``: (W,) int64). Each merge runs from both ends at once (the smallest
    outputs from the front, the largest from the back: two independent chains), branch-free."""
    R, W = keys.shape
    for r in range(R):
        src = keys[r]
        dst = scratch
        width = run
        flipped = False
        while width < length:
            for lo in range(0, length, 2 * width):
                mid = min(lo + width, length)
                hi = min(lo + 2 * width, length)
                if mid >= hi:
                    for o in range(lo, hi):
                        dst[o] = src[o]
                    continue
                i = lo
                j = mid
                i_back = mid - 1
                j_back = hi - 1
                half = (hi - lo) // 2
                for t in range(half):
                    a = src[min(i, mid - 1)] if i < mid else _BIG
                    b = src[min(j, hi - 1)] if j < hi else _BIG
                    take_b = b < a
                    dst[lo + t] = b if take_b else a
                    j += take_b
                    i += 1 - take_b
                    a = src[max(i_back, lo)] if i_back >= lo else _SMALL
                    b = src[max(j_back, mid)] if j_back >= mid else _SMALL
                    take_a = a > b
                    dst[hi - 1 - t] = a if take_a else b
                    i_back -= take_a
                    j_back -= 1 - take_a
                if (hi - lo) % 2:
                    a = src[min(i, mid - 1)] if i < mid else _BIG
                    b = src[min(j, hi - 1)] if j < hi else _BIG
                    dst[lo + half] = b if b < a else a
            src, dst = dst, src
            flipped = not flipped
            width *= 2
        if flipped:
            for o in range(length):
                keys[r, o] = src[o]


def sort_rows(keys: np.ndarray, length: int, scratch: np.ndarray) -> None:
    """Sort every row of the int64 ``keys`` (..., W) in place: W <= RUN, or W a multiple of RUN
    whose columns past ``length`` hold int64 max (they stay last)."""
    width = keys.shape[-1]
    if width <= RUN:
        keys.sort(axis=-1)
        return
    rows = keys.reshape(-1, width)
    rows.reshape(-1, RUN).sort(axis=-1)
    _merge_runs(rows, RUN, length, scratch)


def key_width(n: int) -> int:
    """The stored row width for rows of n candidates: n, or n rounded up to a multiple of RUN."""
    return n if n <= RUN else -(-n // RUN) * RUN


def sample_key_blocks(neg_rate: np.ndarray, n_samples: int, seed: int, block_elements: int | None = None
                      ) -> Iterator[tuple[int, np.ndarray, int]]:
    """Yields (first sample, sorted packed keys (B, Q, W) int64, low mask) for consecutive blocks
    of the ``n_samples`` PL draws of every query (item = key & low); ``neg_rate`` (Q, N) =
    -exp(-s) (-inf on padding). The random bits (one SFC64 stream seeded by ``seed``) are consumed
    in the order of one (S, Q, N) draw whatever the block size, so a seed gives the same rankings
    for every block size. The yielded array is reused by the next block."""
    neg_rate = np.ascontiguousarray(neg_rate, dtype=np.float64)
    Q, N = neg_rate.shape
    low = np.int64((1 << max(1, (N - 1).bit_length())) - 1)
    per_sample = Q * N
    step = max(1, (BLOCK_ELEMENTS if block_elements is None else block_elements) // max(1, per_sample))
    count = min(step, n_samples)
    generator = np.random.Generator(np.random.SFC64(seed))
    width = key_width(N)
    keys = np.empty((count, Q, width), dtype=np.int64)
    # the uniforms and their logs live in the keys' own memory unless the rows are padded for the merge
    log_u = keys.view(np.float64) if width == N else np.empty((count, Q, N))
    merge = np.empty(width, dtype=np.int64)
    for start in range(0, n_samples, step):
        count = min(step, n_samples - start)
        u = log_u[:count]
        generator.random(out=u)                      # numpy's doubles: 53 bits, in [0, 1)
        np.log(u, out=u)
        k = keys[:count]
        _pack_keys(u, neg_rate, low, k)
        sort_rows(k, N, merge)
        yield start, k, int(low)


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy", fastmath={"contract"})
def plrank_rows(keys, low, e_rho, theta, n_real, floor, grad):  # pragma: no cover - compiled
    """Adds the PL-Rank-3 terms of the sorted rows ``keys`` (B, Q, W) (item = key & low) to
    ``grad`` (Q, N): for position k (0-based) holding item d, with Z_k = sum_{x>=k} e_{y_x},
    R_k = sum_{x>=k} theta_x rho_{y_x}:  g_d = R_{k+1} + e_d (rho_d a_k - b_k),
    a_k = sum_{j<=k} theta_j / Z_j, b_k = sum_{j<=k} R_j / Z_j (Z floored at ``floor``).
    ``e_rho`` (Q, N, 2) holds (e_d, rho_d) side by side (one cache line for both). Only the first
    ``n_real[q]`` positions of a row (the real items) are visited."""
    B, Q, W = keys.shape
    N = e_rho.shape[1]
    items = np.empty(N, dtype=np.uint64)
    e_at = np.empty(N)
    rho_at = np.empty(N)
    inv_z = np.empty(N)
    mask = np.uint64(low)
    for q in range(Q):  # a query's e, rho and gradient rows stay in L1 across its samples
        n = n_real[q]
        er_q = e_rho[q]
        g_q = grad[q]
        for b in range(B):
            row = keys[b, q]
            z = 0.0
            total = 0.0
            for j in range(n):
                k = n - 1 - j
                d = np.uint64(row[k]) & mask
                items[k] = d
                x = er_q[d, 0]
                y = er_q[d, 1]
                e_at[k] = x
                rho_at[k] = y
                z += x
                inv_z[k] = z
                total += theta[k] * y
            for k in range(n):
                inv_z[k] = 1.0 / max(inv_z[k], floor)
            placed = 0.0
            a = 0.0
            c = 0.0
            for k in range(n):
                iz = inv_z[k]
                th = theta[k]
                c += (total - placed) * iz
                placed += th * rho_at[k]
                a += th * iz
                g_q[items[k]] += (total - placed) + e_at[k] * (rho_at[k] * a - c)


@njit(cache=True, nogil=True, boundscheck=False)
def unpack_rows(keys, low, out):  # pragma: no cover - compiled
    """out[b, q, k] = keys[b, q, k] & low for the first N = out.shape[2] columns (the rankings)."""
    B, Q, N = out.shape
    for b in range(B):
        for q in range(Q):
            for k in range(N):
                out[b, q, k] = keys[b, q, k] & low


class Inputs(NamedTuple):
    """What the kernels read of one batch (float64 numpy): see :func:`prepare`."""

    neg_rate: np.ndarray  # (Q, N): -exp(-(s - max)), capped; -inf on padding
    e_rho: np.ndarray     # (Q, N, 2): exp(s - max) (0 on padding) and the reward rho (0 on padding)
    theta: np.ndarray     # (N,): 1 / log2(1 + k)
    n_real: np.ndarray    # (Q,) int64: real items per query
    floor: float          # Z_k is floored here (as the tensor code does)


def prepare(scores: np.ndarray, mask: np.ndarray, rewards: np.ndarray | None = None) -> Inputs:
    """The kernels' inputs from scores (Q, N), the real-item mask and the per-item rewards
    (None: zeros, for sampling alone). The scores are shifted so that each query's best real
    score is 0 (PL is shift-invariant); exp(-s) is capped at float64 max / 1e4 so that a real
    item's key (E * rate, E <= 37 for numpy's doubles) stays finite and sorts before padding."""
    scores = np.asarray(scores, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    filled = np.where(mask, scores, -np.inf)
    top = filled.max(axis=-1, keepdims=True)
    shifted = filled - np.where(np.isfinite(top), top, 0.0)
    with np.errstate(over="ignore"):
        rate = np.minimum(np.exp(-shifted), np.finfo(np.float64).max / 1e4)
    neg_rate = np.where(mask, -rate, -np.inf)
    e_rho = np.zeros((*scores.shape, 2))
    e_rho[..., 0] = np.exp(shifted)
    if rewards is not None:
        e_rho[..., 1] = np.where(mask, np.asarray(rewards, dtype=np.float64), 0.0)
    n = scores.shape[-1]
    theta = 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))
    return Inputs(neg_rate, e_rho, theta, mask.sum(axis=-1).astype(np.int64), np.finfo(np.float64).max ** -0.5)


def sample(inputs: Inputs, n_samples: int, seed: int) -> np.ndarray:
    """(S, Q, N) int64 rankings: item indices in ranked order (real items first)."""
    Q, N = inputs.neg_rate.shape
    out = np.empty((n_samples, Q, N), dtype=np.int64)
    for start, keys, low in sample_key_blocks(inputs.neg_rate, n_samples, seed):
        unpack_rows(keys, np.int64(low), out[start:start + len(keys)])
    return out


def gradient_of_rankings(inputs: Inputs, rankings: np.ndarray) -> np.ndarray:
    """Sum over the rankings (S, Q, N) of the PL-Rank-3 terms, (Q, N) (divide by S for the estimate)."""
    grad = np.zeros(inputs.neg_rate.shape)
    plrank_rows(np.ascontiguousarray(rankings, dtype=np.int64), np.int64(-1), inputs.e_rho, inputs.theta,
                inputs.n_real, inputs.floor, grad)
    return grad


def sample_gradient(inputs: Inputs, n_samples: int, seed: int) -> np.ndarray:
    """:func:`gradient_of_rankings` of :func:`sample`'s rankings for the same seed, block by block
    (the rankings are never stored)."""
    grad = np.zeros(inputs.neg_rate.shape)
    for _, keys, low in sample_key_blocks(inputs.neg_rate, n_samples, seed):
        plrank_rows(keys, np.int64(low), inputs.e_rho, inputs.theta, inputs.n_real, inputs.floor, grad)
    return grad
