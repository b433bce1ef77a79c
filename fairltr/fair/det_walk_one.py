"""DetGreedy / DetCons / DetRelaxed (:mod:`fairltr.fair.geyik`) on ONE list, on Python lists: numpy's
per-call cost exceeds the work of one step of one list, so the walk of :func:`fairltr.fair.geyik.rerank_geyik`
on a one-query bucket without the compiled kernels runs here (tested equal to a plain loop of the
paper's rule, tests/fairltr/fair/test_geyik.py).

Each category's next candidate carries one integer key, smaller = chosen: its place x in the score
order when the category is below its minimum floor(j p_g); (1 + u) M + x when below its maximum
ceil(j p_g) (u: the rank of its urgency among all urgencies, 0 for DetGreedy); (U + 2) M + x
otherwise (M = n, U urgencies); (U + 3) M past its end. A step takes the smallest key (one ``min``
over G integers) and recomputes the key of the category taken and of those whose minimum or maximum
changed at this step (about one a step: floor(j p_g) and ceil(j p_g) change together unless j p_g
is an integer). So a step costs O(1) Python operations plus one ``min``, not G comparisons of tuples.
"""

from __future__ import annotations

import numpy as np

__all__ = ["det_walk_one"]


def det_walk_one(order: np.ndarray, gcodes: np.ndarray, s: np.ndarray, p: np.ndarray, k: int, rank: np.ndarray,
                 method: str) -> None:
    """:func:`fairltr.fair.geyik._det_walk` and the remainder for ONE query (same rule, same floating
    point: the minimums floor(j p_g) and maximums ceil(j p_g) come from numpy; DetCons' urgency of a
    category at its maximum c + 1 is (c + 1) / p_g, DetRelaxed's its ceiling). ``order``: the query's
    rows in score order (ties: earlier row), -1 padding; ``s`` is not read (the order holds it).
    Writes the 1-based ``rank`` of the query's rows: the walk's k, then the others in score order."""
    rows = order[order >= 0]
    cats = gcodes[rows]
    places = [np.flatnonzero(cats == g)[:k] for g in range(len(p))]
    size = np.array([len(x) for x in places], dtype=np.int64)
    base = np.cumsum(size + 1) - (size + 1)  # category g's keys at base[g] .. base[g] + size[g] (its end)
    keys = _keys(places, size, base, p, len(rows), method)
    placed = _walk(keys, _events(p, k, base), base.tolist(), cats.tolist(), k, max(len(rows), 1))
    top = rows[np.asarray(placed, dtype=np.int64)]
    rank[top] = np.arange(1, len(top) + 1)
    rest = rows[rank[rows] == 0]
    rank[rest] = np.arange(len(top) + 1, len(top) + 1 + len(rest))


def _keys(places: list, size: np.ndarray, base: np.ndarray, p: np.ndarray, n: int, method: str) -> tuple:
    """Per category g and count c (at index base[g] + c) the key of its next candidate below its
    minimum, below its maximum, and neither (module docstring), as three Python lists."""
    x = np.concatenate([np.append(pl, 0) for pl in places]).astype(np.int64)
    if method == "detgreedy":  # no urgency: one class below the maximum
        u, n_u = np.zeros(len(x), dtype=np.int64), 1
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            c1 = np.concatenate([np.arange(1, m + 2, dtype=np.float64) / (p[g] if p[g] > 0 else np.nan)
                                 for g, m in enumerate(size.tolist())])
        urgency = np.nan_to_num(np.ceil(c1) if method == "detrelaxed" else c1, nan=0.0)
        u = np.unique(urgency, return_inverse=True)[1].reshape(-1)
        n_u = int(u.max()) + 1 if len(u) else 1
    m = max(n, 1)
    out = (x.copy(), (1 + u) * m + x, (n_u + 2) * m + x)
    for key in out:
        key[base + size] = (n_u + 3) * m
    return tuple(key.tolist() for key in out)


def _events(p: np.ndarray, k: int, base: np.ndarray) -> tuple[list, list, list, list]:
    """The steps t (0-based; k appended as a stop) at which a category's minimum or maximum changes
    (every category at t = 0), the category, and its new minimum and maximum as indices into the key
    lists (base[g] + floor(j p_g), base[g] + ceil(j p_g), j = t + 1)."""
    j = np.arange(1, k + 1, dtype=np.float64)[:, None]
    lo = np.floor(j * p).astype(np.int64)
    hi = np.ceil(j * p).astype(np.int64)
    changed = np.empty(lo.shape, dtype=bool)
    changed[0] = True
    changed[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
    ev_t, ev_g = np.nonzero(changed)
    return (ev_t.tolist() + [k], ev_g.tolist(), (lo[ev_t, ev_g] + base[ev_g]).tolist(),
            (hi[ev_t, ev_g] + base[ev_g]).tolist())


def _walk(keys: tuple, events: tuple, base: list, cat_of: list, k: int, m: int) -> list:
    """The k places taken, in order (places in the score order). An event that leaves a category
    below its minimum does not need its maximum to set its key."""
    kmin, kmax, kother = keys
    ev_t, ev_g, ev_lo, ev_hi = events
    at, lo_g, hi_g = list(base), list(base), list(base)  # per category: its next index, minimum, maximum
    key, placed, e, nxt = [0] * len(base), [0] * k, 0, 0
    for t in range(k):
        if t == nxt:
            while nxt == t:
                g = ev_g[e]
                a = lo_g[g] = ev_lo[e]
                c = at[g]
                if c < a:
                    key[g] = kmin[c]
                    hi_g[g] = ev_hi[e]
                else:
                    b = hi_g[g] = ev_hi[e]
                    key[g] = kmax[c] if c < b else kother[c]
                e += 1
                nxt = ev_t[e]
        placed[t] = best = min(key) % m
        g = cat_of[best]
        at[g] = c = at[g] + 1
        key[g] = kmin[c] if c < lo_g[g] else kmax[c] if c < hi_g[g] else kother[c]
    return placed
