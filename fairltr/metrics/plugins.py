"""Declarations of every metric: direction, ideal value and degenerate-query policy.

A metric's direction is one of

* ``"higher"``: larger values are better (``ndcg_at_10``, ``kendall_tau``);
* ``"lower"``: smaller values are better (``exposure_disparity``, ``ndkl_at_<k>``);
* ``"target"``: the metric has an ideal value and both sides of it are worse
  (``exposure_ratio`` and ``selection_ratio_at_<k>``: 1.0 = parity; ``exposure_gap``: signed,
  0 = parity, a negative gap over-exposes the protected group). A target metric has no
  "better" direction to optimise: optimise its lower-is-better distance instead
  (``exposure_disparity``) or bound it from both sides (``0.8<=exposure_ratio<=1.25``);
* ``"none"``: a descriptive quantity with no better side (``exposure_protected``, one group's
  exposure: more of it is not "fairer", only its ratio to the other group's says anything).
  Reported and usable in gates with an explicit bound, never a sweep objective.

Metric keys are ``<name>``, ``<name>_at_<k>`` (k part of the name), optionally followed by a
declared variant (``mrc_at_5_intersection``), a per-language suffix ``/<lang>``
(``mrr_at_100/de``), a per-attribute suffix ``.<attribute>`` for the audit's worst-case figures
(``impact_ratio_at_10.race``, ``impact_ratio_at_10.sex:race`` for the intersection: legal
MLflow metric keys), the ``_n_queries`` companion (the number of queries an average is over)
or a confidence bound ``_ci_low`` / ``_ci_high`` (docs/spec.md section 3b).

:data:`HEADLINE_METRICS` is THE short list a reader looks for first (CLI tables, reports,
confidence intervals); :func:`headline_metrics` gives it for another cut-off k.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from fairltr.errors import ConfigError
from fairltr.plugins.registry import PluginRegistry

__all__ = [
    "DIRECTIONS", "MetricInfo", "METRICS", "metric_info", "is_metric_key", "higher_is_better", "direction",
    "ideal", "distance_from_ideal", "is_better", "optimisation_direction", "direction_label",
    "HEADLINE_METRICS", "headline_metrics", "CI_SUFFIXES", "AUDIT_METRICS", "key_part", "COMPUTED_WHEN",
    "per_query_declarations", "QUERY_INTERVAL_METRICS",
]

DIRECTIONS = ("higher", "lower", "target", "none")
COMPUTED_WHEN = ("always", "retrieval", "linear_ndcg")
"""Which evaluations compute a per-query metric: every one, those of retrieved lists
(``retrieval=True``: MRR, recall), or those asking for linear-gain nDCG."""
_BUILTIN = "fairltr.metrics.per_query_builtins:"


def key_part(name: str) -> str:
    """``name`` made safe inside a metric key (MLflow allows letters, digits, ``_ - . /`` and
    space) and a file name: every other character, and ``/`` and space too, becomes ``_``
    (``lambdamart+fair`` -> ``lambdamart_fair``)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


