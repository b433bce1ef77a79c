"""Serving-time post-processing policies: which re-ranker a served model applies to its scores.

A policy is a method and its settings, written once as a string (the ``--serve-rerank`` option,
recorded with the model) or as the serving request's ``params``:

* ``none``: the model's own ranking (scores, ranks by decreasing score);
* ``fair:p=0.3,alpha=0.1[,adjust=true][,k=10]``: FA*IR's ranked group fairness re-ranker
  (docs/spec.md §4) of each query's top k (``k`` absent: the whole list);
* ``fair:alpha=0.1[,adjust=true][,k=10],p=1=0.2,2=0.1``: multinomial FA*IR (several protected
  categories, each with its minimum share; :func:`fairltr.fair.rerank_multinomial`). A ``p`` of
  ``category=share`` pairs takes the rest of the string, so it comes last. A category the policy
  names but a request lacks is dropped from the test and its queries are flagged infeasible.
  Such a model's request param ``p`` is a string (a share list, or ``"0.3"``); a model recorded
  with a numeric ``p`` (or none) takes a number only;
* ``detgreedy`` / ``detcons`` / ``detrelaxed`` / ``detconstsort`` ``[:k=10][,target=A:0.3,B:0.7]``:
  Geyik et al.'s multi-group re-rankers (``target`` absent: the pool's mix). ``target`` takes the
  rest of the string, so it comes last.

Request ``params`` override the recorded policy field by field (``{"rerank": "fair", "p": 0.4}``),
but only the fields the model allows (``--serve-overrides``, :func:`parse_overrides`): by default
none once a policy is recorded, so ``{"rerank": "none"}`` cannot switch a recorded policy off; a
model recorded without a policy lets a request choose one (every field) unless restricted. Every
error is a :class:`~fairltr.errors.ConfigError` naming the field (and the allowed overrides).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Mapping

import numpy as np
import pandas as pd

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError

__all__ = ["ServingPolicy", "POLICY_METHODS", "GEYIK_METHODS", "OVERRIDE_FIELDS", "parse_policy", "parse_overrides",
           "overrides_text", "policy_from_params", "apply_policy", "NO_POLICY"]

GEYIK_METHODS = ("detgreedy", "detcons", "detrelaxed", "detconstsort")
POLICY_METHODS = ("none", "fair", *GEYIK_METHODS)
_FIELDS = ("p", "alpha", "adjust", "k", "target")
OVERRIDE_FIELDS = ("rerank", *_FIELDS)
"""The request params a served model may allow (``--serve-overrides``), in their printed order."""
_TRUE = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


@dataclass(frozen=True)
class ServingPolicy:
    """A post-processing policy: ``method`` in :data:`POLICY_METHODS` and its settings.

    ``p`` (FA*IR's target protected proportion, required for ``fair``), ``alpha`` (its
    significance, default 0.1), ``adjust`` (multiple-testing adjustment, default True), ``k``
    (top-k re-ranked; None = every candidate) and ``target`` (Geyik's category mix,
    ``"A:0.3,B:0.7"``; None = the pool's mix)."""

    method: str = "none"
    p: float | str | None = None  # a str: multinomial FA*IR's "category=share,..." (fair only)
    alpha: float = 0.1
    adjust: bool = True
    k: int | None = None
    target: str | None = None

    def __post_init__(self) -> None:
        if self.method not in POLICY_METHODS:
            raise ConfigError(f"rerank must be one of {list(POLICY_METHODS)}, got {self.method!r}")
        if isinstance(self.p, str):
            if self.method != "fair":
                raise ConfigError(f"rerank {self.method!r} takes target, not p")
            from fairltr.fair.multinomial_rerank import parse_min_shares

            parse_min_shares(self.p)  # the one-line refusal of a bad share list
        elif self.p is not None and not (isinstance(self.p, (int, float)) and 0.0 < float(self.p) < 1.0):
            raise ConfigError(f"rerank p must be a number in (0, 1), got {self.p!r}")
        if not (isinstance(self.alpha, (int, float)) and 0.0 < float(self.alpha) < 1.0):
            raise ConfigError(f"rerank alpha must be a number in (0, 1), got {self.alpha!r}")
        if not isinstance(self.adjust, bool):
            raise ConfigError(f"rerank adjust must be true or false, got {self.adjust!r}")
        if self.k is not None and (isinstance(self.k, bool) or not isinstance(self.k, (int, np.integer))
                                   or int(self.k) < 1):
            raise ConfigError(f"rerank k must be a positive integer, got {self.k!r}")
        if self.method == "fair" and self.p is None:
            raise ConfigError("rerank 'fair' needs p (FA*IR's target protected proportion in (0, 1)), "
                              "e.g. fair:p=0.3,alpha=0.1")
        if self.method == "fair" and self.target is not None:
            raise ConfigError("rerank 'fair' takes p, not target (target is for the Geyik re-rankers)")
        if self.method in GEYIK_METHODS and self.p is not None:
            raise ConfigError(f"rerank {self.method!r} takes target (a category mix), not p (FA*IR's)")
        if self.target is not None:
            from fairltr.fair.target import parse_target

            parse_target(self.target)  # the Geyik re-rankers' own grammar: [column=]cat:share,...

    @property
    def active(self) -> bool:
        """Whether the policy re-ranks at all."""
        return self.method != "none"

    @property
    def multinomial(self) -> bool:
        """Whether ``p`` is a share list (multinomial FA*IR)."""
        return isinstance(self.p, str)

    def multinomial_spec(self) -> str:
        """The share list in its canonical form, ``1=0.2,2=0.1``."""
        from fairltr.fair.multinomial_rerank import parse_min_shares

        return ",".join(f"{c}={v:g}" for c, v in parse_min_shares(str(self.p)).items())

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """The policy as its own spec string (``fair:p=0.3,alpha=0.1,adjust=true``)."""
        if not self.active:
            return "none"
        parts = []
        if self.method == "fair" and isinstance(self.p, str):
            parts += [f"alpha={self.alpha:g}", f"adjust={str(self.adjust).lower()}"]
        elif self.method == "fair":
            parts += [f"p={self.p:g}", f"alpha={self.alpha:g}", f"adjust={str(self.adjust).lower()}"]
        if self.k is not None:
            parts.append(f"k={int(self.k)}")
        if isinstance(self.p, str):  # a share list takes the rest of the spec: last
            parts.append("p=" + self.multinomial_spec())
        if self.target is not None:
            parts.append(f"target={self.target}")
        return self.method + (":" + ",".join(parts) if parts else "")


NO_POLICY = ServingPolicy()


def _coerce(field: str, raw: Any) -> Any:
    if raw is None:
        return None
    if field == "adjust":
        if isinstance(raw, bool):
            return raw
        key = str(raw).strip().lower()
        if key not in _TRUE:
            raise ConfigError(f"rerank adjust must be true or false, got {raw!r}")
        return _TRUE[key]
    if field == "k":
        if isinstance(raw, bool):
            raise ConfigError(f"rerank k must be a positive integer, got {raw!r}")
        try:
            f = float(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"rerank k must be a positive integer, got {raw!r}") from None
        if not f.is_integer():
            raise ConfigError(f"rerank k must be a positive integer, got {raw!r}")
        return int(f)
    if field == "p" and isinstance(raw, str) and ("=" in raw or ":" in raw):
        return raw.strip()  # multinomial FA*IR's share list, checked by the policy
    if field in ("p", "alpha"):
        if isinstance(raw, bool):
            raise ConfigError(f"rerank {field} must be a number in (0, 1), got {raw!r}")
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"rerank {field} must be a number in (0, 1), got {raw!r}") from None
    return str(raw)


