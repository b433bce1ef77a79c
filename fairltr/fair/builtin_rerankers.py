"""The built-in re-rankers, declared once (:mod:`fairltr.fair.rerankers`): FA*IR (binomial, or
multinomial when ``p`` is a share list ``A=0.2,B=0.1``) and Geyik et al.'s DetGreedy, DetCons,
DetRelaxed and DetConstSort (:data:`BUILTIN_RERANKERS`, registered by :mod:`fairltr.fair.rerankers`);
the algorithms are imported on the first call (this module needs neither pandas nor numba)."""

from __future__ import annotations

from functools import partial
from typing import Any, Mapping

from fairltr.fair.geyik_methods import GEYIK_METHODS
from fairltr.fair.reranker_decl import Reranker
from fairltr.plugins.params import HyperParam

__all__ = ["FAIR", "GEYIK", "GEYIK_NAMES", "BUILTIN_RERANKERS", "is_share_list"]


def is_share_list(p: object) -> bool:
    """Whether FA*IR's ``p`` names categories (``"A=0.2,B=0.1"`` or a mapping): multinomial FA*IR."""
    if isinstance(p, Mapping):
        return True
    if not isinstance(p, str):
        return False
    try:
        float(p)
    except ValueError:
        return True
    return False


def _fair(frame: Any, scores: Any, *, columns: Any, k: int | None, p: Any, alpha: float, adjust: bool) -> Any:
    """FA*IR of every query: multinomial for a share list ``p``, binomial for a number."""
    if is_share_list(p):
        from fairltr.fair.multinomial_rerank import parse_min_shares, rerank_multinomial

        return rerank_multinomial(frame, scores, p=parse_min_shares(p), k=k, alpha=alpha, adjust=adjust,
                                  columns=columns)
    from fairltr.fair.rerank import rerank

    return rerank(frame, scores, k=k, p=float(p), alpha=alpha, adjust=adjust, columns=columns)


def _fair_served(frame: Any, scores: Any, *, columns: Any, k: int | None, p: Any, alpha: float,
                 adjust: bool) -> Any:
    """FA*IR of a request: a protected category the share list names but the request lacks is
    dropped from the test and every query is flagged infeasible (its minimum cannot be met)."""
    if not is_share_list(p):
        return _fair(frame, scores, columns=columns, k=k, p=p, alpha=alpha, adjust=adjust)
    from fairltr.fair.multinomial_rerank import parse_min_shares, rerank_multinomial

    shares = parse_min_shares(p)
    present = set(frame[columns.group].astype(str))
    kept = {c: v for c, v in shares.items() if c in present}
    if kept:
        ranked = rerank_multinomial(frame, scores, p=kept, k=k, alpha=alpha, adjust=adjust, columns=columns)
    else:  # no protected category in the request: the model's own order
        from fairltr.data import query_codes, rank_within_query

        codes, _ = query_codes(frame, columns.query)
        ranked = frame.assign(rank=rank_within_query(codes, scores))
    if len(kept) < len(shares):
        ranked["fair_feasible"] = False
    return ranked


def _geyik(frame: Any, scores: Any, *, columns: Any, k: int | None, target: Any, method: str) -> Any:
    from fairltr.fair.geyik import rerank_geyik

    return rerank_geyik(frame, scores, method=method, target=target, k=k, columns=columns)


def _geyik_served(frame: Any, scores: Any, *, columns: Any, k: int | None, target: Any, method: str) -> Any:
    """Geyik's re-ranker of a request: the target restricted to the categories present
    (renormalised); a category with a positive share absent makes every query infeasible."""
    kept, missing = _target_in_batch(target, frame[columns.group])
    ranked = _geyik(frame, scores, columns=columns, k=k, target=kept, method=method)
    if missing:  # a category the target asks for is absent from the whole request: it cannot be met
        ranked["fair_feasible"] = False
    return ranked


def _target_in_batch(text: str | None, groups: Any) -> tuple[dict[str, float] | None, bool]:
    """The target restricted to the categories present in a request's group column
    (renormalised), and whether a category with a positive share was absent. A served batch
    need not hold every category the target names (Geyik's re-ranker refuses such a target)."""
    if text is None:
        return None, False
    from fairltr.fair.target import parse_target

    _, shares = parse_target(text)
    present = set(groups.astype(str))
    kept = {c: v for c, v in shares.items() if c in present}
    missing = any(v > 0 for c, v in shares.items() if c not in present)
    total = sum(kept.values())
    if total <= 0:
        return None, True
    return {c: v / total for c, v in kept.items()}, missing


FAIR = Reranker(
    "fair", _fair, serve=_fair_served,
    params=(HyperParam("p", 0.5, 0.0, 1.0, description="FA*IR's target protected proportion in (0, 1)"),
            HyperParam("alpha", 0.1, 0.0, 1.0, description="FA*IR's significance, in (0, 1)")),
    options={"adjust": True}, required=("p",), label="FA*IR", takes="p", notes={"p": "FA*IR's"},
    example="fair:p=0.3,alpha=0.1",
    summary="FA*IR on a binary group (>= 1 protected); a share list p: several protected categories")

GEYIK_NAMES = GEYIK_METHODS  # the Geyik re-rankers declared below

GEYIK = tuple(Reranker(
    name, partial(_geyik, method=name), serve=partial(_geyik_served, method=name), options={"target": None},
    categories=True, label="the Geyik methods", takes="target (a category mix)",
    notes={"target": "target is for the Geyik re-rankers"}, example=f"{name}:k=10",
    summary="Geyik et al. (KDD 2019) on any number of categories") for name in GEYIK_NAMES)

BUILTIN_RERANKERS = (FAIR, *GEYIK)
"""The built-in declarations, in their order of choice (:data:`fairltr.fair.rerankers.RERANKERS`)."""