@dataclass(frozen=True)
class MetricInfo:
    """What a metric is: its base name (k appended as ``_at_<k>``), direction, degenerate-query
    policy, kind and, for ``"target"`` metrics, the ideal value.

    ``direction`` also accepts the former boolean ``higher_is_better`` (True -> "higher",
    False -> "lower"). ``distance`` says how far a value is from ``ideal``: ``"ratio"`` gives
    ``1 - min(v / ideal, ideal / v)`` (0.8 and 1.25 are equally far from 1.0), ``"absolute"``
    gives ``|v - ideal|``. ``variants`` are suffixes allowed after ``_at_<k>``.
    """

    name: str
    direction: str
    degenerate: str
    takes_k: bool = False
    kind: str = "relevance"  # "relevance" or "fairness"
    ideal: float | None = None
    distance: str = "absolute"
    variants: tuple[str, ...] = ()
    per_attribute: bool = False  # also reported per group attribute: <key>.<attribute>
    # how a per-query metric is computed (fairltr.metrics.per_query_builtins states the contract):
    # a callable or "module:function"; None = computed elsewhere (the audit, a companion's compute,
    # the retrieval or policy evaluations)
    compute: Any = None
    when: str = "always"  # which evaluations compute it: COMPUTED_WHEN
    needs_relevant: bool = False  # undefined for a query without a relevant item (empty_queries=zero: 0)

    def __post_init__(self) -> None:
        if isinstance(self.direction, bool):
            object.__setattr__(self, "direction", "higher" if self.direction else "lower")
        if self.direction not in DIRECTIONS:
            raise ConfigError(f"metric {self.name!r}: direction must be one of {DIRECTIONS}, got {self.direction!r}")
        if self.direction == "target" and self.ideal is None:
            raise ConfigError(f"metric {self.name!r}: a target metric needs its ideal value")
        if self.distance not in ("absolute", "ratio"):
            raise ConfigError(f"metric {self.name!r}: distance must be 'absolute' or 'ratio', got {self.distance!r}")
        if self.distance == "ratio" and not (self.ideal is not None and self.ideal > 0):
            raise ConfigError(f"metric {self.name!r}: a ratio distance needs a positive ideal value")
        if self.when not in COMPUTED_WHEN:
            raise ConfigError(f"metric {self.name!r}: when must be one of {COMPUTED_WHEN}, got {self.when!r}")
        if self.compute is not None and not (callable(self.compute) or (isinstance(self.compute, str)
                                                                        and ":" in self.compute)):
            raise ConfigError(f"metric {self.name!r}: compute must be a callable or 'module:function', "
                              f"got {self.compute!r}")
        if not re.match(r"^[a-z][a-z0-9_]*$", self.name) or "_at_" in self.name:
            raise ConfigError(f"metric name {self.name!r}: lower-case letters, digits and _ (no '_at_': "
                              "the cut-off is appended)")

    def compute_fn(self):
        """The compute function (a ``"module:function"`` reference imported on first use)."""
        if self.compute is None or callable(self.compute):
            return self.compute
        module, _, attr = self.compute.partition(":")
        import importlib

        return getattr(importlib.import_module(module), attr)

    @property
    def higher_is_better(self) -> bool:
        """True for "higher", False for "lower"; a target or descriptive metric raises :class:`ConfigError`."""
        if self.direction in ("target", "none"):
            raise ConfigError(_no_direction_message(self.name, self))
        return self.direction == "higher"


METRICS: PluginRegistry[MetricInfo] = PluginRegistry("metric", MetricInfo)
"""Every metric (:mod:`fairltr.plugins.registry`: the built-ins below, then the
``fairltr.metrics`` entry points: a :class:`MetricInfo` with a ``compute`` function is computed
by every evaluation, gated on and optimised like a built-in). A read-only mapping name -> info."""