def parse_policy(spec: str | None) -> ServingPolicy:
    """A policy from its spec string (module docstring); None or "" or "none" = no policy."""
    if spec is None or not str(spec).strip() or str(spec).strip() == "none":
        return NO_POLICY
    method, _, rest = str(spec).strip().partition(":")
    method = method.strip().lower()
    if method not in POLICY_METHODS:
        raise ConfigError(f"--serve-rerank: unknown method {method!r}; one of {list(POLICY_METHODS)} "
                          "(e.g. fair:p=0.3,alpha=0.1 or detconstsort:k=10)")
    fields: dict[str, Any] = {}
    rest = rest.strip()
    while rest:
        if rest.startswith("target="):
            fields["target"] = rest[len("target="):].strip()
            break
        if rest.startswith("p=") and any(sep in rest[2:].partition(",")[0] for sep in "=:"):
            if "p" in fields:
                raise ConfigError("--serve-rerank: p given twice")
            fields["p"] = rest[2:].strip()  # a share list: the rest of the spec
            break
        item, _, rest = rest.partition(",")
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in _FIELDS:
            raise ConfigError(f"--serve-rerank: {item.strip()!r} is not one of {list(_FIELDS)} as key=value "
                              f"(e.g. fair:p=0.3,alpha=0.1)")
        if key in fields:
            raise ConfigError(f"--serve-rerank: {key} given twice")
        fields[key] = _coerce(key, value.strip())
        rest = rest.strip()
    return ServingPolicy(method=method, **fields)


