"""The compiled leaves of the Plackett-Luce sampler (numba, the ``[fast]`` extra): numpy's SFC64
stream stepped in a loop, the packed keys of the exponential race, the rankings' unpacking and
the preparation of a batch's rates; :mod:`fairltr.losses.pl_kernels` drives them block by block."""

from __future__ import annotations

import numpy as np
from fairltr.compiled import njit  # numba.njit, cached in the user cache folder

__all__ = ["sfc64_state", "unpack_rows"]


@njit(cache=True, nogil=True, boundscheck=False)
def _sfc64_uniforms(state, out):  # pragma: no cover - compiled
    """Fills ``out`` (1-D) with the next doubles of numpy's SFC64 whose 4-word ``state`` is given
    (updated in place): bit for bit ``numpy.random.Generator(SFC64).random()`` (the generator's
    step, then the top 53 bits times 2^-53), in one loop without numpy's per-draw indirect call
    (about half its cost; tests/fairltr/losses/test_pl_kernels.py checks the identity)."""
    s0 = state[0]
    s1 = state[1]
    s2 = state[2]
    s3 = state[3]
    scale = 1.0 / 9007199254740992.0
    for i in range(out.size):
        tmp = s0 + s1 + s3
        s3 += np.uint64(1)
        s0 = s1 ^ (s1 >> np.uint64(11))
        s1 = s2 + (s2 << np.uint64(3))
        s2 = ((s2 << np.uint64(24)) | (s2 >> np.uint64(40))) + tmp
        out[i] = np.float64(tmp >> np.uint64(11)) * scale
    state[0] = s0
    state[1] = s1
    state[2] = s2
    state[3] = s3


@njit(cache=True, nogil=True, boundscheck=False)
def _sfc64_warm_up(state):  # pragma: no cover - compiled
    """numpy's SFC64 seeding after its SeedSequence words: counter 1, then 12 steps (in place)."""
    state[3] = np.uint64(1)
    for _ in range(12):
        tmp = state[0] + state[1] + state[3]
        state[3] += np.uint64(1)
        state[0] = state[1] ^ (state[1] >> np.uint64(11))
        state[1] = state[2] + (state[2] << np.uint64(3))
        state[2] = ((state[2] << np.uint64(24)) | (state[2] >> np.uint64(40))) + tmp


def sfc64_state(seed: int) -> np.ndarray:
    """The 4-word state of ``numpy.random.SFC64(seed)`` (numpy's seeding: three SeedSequence words,
    a counter of 1 and 12 warm-up steps), uint64; without building the generator (a tenth of its cost)."""
    state = np.empty(4, dtype=np.uint64)
    state[:3] = np.random.SeedSequence(seed).generate_state(3, np.uint64)
    _sfc64_warm_up(state)
    return state


@njit(cache=True, nogil=True, boundscheck=False)
def _pack_keys(log_u, neg_rate, cap, low, keys):  # pragma: no cover - compiled
    """keys[b, q, k] = bits(min(log_u[b, q, k] * neg_rate[q, k], cap[q, k])) with the low bits
    replaced by k. neg_rate = -exp(-s) is -inf on padding (key +inf: it sorts last); ``cap`` is
    the largest double for real items (so a real item's key stays below padding even for u = 0)
    and +inf on padding. Columns of ``keys`` past N (the run padding of wide rows) get int64 max.
    ``keys`` may be ``log_u``'s own memory (each element is read before it is written). Flat
    unsigned offsets, no branch: the inner loop vectorises."""
    B, Q, N = log_u.shape
    width = keys.shape[2]
    flat_u = log_u.reshape(-1)
    flat_rate = neg_rate.reshape(-1)
    flat_cap = cap.reshape(-1)
    flat_keys = keys.reshape(-1)
    high = ~low
    n = np.uint64(N)
    for b in range(B):
        for q in range(Q):
            row = np.uint64(b) * np.uint64(Q) + np.uint64(q)
            src = row * n
            dst = row * np.uint64(width)
            base = np.uint64(q) * n
            for k in range(N):
                j = np.uint64(k)
                x = np.float64(min(flat_u[src + j] * flat_rate[base + j], flat_cap[base + j]))
                flat_keys[dst + j] = (x.view(np.int64) & high) | k
            for k in range(N, width):
                flat_keys[dst + np.uint64(k)] = 9223372036854775807


@njit(cache=True, nogil=True, boundscheck=False)
def unpack_rows(keys, low, out):  # pragma: no cover - compiled
    """out[b, q, k] = keys[b, q, k] & low for the first N = out.shape[2] columns (the rankings)."""
    B, Q, N = out.shape
    for b in range(B):
        for q in range(Q):
            for k in range(N):
                out[b, q, k] = keys[b, q, k] & low


_RATE_CAP = np.finfo(np.float64).max / 1e4
_LARGEST = np.finfo(np.float64).max


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def _shift_rows(scores, mask, shifted, n_real):  # pragma: no cover - compiled
    """shifted = s - (the query's best real score) on real items, -inf on padding; n_real."""
    Q, N = scores.shape
    for q in range(Q):
        top = -np.inf
        count = 0
        for k in range(N):
            if mask[q, k]:
                count += 1
                top = max(top, scores[q, k])
        n_real[q] = count
        for k in range(N):
            shifted[q, k] = scores[q, k] - top if mask[q, k] else -np.inf


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def _fill_inputs(e, mask, rewards, neg_rate, cap, e_rho, sums):  # pragma: no cover - compiled
    """From e = exp(shifted) (0 on padding) and rewards (C, Q, N): e_rho = (e, rewards...),
    neg_rate = -min(1 / e, cap), cap = the largest double on real items, and the reward sums;
    padding: (0, 0...), -inf and +inf."""
    Q, N = e.shape
    C = rewards.shape[0]
    for q in range(Q):
        for c in range(C):
            sums[q, c] = 0.0
        for k in range(N):
            real = mask[q, k]
            x = e[q, k]
            e_rho[q, k, 0] = x
            for c in range(C):
                r = rewards[c, q, k] if real else 0.0
                e_rho[q, k, 1 + c] = r
                sums[q, c] += r
            neg_rate[q, k] = -min(1.0 / x, _RATE_CAP) if real else -np.inf
            cap[q, k] = _LARGEST if real else np.inf