for _info in [
    MetricInfo("ndcg", "higher", "query left out when its ideal DCG is 0 (0 with empty_queries=zero)", True,
               compute=_BUILTIN + "ndcg", needs_relevant=True),
    # trec_eval's / ir-measures' nDCG: linear gains max(judgment, 0) (fairltr.metrics.conventions)
    MetricInfo("ndcg_linear", "higher", "query left out when its ideal DCG is 0 (0 with empty_queries=zero)", True,
               compute=_BUILTIN + "ndcg_linear", when="linear_ndcg", needs_relevant=True),
    MetricInfo("precision", "higher", "never undefined for a non-empty query", True, compute=_BUILTIN + "precision"),
    MetricInfo("mrr", "higher", "query left out when it has no item with judgment > 0 (0 with empty_queries=zero)",
               True, compute=_BUILTIN + "mrr", when="retrieval", needs_relevant=True),
    MetricInfo("recall", "higher", "query left out when it has no item with judgment > 0 (0 with empty_queries=zero)",
               True, compute=_BUILTIN + "recall", when="retrieval", needs_relevant=True),
    MetricInfo("kendall_tau", "higher", "query left out with < 2 items or all-equal judgments",
               compute=_BUILTIN + "kendall_tau"),
    # how much of the ranking is decided by ties (docs/spec.md section 3: tied scores are unordered);
    # 1.0 = every query's scores all tied (a constant model): every relevance gate fails on it
    MetricInfo("tied_score_share", "lower", "query left out with < 2 items", ideal=0.0,
               compute=_BUILTIN + "tied_score_share"),
    # one compute gives the four exposure terms (exposure_protected, _nonprotected, _ratio, _gap)
    MetricInfo("exposure_protected", "none", "query left out without a protected item", kind="fairness",
               compute=_BUILTIN + "exposure"),
    MetricInfo("exposure_nonprotected", "none", "query left out without a non-protected item", kind="fairness"),
    MetricInfo("exposure_ratio", "target", "query left out unless both groups are present", kind="fairness",
               ideal=1.0, distance="ratio"),
    MetricInfo("exposure_gap", "target", "query left out unless both groups are present", kind="fairness",
               ideal=0.0),
    MetricInfo("exposure_disparity", "lower", "computed from exposure_ratio (same queries); NaN when it is",
               kind="fairness", ideal=0.0, compute=_BUILTIN + "exposure_disparity"),
    MetricInfo("exposure_shortfall", "lower", "computed from exposure_ratio (same queries); NaN when it is",
               kind="fairness", ideal=0.0, compute=_BUILTIN + "exposure_shortfall"),
    MetricInfo("selection_ratio", "target", "query left out unless both groups are present and the "
               "non-protected selection rate is > 0", True, kind="fairness", ideal=1.0, distance="ratio",
               compute=_BUILTIN + "selection_ratio"),
    MetricInfo("mrc", "higher", "parallel group left out with fewer than 2 languages", True, kind="fairness",
               variants=("intersection",)),
    MetricInfo("overlap", "higher", "parallel group left out with fewer than 2 languages", True, kind="fairness"),
    MetricInfo("rbo", "higher", "parallel group left out with fewer than 2 languages", True, kind="fairness"),
    # the audit of docs/spec.md section 3b: worst cases over every non-excluded category
    MetricInfo("impact_ratio", "higher", "pooled over the table; categories below min_category_share "
               "excluded; NaN when no category is selected", True, kind="fairness", per_attribute=True),
    MetricInfo("exposure_ratio_worst", "higher", "pooled over the table; categories below "
               "min_category_share excluded", kind="fairness", per_attribute=True),
    MetricInfo("disparate_treatment_ratio", "higher", "pooled over the table; categories below "
               "min_category_share or of merit 0 excluded", kind="fairness", per_attribute=True),
    MetricInfo("ndkl", "lower", "averaged over queries; never undefined for a non-empty query", True,
               kind="fairness", ideal=0.0, per_attribute=True),
    # LL144's scoring rate (docs/spec.md section 3c): share above the median score, pooled, over the largest
    MetricInfo("scoring_impact_ratio", "higher", "pooled over the table; unknown categories left out; categories "
               "below min_category_share excluded only with a reason", kind="fairness", per_attribute=True),
    # expected exposure (Diaz et al. 2020), RBP browsing model: fairltr.metrics.expected_exposure
    MetricInfo("ee_l", "lower", "never undefined for a non-empty query", kind="fairness", ideal=0.0),
    MetricInfo("ee_d", "lower", "never undefined for a non-empty query", kind="fairness"),
    MetricInfo("ee_r", "higher", "never undefined for a non-empty query", kind="fairness"),
    # TREC Fair Ranking 2022 task 1 (fairltr.metrics.awrf): AWRF in [1 - ln 2, 1], the score nDCG x AWRF
    # (a ranker's evaluation: alignment = the group, target = the groups' shares among the relevant candidates)
    MetricInfo("awrf", "higher", "query left out without a relevant candidate (no target distribution)",
               kind="fairness", ideal=1.0, compute=_BUILTIN + "awrf"),
    MetricInfo("ndcg_awrf", "higher", "query left out without a relevant candidate", kind="fairness",
               compute=_BUILTIN + "ndcg_awrf"),
    # inequity of amortized attention (Biega et al. 2018; fairltr.metrics.iaa), 0 = attention proportional
    # to relevance over the sequence of rankings
    MetricInfo("iaa", "lower", "query left out when a ranking's relevance sums to 0 (normalised attention)",
               kind="fairness", ideal=0.0, compute=_BUILTIN + "iaa"),
    # a stochastic policy's figures from sampled rankings (PLRank): fairltr.metrics.policy
    MetricInfo("expected_ndcg", "higher", "query left out when its ideal DCG is 0", True),
    MetricInfo("expected_exposure_protected", "none", "query left out without a protected item", kind="fairness"),
    MetricInfo("expected_exposure_nonprotected", "none", "query left out without a non-protected item",
               kind="fairness"),
    MetricInfo("expected_exposure_ratio", "target", "query left out unless both groups are present",
               kind="fairness", ideal=1.0, distance="ratio"),
    MetricInfo("expected_exposure_disparity", "lower", "computed from expected_exposure_ratio (same queries); "
               "NaN when it is", kind="fairness", ideal=0.0),
]:
    METRICS.register(_info)