def parse_overrides(spec: str | None, policy: ServingPolicy | None = None) -> frozenset[str]:
    """The request params a served model accepts: ``"none"``, ``"all"`` or a comma list of
    :data:`OVERRIDE_FIELDS` (``"p,k"``). ``None`` (not given) is the default: none once ``policy``
    is active (a recorded policy holds), every field otherwise (a request may choose a policy)."""
    if spec is None or not str(spec).strip():
        return frozenset() if policy is not None and policy.active else frozenset(OVERRIDE_FIELDS)
    names = [n.strip().lower() for n in str(spec).split(",")]
    if names == ["none"]:
        return frozenset()
    if names == ["all"]:
        return frozenset(OVERRIDE_FIELDS)
    bad = [n for n in names if n not in OVERRIDE_FIELDS]
    if bad or not all(names):
        shown = bad or [n for n in names if not n]
        raise ConfigError(f"--serve-overrides: {shown} not among {list(OVERRIDE_FIELDS)} "
                          "(or give none / all alone), e.g. --serve-overrides p,k")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"--serve-overrides: {dupes[0]} given twice")
    return frozenset(names)


def overrides_text(allowed: frozenset[str] | set[str]) -> str:
    """``"none"``, ``"all"`` or the allowed fields in :data:`OVERRIDE_FIELDS` order (what
    :func:`parse_overrides` reads back)."""
    if not allowed:
        return "none"
    if set(allowed) >= set(OVERRIDE_FIELDS):
        return "all"
    return ",".join(f for f in OVERRIDE_FIELDS if f in allowed)


def policy_from_params(recorded: ServingPolicy, params: Mapping[str, Any] | None,
                       allowed: frozenset[str] | set[str] = frozenset(OVERRIDE_FIELDS)) -> ServingPolicy:
    """The policy of one request: ``recorded`` with every non-None field of ``params`` replacing
    its own (``rerank`` names the method). Switching methods drops the other method's fields.
    A param outside ``allowed`` (the model's ``--serve-overrides``) is refused, whatever its value."""
    if not params:
        return recorded
    unknown = sorted(set(params) - set(OVERRIDE_FIELDS))
    if unknown:
        raise ConfigError(f"unknown serving params {unknown}; known: {list(OVERRIDE_FIELDS)}")
    refused = [f for f in OVERRIDE_FIELDS if params.get(f) is not None and f not in allowed]
    if refused:
        raise ConfigError(f"serving params {refused} are not allowed by this model, whose policy "
                          f"{recorded.describe()!r} holds; allowed overrides: {overrides_text(allowed)}")
    fields = recorded.as_dict()
    method = params.get("rerank")
    if method is not None:
        method = str(method).strip().lower()
        if method not in POLICY_METHODS:
            raise ConfigError(f"rerank must be one of {list(POLICY_METHODS)}, got {params.get('rerank')!r}")
        if method != recorded.method:  # another method: none of the recorded method's settings carry over
            fields = {**NO_POLICY.as_dict(), "method": method}
    changes = {f: _coerce(f, params[f]) for f in _FIELDS if params.get(f) is not None}
    if fields["method"] == "none" and changes:
        raise ConfigError(f"serving params {sorted(changes)} need a re-ranker: add rerank "
                          f"(one of {list(POLICY_METHODS[1:])})")
    return ServingPolicy(**{**fields, **changes})


