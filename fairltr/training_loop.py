"""The optimisation loop of the linear rankers (:class:`~fairltr.DELTR`, :class:`~fairltr.PLRank`).

One loop for both: each iteration takes one optimizer step (the estimator's ``step``, which
returns the objective's terms at the weights before that step), records
``{"iteration": i, **terms}``, reports it to the callback and the progress bar, and stops early
when the total stalls: |prev - total| <= tol * max(1, |total|). After the last step ``final``
gives the terms at the returned weights, recorded as the last entry, so ``history[i]`` is the
objective after i steps and the returned count is the number of steps taken. A non-finite term
is a :class:`FloatingPointError` naming the model, the iteration and the weight to lower.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

__all__ = ["LoopLabels", "run_training_loop"]

Terms = dict[str, float]


@dataclass(frozen=True)
class LoopLabels:
    """The names a loop shows: ``model`` and ``weight`` in the non-finite error ("DELTR objective
    became nan at iteration 3; try a smaller lr or gamma"), ``desc`` and ``postfix`` on the
    progress bar, ``finite`` the terms that must stay finite."""

    model: str
    weight: str
    desc: str
    postfix: str
    finite: Sequence[str] = ("total",)


def run_training_loop(
    step: Callable[[], Terms],
    final: Callable[[], Terms],
    *,
    max_iter: int,
    tol: float,
    labels: LoopLabels,
    callback: Callable[[int, Terms], None] | None = None,
    progress: bool = False,
    exact_stall_stops: bool = True,
) -> tuple[int, list[Terms]]:
    """Run up to ``max_iter`` steps; returns (steps taken, history). ``exact_stall_stops=False``
    (a sampled objective) makes ``tol=0`` mean "never stop early"; with True, tol=0 still stops
    when the total repeats exactly (a deterministic objective)."""
    history: list[Terms] = []

    def record(iteration: int, terms: Terms) -> Terms:
        rec = {"iteration": iteration, **terms}
        if not all(math.isfinite(terms[k]) for k in labels.finite):
            raise FloatingPointError(f"{labels.model} objective became {terms['total']} at iteration {iteration}; "
                                     f"try a smaller lr or {labels.weight}")
        history.append(rec)
        if callback is not None:
            callback(iteration, rec)
        return rec

    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=max_iter, desc=labels.desc, unit="it", leave=False)
    prev = math.inf
    it = 0
    while it < max_iter:
        rec = record(it, step())
        it += 1
        if bar is not None:
            bar.update(1)
            bar.set_postfix(**{labels.postfix: f"{rec['total']:.6g}"})
        if (exact_stall_stops or tol > 0) and abs(prev - rec["total"]) <= tol * max(1.0, abs(rec["total"])):
            break
        prev = rec["total"]
    record(it, final())
    if bar is not None:
        bar.close()
    return it, history
