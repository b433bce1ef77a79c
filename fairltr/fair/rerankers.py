"""Re-ranker declarations: a re-ranker is ONE :class:`Reranker` (name, declared settings, apply
function, whether it takes several categories / several group attributes), registered in
:data:`RERANKERS` (:class:`~fairltr.plugins.registry.PluginRegistry`, entry-point group
``fairltr.rerankers``).

``fairltr rerank --method`` and its option checks, the serving-policy grammar
(:mod:`fairltr.fair.policy`: method names, setting names, which method takes which setting), the
served model's request params and the three dispatches (:func:`fairltr.fair.policy.apply_policy`,
:func:`fairltr.workflows.fair.rerank_file`, :func:`fairltr.workflows.ranking.rank_with`) all read
these declarations. The built-ins (FA*IR, Geyik et al.'s four) are declared in
:mod:`fairltr.fair.builtin_rerankers`.

The apply contract: ``apply(frame, scores, *, columns, k, **settings) -> DataFrame``: ``frame``
holds at least the query and group columns (``columns.query``, ``columns.group``), ``scores`` is a
column name or one score per row, ``k`` the top k re-ranked per query (None: whole lists) and
``settings`` every declared setting (defaults filled in). It returns every row of ``frame``
(any order, every column kept) with a 1-based per-query ``rank`` and a per-query bool
``fair_feasible``. ``serve`` (optional, same contract) is the variant a served request uses, whose
batch may lack categories a setting names (default: ``apply``).
"""

from __future__ import annotations

from fairltr.fair.builtin_rerankers import BUILTIN_RERANKERS
from fairltr.fair.reranker_decl import Reranker
from fairltr.plugins.registry import PluginRegistry

__all__ = ["Reranker", "RERANKERS", "reranker_names", "get_reranker", "setting_names", "declarers", "owners_text"]

RERANKERS: PluginRegistry[Reranker] = PluginRegistry("re-ranker", Reranker)
"""Every re-ranker: the built-ins of :mod:`fairltr.fair.builtin_rerankers`, then the
``fairltr.rerankers`` entry points (each names a :class:`Reranker`, a callable returning one, or a
list of them)."""
for _builtin in BUILTIN_RERANKERS:
    RERANKERS.register(_builtin)


def reranker_names() -> list[str]:
    """Every re-ranker's name, in declaration order (``fair`` first)."""
    return RERANKERS.names()


def get_reranker(name: str) -> Reranker:
    """The declaration called ``name``; an unknown name is a ConfigError listing the choices."""
    return RERANKERS.require(name)


def setting_names() -> tuple[str, ...]:
    """Every declared setting's name, each once, in declaration order (the built-ins':
    ``p, alpha, adjust, k, target``)."""
    seen: dict[str, None] = {}
    for decl in RERANKERS.declarations():
        seen.update(dict.fromkeys(decl.fields))
    return tuple(seen)


def declarers(name: str) -> list[Reranker]:
    """The re-rankers that take setting ``name``."""
    return [d for d in RERANKERS.declarations() if d.takes_setting(name)]


def owners_text(name: str) -> str:
    """Who takes setting ``name``, in words: ``method 'fair'``, or the shared label and the names
    (``the Geyik methods (detgreedy, detcons, ...)``), or the names."""
    decls = declarers(name)
    if not decls:
        return f"no re-ranker (the declared settings: {', '.join(setting_names())})"
    if len(decls) == 1:
        return f"method {decls[0].name!r}"
    labels = {d.label for d in decls}
    names = ", ".join(d.name for d in decls)
    return f"{labels.pop()} ({names})" if len(labels) == 1 and decls[0].label else f"methods {names}"