def per_query_declarations() -> list[MetricInfo]:
    """The metrics every evaluation computes per query (those with a ``compute``), in
    declaration order: the built-ins, then plugins."""
    return [m for m in METRICS.values() if m.compute is not None]


AUDIT_METRICS = ("impact_ratio", "exposure_ratio_worst", "disparate_treatment_ratio", "ndkl", "scoring_impact_ratio")
"""Base names of the audit's worst-case figures (:func:`fairltr.metrics.audit_ranking`)."""

CI_SUFFIXES = ("_ci_low", "_ci_high")
"""Suffixes of a metric's confidence bounds (``impact_ratio_at_10_ci_low``)."""

_HEADLINE = ("impact_ratio_at_{k}", "exposure_ratio_worst", "disparate_treatment_ratio", "ndkl_at_{k}",
             "exposure_ratio", "exposure_disparity", "exposure_shortfall", "selection_ratio_at_{k}",
             "ndcg_at_{k}", "kendall_tau", "mrc_at_5", "mrr_at_100")


QUERY_INTERVAL_METRICS = ("awrf", "ndcg_awrf", "iaa")
"""Per-query metrics outside the headline that get a query-bootstrap interval too when an
evaluation asks for intervals (the same resampled queries as the headline's)."""


def headline_metrics(k: int = 10) -> tuple[str, ...]:
    """:data:`HEADLINE_METRICS` with the selection cut-off ``k`` (audit and relevance at k)."""
    return tuple(name.format(k=k) for name in _HEADLINE)


HEADLINE_METRICS: tuple[str, ...] = headline_metrics(10)
"""The short set a reader looks for first, in this order (present keys only): the audit's
worst cases, the binary exposure parity of section 3, relevance. Every one of them gets a
confidence interval when evaluate_ranking is asked for one (docs/audit.md)."""

_LANG = re.compile(r"^[A-Za-z][\w-]*$")


def _base_info(base: str) -> MetricInfo | None:
    if base in METRICS:
        return None if METRICS[base].takes_k else METRICS[base]  # ndcg needs its k: ndcg_at_10
    if "_at_" not in base:
        return None
    head, _, tail = base.rpartition("_at_")
    if tail.isdigit() and head in METRICS:
        return METRICS[head]
    # a declared variant after the cut-off: mrc_at_5_intersection
    k, _, variant = tail.partition("_")
    info = METRICS.get(head)
    if info is not None and k.isdigit() and variant in info.variants:
        return info
    return None


def metric_info(key: str) -> MetricInfo:
    """Info for a full metric key such as ``ndcg_at_10``, ``exposure_ratio``, ``mrr_at_100/de``,
    ``mrc_at_5_intersection``, ``kendall_tau_n_queries``, ``impact_ratio_at_10.sex:race`` or
    ``ndcg_at_10_ci_low``; :class:`KeyError` for an unknown key."""
    base = key
    for suffix in CI_SUFFIXES:
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    base = base[: -len("_n_queries")] if base.endswith("_n_queries") else base
    if "." in base:  # a per-attribute figure: impact_ratio_at_10.race
        head, _, attribute = base.partition(".")
        info = _base_info(head)
        if info is not None and info.per_attribute and attribute.strip() and "/" not in head:
            return info
        raise KeyError(f"unknown metric {key!r}; per-attribute keys (<metric>.<attribute>) exist for "
                       f"{[m for m in METRICS if METRICS[m].per_attribute]}")
    info = _base_info(base)
    if info is None and "/" in base:  # per-language value: mrr_at_100/de
        head, _, lang = base.partition("/")
        if _LANG.match(lang):
            info = _base_info(head)
    if info is None:
        raise KeyError(f"unknown metric {key!r}; known: {sorted(METRICS)} (append _at_<k> where k applies)")
    return info