def apply_policy(
    df: pd.DataFrame, scores: np.ndarray, policy: ServingPolicy, columns: RankingColumns
) -> pd.DataFrame:
    """The served ranking of ``df`` under ``policy``, in INPUT row order and index: the query
    column (and the item column when the contract names one), ``score``, ``rank`` (1-based per
    query, after re-ranking) and ``fair_feasible`` (per query: whether the policy's constraint
    was met; always True for ``none``)."""
    from fairltr.data import query_codes, rank_within_query
    from fairltr.fair.rerank import rerank

    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    keys = [c for c in (columns.query, columns.item) if c is not None and c in df.columns]
    out = pd.DataFrame({c: df[c].to_numpy() for c in keys}, index=df.index)
    out["score"] = s
    if not policy.active:
        codes, _ = query_codes(df, columns.query)
        out["rank"] = rank_within_query(codes, s)
        out["fair_feasible"] = True
        return out
    group = columns.group
    if group is None or group not in df.columns:
        raise ConfigError(f"rerank {policy.method!r} needs the group column {group!r} in the input; "
                          f"columns: {list(df.columns)}")
    frame = df[[columns.query, group]].reset_index(drop=True)
    frame["__row__"] = np.arange(len(df))
    g = frame[group]
    if pd.api.types.is_float_dtype(g) and bool(np.all(np.isfinite(g))) and bool(np.all(g == np.round(g))):
        # a group that is also a model feature arrives as double (the signature casts features): its
        # categories are the integers 0, 1, ... again, as a target names them ("0:0.5,1:0.5")
        frame[group] = g.astype(np.int64)
    if policy.method == "fair" and policy.multinomial:
        ranked = _multinomial(frame, s, policy, RankingColumns(query=columns.query, group=group, judgment=None))
    elif policy.method == "fair":
        ranked = rerank(frame, s, k=policy.k, p=policy.p, alpha=policy.alpha, adjust=policy.adjust,
                        columns=RankingColumns(query=columns.query, group=group, judgment=None))
    else:
        ranked = _geyik(frame, s, policy, RankingColumns(query=columns.query, group=group, judgment=None))
    rows = ranked["__row__"].to_numpy()
    rank = np.empty(len(df), dtype=np.int64)
    rank[rows] = ranked["rank"].to_numpy()
    feasible = np.empty(len(df), dtype=bool)
    feasible[rows] = ranked["fair_feasible"].to_numpy(dtype=bool)
    out["rank"] = rank
    out["fair_feasible"] = feasible
    return out


def _geyik(frame: pd.DataFrame, scores: np.ndarray, policy: ServingPolicy, columns: RankingColumns) -> pd.DataFrame:
    """Geyik et al.'s re-rankers (:mod:`fairltr.fair.geyik`): the ranked frame with ``rank`` and
    ``fair_feasible``."""
    try:
        from fairltr.fair import geyik
    except ImportError:  # pragma: no cover - present once the multi-group re-rankers land
        raise ConfigError(f"rerank {policy.method!r} needs fairltr.fair.geyik, which this build lacks") from None
    target, missing = _target_in_batch(policy.target, frame[columns.group])
    ranked = geyik.rerank_geyik(frame, scores, columns=columns, method=policy.method, target=target, k=policy.k)
    if missing:  # a category the target asks for is absent from the whole request: it cannot be met
        ranked["fair_feasible"] = False
    return ranked


def _multinomial(frame: pd.DataFrame, scores: np.ndarray, policy: ServingPolicy, columns: RankingColumns
                 ) -> pd.DataFrame:
    """Multinomial FA*IR of a request: the categories the policy names but the request lacks are
    dropped from the test and every query is flagged infeasible (their minimums cannot be met)."""
    from fairltr.fair.multinomial_rerank import parse_min_shares, rerank_multinomial

    shares = parse_min_shares(str(policy.p))
    present = set(frame[columns.group].astype(str))
    kept = {c: v for c, v in shares.items() if c in present}
    if kept:
        ranked = rerank_multinomial(frame, scores, p=kept, k=policy.k, alpha=policy.alpha, adjust=policy.adjust,
                                    columns=columns)
    else:  # no protected category in the request: the model's own order
        from fairltr.data import query_codes, rank_within_query

        codes, _ = query_codes(frame, columns.query)
        ranked = frame.assign(rank=rank_within_query(codes, scores))
    if len(kept) < len(shares):
        ranked["fair_feasible"] = False
    return ranked


def _target_in_batch(text: str | None, groups: pd.Series) -> tuple[dict[str, float] | None, bool]:
    """The policy's target restricted to the categories present in a request's group column
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
