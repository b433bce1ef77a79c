"""Predicted and ideal orders of padded queries, and the tie groups of a ranking.

Every ranking metric treats tied scores as unordered (docs/spec.md section 3, "Ties"): its value
is the exact expectation over the orders of the ties, all equally likely. A ranking by scores is
therefore described by :class:`TiedRanks`: for each slot, the first position its tie group
occupies and the group's size; a member of a group of size m starting at position f sits at
each of the positions f .. f + m - 1 with probability 1 / m. A metric that is a sum over items of
(item value) x g(position) has the expectation sum over items of (item value) x mean of g over
the item's group positions (:meth:`TiedRanks.expected`), which is exact. :func:`order_by` /
:func:`ranks_by` still give one order with ties in input order, for re-rankers and displays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

__all__ = ["order_by", "ranks_from_order", "ranks_by", "TiedRanks", "tied_ranks", "tied_ranks_of_rows", "expected_in_top",
           "expected_discount"]


def order_by(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Slot indices sorted by decreasing ``values``; ties keep input order; padding last. (Q, N)."""
    # inputs are validated finite, so padded -inf slots sort after every real item
    key = values.masked_fill(~mask, float("-inf"))
    return torch.sort(key, dim=-1, descending=True, stable=True).indices


def ranks_from_order(order: torch.Tensor) -> torch.Tensor:
    """1-based rank of every slot given the sorted slot indices. (Q, N) long."""
    positions = torch.arange(1, order.shape[-1] + 1, device=order.device).expand_as(order)
    return torch.empty_like(order).scatter_(-1, order, positions)


def ranks_by(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """1-based rank of every slot when sorting by decreasing ``values`` (padding ranks last)."""
    return ranks_from_order(order_by(values, mask))


@dataclass(frozen=True)
class TiedRanks:
    """The positions of a ranking with ties: ``first`` (Q, N) long, the 1-based position where
    each slot's tie group starts; ``size`` (Q, N) long, the group's size (1 = no tie). Padded
    slots form their own groups after every real slot (callers mask them out)."""

    first: torch.Tensor
    size: torch.Tensor

    @property
    def last(self) -> torch.Tensor:
        """The last position of each slot's tie group."""
        return self.first + self.size - 1

    def expected(self, g: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        """E[g(position)] of every slot under a uniformly random order of its ties: the mean of
        ``g`` (a function of 1-based positions, float64) over the group's positions. (Q, N)."""
        n = self.first.shape[-1]
        positions = torch.arange(1, n + 1, device=self.first.device, dtype=torch.float64)
        cum = torch.zeros(n + 1, dtype=torch.float64, device=self.first.device)
        cum[1:] = torch.cumsum(g(positions).to(torch.float64), 0)
        total = cum[self.last.clamp(max=n)] - cum[(self.first - 1).clamp(min=0)]
        return total / self.size.to(torch.float64)

    def in_top(self, k: int) -> torch.Tensor:
        """P(position <= k) of every slot: (k - first + 1) / size, clipped to [0, 1]. (Q, N) float64."""
        inside = (k - self.first + 1).clamp(min=0).minimum(self.size)
        return inside.to(torch.float64) / self.size.to(torch.float64)

    @property
    def tied(self) -> torch.Tensor:
        """Whether each slot shares its score with another slot of its query (Q, N) bool."""
        return self.size > 1


def tied_ranks(values: torch.Tensor, mask: torch.Tensor) -> TiedRanks:
    """The :class:`TiedRanks` of sorting by decreasing ``values`` (equal values form one group)."""
    n = values.shape[-1]
    key = values.to(torch.float64).masked_fill(~mask, float("-inf"))
    sorted_key, order = torch.sort(key, dim=-1, descending=True, stable=True)
    idx = torch.arange(n, device=values.device).expand_as(sorted_key)
    if n == 0:
        empty = torch.zeros_like(idx)
        return TiedRanks(empty + 1, empty + 1)
    new = torch.ones_like(sorted_key, dtype=torch.bool)
    new[..., 1:] = sorted_key[..., 1:] != sorted_key[..., :-1]
    start = torch.cummax(torch.where(new, idx, torch.zeros_like(idx)), dim=-1).values
    # the run's last index: the next run's start - 1, found by a reversed running minimum
    ends = torch.where(torch.cat([new[..., 1:], torch.ones_like(new[..., :1])], -1), idx, torch.full_like(idx, n))
    stop = torch.flip(torch.cummin(torch.flip(ends, [-1]), dim=-1).values, [-1])
    first_sorted, size_sorted = start + 1, stop - start + 1
    first = torch.empty_like(first_sorted).scatter_(-1, order, first_sorted)
    size = torch.empty_like(size_sorted).scatter_(-1, order, size_sorted)
    return TiedRanks(first, size)


def tied_ranks_of_rows(codes: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, size) of every row of a flat table, in the rows' own order: the 1-based position
    where the row's tie group starts inside its query (by decreasing score; ``codes[r]`` is row
    r's query) and the number of rows of the query sharing its score. The numpy counterpart of
    :func:`tied_ranks`, for per-row tables (the audit)."""
    from fairltr.data import positions_in_query, score_order

    codes = np.asarray(codes, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    n = len(codes)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = score_order(codes, scores)
    c, s = codes[order], scores[order]
    slots, _ = positions_in_query(c)
    new = np.ones(n, dtype=bool)
    new[1:] = (c[1:] != c[:-1]) | (s[1:] != s[:-1])
    group = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    sizes = np.diff(np.append(starts, n))
    first = np.empty(n, dtype=np.int64)
    size = np.empty(n, dtype=np.int64)
    first[order] = slots[starts][group] + 1
    size[order] = sizes[group]
    return first, size


def expected_in_top(first: np.ndarray, size: np.ndarray, k: int) -> np.ndarray:
    """P(position <= k) of rows with tie groups (first, size): clip(k - first + 1, 0, size) / size."""
    return np.clip(k - first + 1, 0, size) / size


def expected_discount(first: np.ndarray, size: np.ndarray, discount) -> np.ndarray:
    """The mean of ``discount(positions)`` (a numpy function of 1-based positions) over each row's
    tie-group positions first .. first + size - 1."""
    top = int((first + size - 1).max()) if len(first) else 0
    cum = np.zeros(top + 1)
    cum[1:] = np.cumsum(discount(np.arange(1, top + 1, dtype=np.float64)))
    return (cum[first + size - 1] - cum[first - 1]) / size