def is_metric_key(key: str) -> bool:
    """Whether :func:`metric_info` knows ``key``."""
    try:
        metric_info(key)
    except KeyError:
        return False
    return True


def _no_direction_message(key: str, info: MetricInfo) -> str:
    if info.direction == "none":
        return (f"{key} describes one group's exposure and has no better side (more protected exposure is "
                "not fairer): compare the groups with exposure_disparity (minimise) or bound "
                "exposure_ratio from both sides, e.g. '0.8<=exposure_ratio<=1.25'")
    if info.name == "exposure_gap":
        return (f"{key} is signed (Exp(non-protected) - Exp(protected); 0 = parity, below 0 over-exposes the "
                "protected group), a target, not a better direction: optimise exposure_disparity or "
                f"exposure_shortfall, or bound it from both sides, e.g. '-0.01<={key}<=0.01'")
    if info.name == "exposure_ratio":
        hint = ("optimise exposure_disparity (1 - min(R, 1/R), 0 at parity) or exposure_shortfall "
                f"(max(0, 1 - R)), or bound it from both sides, e.g. '0.8<={key}<=1.25'")
    else:
        hint = f"bound it instead, e.g. '{key}>=0.8' (the four-fifths rule) or '0.8<={key}<=1.25'"
    return f"{key} has a target value of {info.ideal!r} (parity), not a better direction: {hint}"


def higher_is_better(key: str) -> bool:
    """Direction of a higher- or lower-is-better metric key. A target metric (``exposure_ratio``,
    ``selection_ratio_at_<k>``) or a descriptive one (``exposure_protected``) has none:
    :class:`ConfigError` says what to use instead. ``<metric>_n_queries`` counts follow their metric."""
    info = metric_info(key)
    if info.direction in ("target", "none"):
        raise ConfigError(_no_direction_message(key, info))
    return info.direction == "higher"


def direction(key: str) -> str:
    """``"higher"``, ``"lower"``, ``"target"`` or ``"none"``."""
    return metric_info(key).direction


def ideal(key: str) -> float | None:
    """The ideal value (1.0 for the parity ratios, 0.0 for the disparities), None when there is none."""
    return metric_info(key).ideal


def distance_from_ideal(key: str, value: float) -> float:
    """How far ``value`` is from the metric's ideal (0 = ideal; NaN stays NaN).

    Ratio targets: ``1 - min(v / ideal, ideal / v)`` (for ``exposure_ratio`` this is
    ``exposure_disparity``); absolute: ``|v - ideal|``. Metrics without an ideal raise
    :class:`ConfigError`.
    """
    info = metric_info(key)
    if info.ideal is None:
        raise ConfigError(f"{key} has no ideal value ({info.direction} is better)")
    v = float(value)
    if math.isnan(v):
        return math.nan
    if info.distance == "ratio":
        r = v / info.ideal
        return 1.0 - (1.0 / r if r >= 1.0 else r)
    return abs(v - info.ideal)


def is_better(key: str, a: float, b: float) -> bool:
    """Whether value ``a`` is strictly better than ``b`` for metric ``key`` (higher, lower, or
    closer to the target). NaN is worse than any number and never better than anything. A
    descriptive metric (direction ``"none"``) has no better value: :class:`ConfigError`."""
    if direction(key) == "none":
        raise ConfigError(_no_direction_message(key, metric_info(key)))
    a, b = float(a), float(b)
    if math.isnan(a):
        return False
    if math.isnan(b):
        return True
    d = direction(key)
    if d == "higher":
        return a > b
    if d == "lower":
        return a < b
    return distance_from_ideal(key, a) < distance_from_ideal(key, b)


def optimisation_direction(key: str) -> str:
    """Optuna's ``"maximize"`` / ``"minimize"`` for a metric; a target metric raises :class:`ConfigError`."""
    return "maximize" if higher_is_better(key) else "minimize"


def direction_label(key: str) -> str:
    """Human label: ``"higher is better"``, ``"lower is better"``, ``"target 1.0 (parity)"`` or
    ``"descriptive (no better side)"``."""
    info = metric_info(key)
    if info.direction == "none":
        return "descriptive (no better side)"
    if info.direction == "target":
        return f"target {info.ideal:.1f} (parity)" if info.distance == "ratio" else f"target {info.ideal:g} (parity)"
    return f"{info.direction} is better"
