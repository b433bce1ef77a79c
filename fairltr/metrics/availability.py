"""Which metrics a job computes, so that a gate, objective or constraint on a metric the job
never computes is refused while the options are read (one line, before any work), instead of
failing every check later with a NaN.

* a ranker's evaluation (``evaluate``, ``evaluate-model``, ``promote --data``, training, sweeps):
  the relevance and exposure metrics of docs/spec.md section 3 at any cut-off, ``tied_score_share``,
  ``awrf``, ``ndcg_awrf`` (a group column and the relevance labels) and ``iaa`` (relevance labels), and, with group attributes, the audit's worst cases of section 3b (per attribute too: the
  attribute must be one given, or their intersection ``a:b``);
* a retriever's: MRR, recall, MRC@k, overlap and RBO (per query language with ``/<lang>``);
* a stochastic policy's (``train plrank``, the ``plrank`` sweep): a ranker's, and the policy
  figures of :mod:`fairltr.metrics.policy` (``expected_ndcg_at_<k>``, ``ee_l`` ...);
* ``monitor``: the audit's worst cases only (``disparate_treatment_ratio`` needs the outcome
  column, ``--judgment``).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from fairltr.errors import ConfigError, OptionError
from fairltr.metrics.labels import attribute_key, intersection_name
from fairltr.metrics.plugins import AUDIT_METRICS, metric_info

__all__ = ["EVALUATORS", "uncomputed_reason", "check_computed"]

_RANKER = {"ndcg", "precision", "selection_ratio", "kendall_tau", "exposure_protected", "exposure_nonprotected",
           "exposure_ratio", "exposure_gap", "exposure_disparity", "exposure_shortfall", "tied_score_share",
           "awrf", "ndcg_awrf", "iaa"}
_NEEDS_GROUP = {"awrf", "ndcg_awrf"}  # the alignment is the group; the target the relevant candidates' groups
_NEEDS_LABELS = {"awrf", "ndcg_awrf", "iaa"}  # the target / the relevance attention is proportional to
_POLICY = {"expected_ndcg", "expected_exposure_protected", "expected_exposure_nonprotected",
           "expected_exposure_ratio", "expected_exposure_disparity", "ee_l", "ee_d", "ee_r"}
_RETRIEVER = {"mrr", "recall", "mrc", "overlap", "rbo"}
EVALUATORS = ("ranker", "policy", "retriever", "monitor")
"""The jobs :func:`uncomputed_reason` knows: a ranker's evaluation, a retriever's, the monitor's windows."""


def uncomputed_reason(key: str, *, evaluator: str, groups: Sequence[str] = (), judgments: bool = True) -> str | None:
    """Why ``key`` is never computed by ``evaluator`` (:data:`EVALUATORS`) with these group
    attributes, or None when it is. Unknown keys raise :class:`ConfigError` (the registry's)."""
    if evaluator not in EVALUATORS:
        raise ConfigError(f"unknown evaluator {evaluator!r}; known: {EVALUATORS}")
    try:
        info = metric_info(key)
    except KeyError as exc:
        raise ConfigError(str(exc).strip("'\"")) from None
    base = info.name
    head, _, attribute = key.partition(".")
    if base in AUDIT_METRICS:
        if evaluator == "retriever":
            return f"{key} is a ranking audit figure; a retriever's evaluation has none"
        if not groups:
            return f"{key} is an audit figure and needs group attributes (--group COL, repeatable)"
        if attribute:
            attribute = attribute.rsplit("_ci_", 1)[0] if attribute.endswith(("_ci_low", "_ci_high")) else attribute
            known = [attribute_key(g) for g in groups] + ([intersection_name(groups)] if len(groups) > 1 else [])
            if attribute not in known:
                return f"{key} names attribute {attribute!r}, which is not audited here; audited: {known}"
        if base == "disparate_treatment_ratio" and not judgments:
            return f"{key} compares exposure with merit and needs the judgment (outcome) column (--judgment)"
        return None
    if evaluator == "monitor":
        return (f"{key} is not an audit figure: fairltr monitor computes only the audit's worst cases "
                f"({', '.join(sorted(AUDIT_METRICS))}, per attribute with .<attribute>)")
    if evaluator in ("ranker", "policy") and base in _NEEDS_GROUP and not groups:
        return f"{key} needs a group column (the items' alignment and the target distribution): --group COL"
    if evaluator in ("ranker", "policy") and base in _NEEDS_LABELS and not judgments:
        return f"{key} needs the relevance labels (the judgment column, --judgment)"
    if evaluator == "ranker" and base not in _RANKER:
        kind = ("a retrieval metric" if base in _RETRIEVER else "a stochastic policy's figure (train plrank, "
                "the plrank sweep)" if base in _POLICY else "not a ranker's metric")
        return f"{key} is {kind}; a ranker's evaluation computes {sorted(_RANKER | set(AUDIT_METRICS))}"
    if evaluator == "policy" and base not in _RANKER | _POLICY:
        kind = "a retrieval metric" if base in _RETRIEVER else "not a policy's metric"
        return (f"{key} is {kind}; a policy's evaluation computes "
                f"{sorted(_RANKER | _POLICY | set(AUDIT_METRICS))}")
    if evaluator == "retriever" and base not in _RETRIEVER:
        return f"{key} is not a retriever's metric; a retriever's evaluation computes {sorted(_RETRIEVER)}"
    return None


def check_computed(named: Iterable[tuple[str, str]], *, evaluator: str, groups: Sequence[str] = (),
                   judgments: bool = True) -> None:
    """:class:`~fairltr.errors.OptionError` (a usage error: the command exits 2) naming the first
    ``(text, metric)`` (a gate, objective or constraint as written, and the metric it reads) whose
    metric ``evaluator`` never computes."""
    for text, key in named:
        reason = uncomputed_reason(key, evaluator=evaluator, groups=groups, judgments=judgments)
        if reason:
            raise OptionError(f"{text!r} cannot be checked here: {reason}")
