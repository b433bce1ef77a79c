"""Compiled CPU kernels (numba, the ``[fast]`` extra) for Plackett-Luce sampling and the PL-Rank gradient.

The math is that of :mod:`fairltr.losses.plackett_luce` (same keys, same gradient); these loops
only fuse the per-element passes that the tensor version makes one by one. One block of samples
(``BLOCK_ELEMENTS`` samples x queries x candidates) stays in cache from the random bits to the
gradient:

1. numpy's SFC64 uniform doubles (53 bits; the generator seeded by numpy from one draw of the
   caller's torch generator, stepped in a compiled loop: the same doubles as
   ``Generator(SFC64(seed)).random()``), written into the block's own buffer;
2. numpy's SIMD ``log``; key = -log(u) exp(-s) (the exponential race: its increasing order is a
   PL draw); the key's bits with the item index in the low ``bit_length(n - 1)`` bits (a
   non-negative double's bits order as the double; :func:`plackett_luce._argsort_rows`).
3. the integer sort of every row (:func:`fairltr.row_sort.sort_rows`: numpy's sorting network for
   rows <= 256 wide; wider rows in runs of 256, merged by a compiled loop); with a DCG cut-off of
   at most ``SELECT_MAX`` no sort: each row's top K are selected in one scan;
4. the PL-Rank pass per sampled row (:func:`fairltr.losses.pl_policy_kernels.policy_rows`): the
   reverse sum Z_k, 1/Z_k, the forward sums and the scatter into the gradient of every reward
   channel, and the exposure and DCG when asked for, in one loop each (no (S, Q, N) temporaries).

Importing this module imports numba (about 0.3-1 s; :func:`fairltr.compiled.compiled_enabled`
says whether to, without importing it); the first call of each kernel compiles it (cached on disk
by numba afterwards).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
from fairltr.compiled import njit  # numba.njit, cached in the user cache folder

from fairltr.losses.pl_keys import (
    _LARGEST, _RATE_CAP, _fill_inputs, _pack_keys, _sfc64_uniforms, _shift_rows, _sfc64_warm_up, sfc64_state,
    unpack_rows,
)
from fairltr.losses.pl_policy_kernels import SELECT_MAX, add_tail_terms, disparity_terms, policy_rows, store_prefixes
from fairltr.row_sort import key_width, sort_rows

__all__ = ["BLOCK_ELEMENTS", "Inputs", "prepare", "sample", "gradient_of_rankings", "sample_gradient",
           "sample_key_blocks", "unpack_rows", "sfc64_state", "exposure_and_dcg", "PolicySums", "sample_gradient_two_pass",
           "baseline_spread", "disparity_terms"]

# elements per block: the keys (8 bytes each) and the row scratch stay in the core's L2 cache
BLOCK_ELEMENTS = 1 << 17


def _samples_per_block(per_sample: int, block_elements: int | None = None) -> int:
    """Samples per block: about ``block_elements`` (default BLOCK_ELEMENTS) elements, at least one."""
    return max(1, (BLOCK_ELEMENTS if block_elements is None else block_elements) // max(1, per_sample))


def _discounts(n: int) -> np.ndarray:
    """theta_k = 1 / log2(2 + k) for 0-based positions k < n (the DCG discount)."""
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def sample_key_blocks(inputs: "Inputs", n_samples: int, seed: int, block_elements: int | None = None,
                      sort: bool = True, state: np.ndarray | None = None) -> Iterator[tuple[int, np.ndarray, int]]:
    """Yields (first sample, sorted packed keys (B, Q, W) int64, low mask) for consecutive blocks
    of the ``n_samples`` PL draws of every query (item = key & low), from :func:`prepare`'s
    ``inputs``. The random bits (one SFC64 stream seeded by ``seed``) are consumed
    in the order of one (S, Q, N) draw whatever the block size, so a seed gives the same rankings
    for every block size. The yielded array is reused by the next block. ``sort=False``: the keys
    unsorted (slot k holds item k's key), for a selection of each row's smallest keys. ``state``:
    an SFC64 state to continue (advanced in place) instead of a new one from ``seed``."""
    neg_rate, cap = inputs.neg_rate, inputs.cap
    Q, N = neg_rate.shape
    low = np.int64((1 << max(1, (N - 1).bit_length())) - 1)
    per_sample = Q * N
    step = _samples_per_block(per_sample, block_elements)
    count = min(step, n_samples)
    state = sfc64_state(seed) if state is None else state
    width = key_width(N)
    keys = np.empty((count, Q, width), dtype=np.int64)
    # the uniforms and their logs live in the keys' own memory unless the rows are padded for the merge
    log_u = keys.view(np.float64) if width == N else np.empty((count, Q, N))
    for start in range(0, n_samples, step):
        count = min(step, n_samples - start)
        u = log_u[:count]
        _sfc64_uniforms(state, u.reshape(-1))        # numpy's SFC64 doubles: 53 bits, in [0, 1)
        np.log(u, out=u)
        k = keys[:count]
        _pack_keys(u, neg_rate, cap, low, k)
        if sort:
            sort_rows(k, N)
        yield start, k, int(low)


class Inputs(NamedTuple):
    """What the kernels read of one batch (float64 numpy): see :func:`prepare`."""

    neg_rate: np.ndarray  # (Q, N): -exp(-(s - max)), capped; -inf on padding
    cap: np.ndarray       # (Q, N): the largest double for real items, +inf on padding (a key's cap)
    e_rho: np.ndarray     # (Q, N, 1 + C): exp(s - max) (0 on padding), then the C rewards (0 on padding)
    theta: np.ndarray     # (N,): 1 / log2(1 + k)
    n_real: np.ndarray    # (Q,) int64: real items per query
    floor: float          # Z_k is floored here (as the tensor code does)
    reward_sums: np.ndarray  # (Q, C): each reward channel summed over the query's real items
    e: np.ndarray         # (Q, N): exp(s - max) alone (0 on padding), contiguous


def prepare(scores: np.ndarray, mask: np.ndarray, rewards: np.ndarray | None = None) -> Inputs:
    """The kernels' inputs from scores (Q, N), the real-item mask and the per-item rewards (Q, N),
    or several reward channels (C, Q, N) (None: one channel of zeros, for sampling alone). The
    scores are shifted so that each query's best real score is 0 (PL is shift-invariant); the rate
    exp(-s) = 1 / exp(s) is capped at float64 max / 1e4 so that a real item's key (E * rate, E <= 37
    for numpy's doubles) stays finite and sorts before padding. Two compiled passes and numpy's
    SIMD exp (scalar exp costs more than the rest)."""
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    mask = np.ascontiguousarray(mask, dtype=np.bool_)
    q, n = scores.shape
    rewards = np.zeros((1, q, n)) if rewards is None else np.ascontiguousarray(rewards, dtype=np.float64)
    if rewards.ndim == 2:
        rewards = rewards[None]
    shifted, n_real = np.empty((q, n)), np.empty(q, dtype=np.int64)
    _shift_rows(scores, mask, shifted, n_real)
    e = np.exp(shifted, out=shifted)
    channels = rewards.shape[0]
    neg_rate, cap, e_rho = np.empty((q, n)), np.empty((q, n)), np.empty((q, n, 1 + channels))
    sums = np.empty((q, channels))
    _fill_inputs(e, mask, rewards, neg_rate, cap, e_rho, sums)
    return Inputs(neg_rate, cap, e_rho, _discounts(n), n_real, np.finfo(np.float64).max ** -0.5, sums,
                  e)  # exp(-inf) = 0 on padding


CLASS_PADDING = 1.1
"""Sampling pads each query only to the longest of its length class: slots <= 1.1 x real items
(the random keys and the sort cost per slot; on lists of 10-150 items, 100 samples, 1.1 against
1.25 took 0.85-0.89x the time at 1,000 queries and 0.95-0.99x at 100: the classes' own cost is small)."""


class _Class(NamedTuple):
    """One length class of a batch: its queries (None: all, in order) and their inputs trimmed to
    the class's width (the last real slot of its longest query)."""

    queries: np.ndarray | None
    width: int
    inputs: Inputs


def _classes(inputs: Inputs) -> list[_Class]:
    """The batch's queries grouped by length (:func:`fairltr.buckets.length_buckets`, padded slots
    <= CLASS_PADDING x real items), each trimmed to its own width; one class (the whole batch,
    trimmed) when the padding is within the bound already."""
    from fairltr.buckets import length_buckets

    real = inputs.neg_rate > -np.inf
    Q, N = real.shape
    extent = np.where(real.any(1), N - np.argmax(real[:, ::-1], axis=1), 0)
    groups = length_buckets(extent, CLASS_PADDING) if Q else []
    if len(groups) <= 1:
        w = int(extent.max(initial=0)) or N
        return [_Class(None, w, inputs if w == N else _trimmed(inputs, slice(None), w))]
    return [_Class(idx, int(extent[idx].max()) or 1, _trimmed(inputs, idx, int(extent[idx].max()) or 1))
            for idx in groups]


def _trimmed(inputs: Inputs, rows, width: int) -> Inputs:
    i = inputs
    return Inputs(np.ascontiguousarray(i.neg_rate[rows, :width]), np.ascontiguousarray(i.cap[rows, :width]),
                  np.ascontiguousarray(i.e_rho[rows, :width]), i.theta[:width], i.n_real[rows], i.floor,
                  np.ascontiguousarray(i.reward_sums[rows]), np.ascontiguousarray(i.e[rows, :width]))


def _take(array: np.ndarray | None, c: _Class) -> np.ndarray | None:
    """A (Q, N, ...) array's rows and columns of class ``c``."""
    if array is None:
        return None
    rows = slice(None) if c.queries is None else c.queries
    return np.ascontiguousarray(array[rows, :c.width])


def _put(out: np.ndarray, c: _Class, part: np.ndarray) -> None:
    """Write class ``c``'s (Q_c, W, ...) ``part`` into the batch's (Q, N, ...) ``out``."""
    if c.queries is None:
        out[:, :c.width] = part
    else:
        out[c.queries, :c.width] = part


def sample(inputs: Inputs, n_samples: int, seed: int) -> np.ndarray:
    """(S, Q, N) int64 rankings: item indices in ranked order (real items first). The queries are
    drawn by length class, one SFC64 stream through the classes in order (:func:`_classes`)."""
    Q, N = inputs.neg_rate.shape
    out = np.empty((n_samples, Q, N), dtype=np.int64)
    state = sfc64_state(seed)
    for c in _classes(inputs):
        part = np.empty((n_samples, len(c.inputs.n_real), c.width), dtype=np.int64)
        for start, keys, low in sample_key_blocks(c.inputs, n_samples, seed, state=state):
            unpack_rows(keys, np.int64(low), part[start:start + len(keys)])
        rows = slice(None) if c.queries is None else c.queries
        out[:, rows, :c.width] = part
        out[:, rows, c.width:] = np.arange(c.width, N)  # slots past the class's width: padding, in order
    return out


class PolicySums(NamedTuple):
    """Sums over the samples (divide by S): the PL-Rank terms of every reward channel (Q, N, C),
    the exposure (Q, N) and the DCG of channel 0 (Q,) (both empty unless asked for), and the
    baseline's residuals R_{k+1} - Theta_{>k} m_k at each position (Q, N, C)."""

    grad: np.ndarray
    exposure: np.ndarray
    dcg: np.ndarray
    residual: np.ndarray


_NO_TAILS = np.zeros((0, 0))


class _RowPass:
    """The accumulators and constant arrays of :func:`pl_policy_kernels.policy_rows` for one batch."""

    def __init__(self, inputs: Inputs, cutoff: int | None, baseline: bool, with_exposure: bool,
                 carry: np.ndarray | None = None, spread: np.ndarray | None = None) -> None:
        Q, N, width = inputs.e_rho.shape
        self.inputs = inputs
        self.baseline = bool(baseline)
        self.cutoff = N if cutoff is None else min(int(cutoff), N)
        self.theta, self.v = _weights(N, self.cutoff)
        if not baseline:
            spread = np.zeros((Q, N))
        elif spread is None:
            spread = baseline_spread(inputs.n_real, N, self.cutoff)
        self.spread = spread
        self.grad = np.zeros((Q, N, width - 1))
        self.residual = np.zeros((Q, N, width - 1))
        self.carry = (np.ascontiguousarray(carry, dtype=np.float64) if baseline and carry is not None
                      else np.zeros((Q, N, width - 1)))
        self.exposure = np.zeros((Q, N) if with_exposure else (Q, 0))
        self.dcg = np.zeros(Q)
        self.tail_a, self.tail_c = np.zeros(Q), np.zeros((Q, width - 1))

    @property
    def select(self) -> bool:
        """Whether the rows' top K are selected from unsorted keys (a short cut-off) or sorted."""
        return self.cutoff <= SELECT_MAX and self.cutoff < self.inputs.neg_rate.shape[1]

    def add(self, rows: np.ndarray, low: int, select: bool, tails: np.ndarray | None = None) -> None:
        i = self.inputs
        policy_rows(rows, np.int64(low), select, self.cutoff, i.e_rho, i.e, self.theta, self.spread, self.carry, self.v,
                    i.n_real, i.reward_sums, i.floor, self.grad, self.residual, self.exposure, self.dcg, self.tail_a,
                    self.tail_c, _NO_TAILS if tails is None else tails, self.baseline)

    def sums(self) -> PolicySums:
        add_tail_terms(self.inputs.e_rho, self.tail_a, self.tail_c, self.grad)
        return PolicySums(self.grad, self.exposure, self.dcg, self.residual)


@functools.lru_cache(maxsize=64)
def _weights(n: int, cutoff: int) -> tuple[np.ndarray, np.ndarray]:
    """(theta, v) for rows of n: the DCG weights 1/log2(2 + k) and the exposure weights 1/ln(2 + k)
    of 0-based positions k < cutoff, 0 after (read-only: shared between calls)."""
    theta = _discounts(n)
    v = 1.0 / np.log(np.arange(2, n + 2, dtype=np.float64))
    theta[cutoff:] = 0.0
    v[cutoff:] = 0.0
    theta.setflags(write=False)
    v.setflags(write=False)
    return theta, v


def baseline_spread(n_real: np.ndarray, n: int, cutoff: int | None) -> np.ndarray:
    """(Q, n): Theta_{>k} / (n_q - k) for the 0-based positions k < min(cutoff, n_q) (0 after), with
    Theta_{>k} the DCG weights of the displayed positions after k: the position baseline is this
    times the rewards of the items not placed before k, summed (:mod:`pl_policy_kernels`). It
    depends on the batch only (callers may keep it: ``sample_gradient``'s ``spread``)."""
    k_max = n if cutoff is None else min(int(cutoff), n)
    theta = _weights(n, k_max)[0]
    ctheta = np.concatenate([[0.0], np.cumsum(theta)])
    k = np.arange(n)
    shown = np.minimum(n_real, k_max)[:, None]                                   # (Q, 1)
    later = np.clip(ctheta[shown] - ctheta[np.minimum(k + 1, n)][None, :], 0.0, None)
    return np.where(k[None, :] < shown, later / np.maximum(n_real[:, None] - k[None, :], 1), 0.0)


def gradient_of_rankings(inputs: Inputs, rankings: np.ndarray, cutoff: int | None = None,
                         baseline: bool = False, with_exposure: bool = False, carry: np.ndarray | None = None
                         ) -> PolicySums:
    """Sums over the rankings (S, Q, N) of the PL-Rank terms (divide by S for the estimate), with
    a DCG ``cutoff`` (None: the whole ranking) and the position ``baseline``
    (:mod:`fairltr.losses.pl_policy_kernels`; ``carry`` (Q, N, C): its carried part); in blocks of samples of about BLOCK_ELEMENTS, so
    that a query's rows of a block are read from cache (the kernel visits each query's samples in turn)."""
    rankings = np.ascontiguousarray(rankings, dtype=np.int64)
    S, Q, N = rankings.shape
    acc = _RowPass(inputs, cutoff, baseline, with_exposure, carry)
    step = _samples_per_block(Q * N)
    for start in range(0, S, step):
        acc.add(rankings[start:start + step], -1, False)
    return acc.sums()


def sample_gradient(inputs: Inputs, n_samples: int, seed: int, cutoff: int | None = None,
                    baseline: bool = False, with_exposure: bool = False, carry: np.ndarray | None = None,
                    spread: np.ndarray | None = None) -> PolicySums:
    """:func:`gradient_of_rankings` of :func:`sample`'s rankings for the same seed, block by block
    (the rankings are never stored); with a short ``cutoff`` (<= SELECT_MAX) the rows are not
    sorted, their top K are selected (the same items in the same order). ``spread``: the
    baseline's :func:`baseline_spread` when the caller keeps it (it depends on the batch only)."""
    Q, N, width = inputs.e_rho.shape
    if spread is None and baseline:
        spread = baseline_spread(inputs.n_real, N, cutoff)
    out = PolicySums(np.zeros((Q, N, width - 1)), np.zeros((Q, N) if with_exposure else (Q, 0)), np.zeros(Q),
                     np.zeros((Q, N, width - 1)))
    state = sfc64_state(seed)
    for c in _classes(inputs):
        acc = _RowPass(c.inputs, cutoff, baseline, with_exposure, _take(carry, c), _take(spread, c))
        select = acc.select
        for _, keys, low in sample_key_blocks(c.inputs, n_samples, seed, sort=not select, state=state):
            acc.add(keys, low, select)
        _scatter(out, c, acc.sums())
    return out


def _scatter(out: PolicySums, c: _Class, part: PolicySums) -> None:
    """Class ``c``'s sums into the batch's."""
    _put(out.grad, c, part.grad)
    _put(out.residual, c, part.residual)
    if out.exposure.shape[1]:
        _put(out.exposure, c, part.exposure)
    if c.queries is None:
        out.dcg[:] = part.dcg
    else:
        out.dcg[c.queries] = part.dcg


def sample_gradient_two_pass(inputs: Inputs, n_samples: int, seed: int, cutoff: int | None,
                             rewards_of, baseline: bool = False, carry: np.ndarray | None = None,
                             spread: np.ndarray | None = None) -> PolicySums:
    """Like :func:`sample_gradient` (one reward channel) for rewards that depend on the samples'
    own exposure: pass one samples the rankings (the random bits of :func:`sample`: the same
    rankings for a seed), keeps each row's K displayed items (uint16 while N <= 65,536) and their
    tail, and estimates the exposure and the DCG of ``inputs``' rewards (the gains);
    ``rewards_of(exposure mean (Q, N), DCG sums (Q,))`` then gives the rewards (Q, N) whose
    PL-Rank gradient pass two computes from the kept items. Cheaper than one pass with a reward
    channel per group (one forward loop instead of 1 + G - 1)."""
    Q, N, _ = inputs.e_rho.shape
    if spread is None and baseline:
        spread = baseline_spread(inputs.n_real, N, cutoff)
    exposure, dcg = np.zeros((Q, N)), np.zeros(Q)
    state = sfc64_state(seed)
    kept = []
    for c in _classes(inputs):
        acc = _RowPass(c.inputs, cutoff, baseline, False, _take(carry, c), _take(spread, c))
        select, k_eff = acc.select, acc.cutoff
        prefixes = np.empty((n_samples, len(c.inputs.n_real), k_eff), dtype=np.uint16 if c.width <= 1 << 16
                            else np.int64)
        tails = np.empty((n_samples, len(c.inputs.n_real)))
        part_exposure, part_dcg = np.zeros((len(c.inputs.n_real), c.width)), np.zeros(len(c.inputs.n_real))
        for start, keys, low in sample_key_blocks(c.inputs, n_samples, seed, sort=not select, state=state):
            stop = start + len(keys)
            store_prefixes(keys, np.int64(low), select, k_eff, c.inputs.e_rho, c.inputs.e, acc.v, acc.theta,
                           c.inputs.n_real,
                           prefixes[start:stop], tails[start:stop], part_exposure, part_dcg)
        _put(exposure, c, part_exposure)
        dcg[slice(None) if c.queries is None else c.queries] = part_dcg
        kept.append((c, acc, prefixes, tails))
    rewards = np.ascontiguousarray(rewards_of(exposure / n_samples, dcg), dtype=np.float64)
    out = PolicySums(np.zeros((Q, N, 1)), exposure, dcg, np.zeros((Q, N, 1)))
    for c, acc, prefixes, tails in kept:
        _set_rewards(c.inputs, _take(rewards, c))
        low = (1 << 16) - 1 if prefixes.dtype == np.uint16 else -1
        step = _samples_per_block(len(c.inputs.n_real) * max(1, acc.cutoff))
        for start in range(0, n_samples, step):
            acc.add(prefixes[start:start + step], low, False, tails[start:start + step])
        part = acc.sums()
        _put(out.grad, c, part.grad)
        _put(out.residual, c, part.residual)
    return out


def _set_rewards(inputs: Inputs, rewards: np.ndarray) -> None:
    """Replace the (one) reward channel of ``inputs`` and its per-query sums (padding stays 0)."""
    real = inputs.neg_rate > -np.inf  # -inf marks padding (a real item's rate is capped, finite)
    inputs.e_rho[..., 1] = np.where(real, rewards, 0.0)
    inputs.reward_sums[:, 0] = inputs.e_rho[..., 1].sum(-1)


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def _exposure_dcg_rows(rankings, gains, theta, inv_ln, n_real, exposure, dcg):  # pragma: no cover - compiled
    """Adds, for the rankings (B, Q, N) (real items first), v_k = 1 / ln(2 + k) to the exposure of
    the item at 0-based position k and theta_k * gain to its query's DCG (v and theta are 0 past a cut-off)."""
    B, Q, N = rankings.shape
    flat = rankings.reshape(-1)
    flat_exposure = exposure.reshape(-1)
    flat_gains = gains.reshape(-1)
    for q in range(Q):
        n = n_real[q]
        base = np.uint64(q) * np.uint64(N)
        total = 0.0
        for b in range(B):
            row = (np.uint64(b) * np.uint64(Q) + np.uint64(q)) * np.uint64(N)
            for k in range(n):
                d = np.uint64(flat[row + np.uint64(k)])
                flat_exposure[base + d] += inv_ln[k]
                total += theta[k] * flat_gains[base + d]
        dcg[q] += total


def exposure_and_dcg(rankings: np.ndarray, gains: np.ndarray, n_real: np.ndarray, cutoff: int | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The Monte-Carlo expected exposure (Q, N) (mean over the S rankings of 1 / ln(1 + rank), 0 on
    padding and past ``cutoff``) and E[DCG@cutoff] per query (Q,) with the given gains (Q, N), in
    blocks of samples (as :func:`fairltr.losses.plackett_luce.sampled_exposure` and ``expected_dcg``)."""
    rankings = np.ascontiguousarray(rankings, dtype=np.int64)
    S, Q, N = rankings.shape
    theta = _discounts(N)
    inv_ln = 1.0 / np.log(np.arange(2, N + 2, dtype=np.float64))  # v_k = V1 theta_k
    if cutoff is not None:
        theta[cutoff:] = 0.0
        inv_ln[cutoff:] = 0.0
    exposure = np.zeros((Q, N))
    dcg = np.zeros(Q)
    gains = np.ascontiguousarray(gains, dtype=np.float64)
    n_real = np.ascontiguousarray(n_real, dtype=np.int64)
    step = _samples_per_block(Q * N)
    for start in range(0, S, step):
        _exposure_dcg_rows(rankings[start:start + step], gains, theta, inv_ln, n_real, exposure, dcg)
    return exposure / S, dcg / S
