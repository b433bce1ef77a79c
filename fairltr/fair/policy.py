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
  rest of the string, so it comes last;
* ``<plugin>:name=value,...[,k=10]``: any other declared re-ranker with its declared settings.

The method names, the setting names and which method takes which setting are read from the
re-ranker declarations (:data:`fairltr.fair.rerankers.RERANKERS`, built-ins and the
``fairltr.rerankers`` entry points); the lists :data:`POLICY_METHODS` and :data:`OVERRIDE_FIELDS`
are computed from them when read (:func:`policy_methods`, :func:`override_fields`). A policy
applies the declaration's ``serve`` (or ``apply``) function.

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
           "overrides_text", "policy_from_params", "apply_policy", "NO_POLICY", "policy_methods", "override_fields",
           "request_param_types"]

_BUILTIN_FIELDS = ("p", "alpha", "adjust", "k", "target")  # ServingPolicy's own fields: the built-ins' settings
_TRUE = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def policy_methods() -> tuple[str, ...]:
    """``none`` and every declared re-ranker (:data:`fairltr.fair.rerankers.RERANKERS`)."""
    from fairltr.fair.rerankers import reranker_names

    return ("none", *reranker_names())


def _fields() -> tuple[str, ...]:
    """The settings a policy spec may name: every re-ranker's declared settings (the built-ins':
    ``p, alpha, adjust, k, target``)."""
    from fairltr.fair.rerankers import setting_names

    return setting_names()


def override_fields() -> tuple[str, ...]:
    """The request params a served model may allow (``--serve-overrides``), in their printed order."""
    return ("rerank", *_fields())


def __getattr__(name: str) -> Any:  # the lists, read from the declarations when asked for
    if name == "POLICY_METHODS":
        return policy_methods()
    if name == "OVERRIDE_FIELDS":
        return override_fields()
    if name == "GEYIK_METHODS":
        from fairltr.fair.builtin_rerankers import GEYIK_NAMES

        return GEYIK_NAMES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _declaration(method: str):
    from fairltr.fair.rerankers import RERANKERS

    decl = RERANKERS.get(method)
    if decl is None:
        raise ConfigError(f"rerank must be one of {list(policy_methods())}, got {method!r}")
    return decl


@dataclass(frozen=True)
class ServingPolicy:
    """A post-processing policy: ``method`` (``none`` or a declared re-ranker) and its settings.

    ``p`` (FA*IR's target protected proportion, required for ``fair``), ``alpha`` (its
    significance, default 0.1), ``adjust`` (multiple-testing adjustment, default True), ``k``
    (top-k re-ranked; None = every candidate) and ``target`` (Geyik's category mix,
    ``"A:0.3,B:0.7"``; None = the pool's mix); ``settings``: a plugin re-ranker's other declared
    settings as ``((name, value), ...)`` (checked against its declaration)."""

    method: str = "none"
    p: float | str | None = None  # a str: multinomial FA*IR's "category=share,..." (fair only)
    alpha: float = 0.1
    adjust: bool = True
    k: int | None = None
    target: str | None = None
    settings: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        decl = None if self.method == "none" else _declaration(self.method)
        if isinstance(self.p, str):
            if decl is None or not decl.takes_setting("p"):
                raise ConfigError(f"rerank {self.method!r} takes {decl.main if decl else 'no setting'}, not p")
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
        if decl is not None:
            self._check_declared(decl)
        if self.target is not None:
            from fairltr.fair.target import parse_target

            parse_target(self.target)  # the Geyik re-rankers' own grammar: [column=]cat:share,...

    def _check_declared(self, decl) -> None:
        """What the re-ranker's declaration says: its required settings given, no setting of
        another re-ranker, its own settings of the declared types."""
        from fairltr.fair.rerankers import declarers

        given = dict(self.settings)
        for name in decl.required:
            if (getattr(self, name) if name in _BUILTIN_FIELDS else given.get(name)) is None:
                raise ConfigError(f"rerank {self.method!r} needs {name} ({decl.describe_setting(name)}), "
                                  f"e.g. {decl.example or self.method}")
        for name in ("target", "p", *given):
            if (getattr(self, name, None) if name in _BUILTIN_FIELDS else given[name]) is not None \
                    and not decl.takes_setting(name):
                note = next((d.notes[name] for d in declarers(name) if name in d.notes), None)
                raise ConfigError(f"rerank {self.method!r} takes {decl.takes_text}, not {name}"
                                  + (f" ({note})" if note else ""))
        checked = tuple((f, decl.check_value(f, given[f])) for f in decl.fields if given.get(f) is not None)
        object.__setattr__(self, "settings", checked)

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

    def values(self) -> dict[str, Any]:
        """Every setting the re-ranker takes (its declared fields but k), by name."""
        given = dict(self.settings)
        decl = _declaration(self.method)
        return {f: getattr(self, f) if f in _BUILTIN_FIELDS else given.get(f) for f in decl.fields if f != "k"}

    def describe(self) -> str:
        """The policy as its own spec string (``fair:p=0.3,alpha=0.1,adjust=true``)."""
        if not self.active:
            return "none"
        decl = _declaration(self.method)
        parts = []
        if decl.takes_setting("p") and self.p is not None and not isinstance(self.p, str):
            parts.append(f"p={self.p:g}")
        if decl.takes_setting("alpha"):
            parts.append(f"alpha={self.alpha:g}")
        if decl.takes_setting("adjust"):
            parts.append(f"adjust={str(self.adjust).lower()}")
        parts += [f"{f}={_text(v)}" for f, v in self.settings]
        if self.k is not None:
            parts.append(f"k={int(self.k)}")
        if isinstance(self.p, str):  # a share list takes the rest of the spec: last
            parts.append("p=" + self.multinomial_spec())
        if self.target is not None:
            parts.append(f"target={self.target}")
        return self.method + (":" + ",".join(parts) if parts else "")


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


NO_POLICY = ServingPolicy()


def _policy(method: str, values: Mapping[str, Any]) -> ServingPolicy:
    """A policy from ``method`` and setting values by name: the built-ins' fields as fields, any
    other declared setting into ``settings``."""
    own = {f: v for f, v in values.items() if f in _BUILTIN_FIELDS}
    extra = tuple((f, v) for f, v in values.items() if f not in _BUILTIN_FIELDS and v is not None)
    return ServingPolicy(method=method, **own, settings=extra)


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
    if field not in _BUILTIN_FIELDS:
        return raw  # a plugin's setting: checked against its declaration by the policy
    return str(raw)


def parse_policy(spec: str | None) -> ServingPolicy:
    """A policy from its spec string (module docstring); None or "" or "none" = no policy."""
    if spec is None or not str(spec).strip() or str(spec).strip() == "none":
        return NO_POLICY
    method, _, rest = str(spec).strip().partition(":")
    method = method.strip().lower()
    if method not in policy_methods():
        raise ConfigError(f"--serve-rerank: unknown method {method!r}; one of {list(policy_methods())} "
                          "(e.g. fair:p=0.3,alpha=0.1 or detconstsort:k=10)")
    fields: dict[str, Any] = {}
    known = _fields()
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
        if not sep or key not in known:
            raise ConfigError(f"--serve-rerank: {item.strip()!r} is not one of {list(known)} as key=value "
                              f"(e.g. fair:p=0.3,alpha=0.1)")
        if key in fields:
            raise ConfigError(f"--serve-rerank: {key} given twice")
        fields[key] = _coerce(key, value.strip())
        rest = rest.strip()
    return _policy(method, fields)


def parse_overrides(spec: str | None, policy: ServingPolicy | None = None) -> frozenset[str]:
    """The request params a served model accepts: ``"none"``, ``"all"`` or a comma list of
    :func:`override_fields` (``"p,k"``). ``None`` (not given) is the default: none once ``policy``
    is active (a recorded policy holds), every field otherwise (a request may choose a policy)."""
    fields = override_fields()
    if spec is None or not str(spec).strip():
        return frozenset() if policy is not None and policy.active else frozenset(fields)
    names = [n.strip().lower() for n in str(spec).split(",")]
    if names == ["none"]:
        return frozenset()
    if names == ["all"]:
        return frozenset(fields)
    bad = [n for n in names if n not in fields]
    if bad or not all(names):
        shown = bad or [n for n in names if not n]
        raise ConfigError(f"--serve-overrides: {shown} not among {list(fields)} "
                          "(or give none / all alone), e.g. --serve-overrides p,k")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"--serve-overrides: {dupes[0]} given twice")
    return frozenset(names)


def overrides_text(allowed: frozenset[str] | set[str]) -> str:
    """``"none"``, ``"all"`` or the allowed fields in :func:`override_fields` order (what
    :func:`parse_overrides` reads back)."""
    fields = override_fields()
    if not allowed:
        return "none"
    if set(allowed) >= set(fields):
        return "all"
    return ",".join(f for f in fields if f in allowed)


def policy_from_params(recorded: ServingPolicy, params: Mapping[str, Any] | None,
                       allowed: frozenset[str] | set[str] | None = None) -> ServingPolicy:
    """The policy of one request: ``recorded`` with every non-None field of ``params`` replacing
    its own (``rerank`` names the method). Switching methods drops the other method's fields.
    A param outside ``allowed`` (the model's ``--serve-overrides``; None: every field) is refused,
    whatever its value."""
    if not params:
        return recorded
    fields_known = override_fields()
    allowed = frozenset(fields_known) if allowed is None else allowed
    unknown = sorted(set(params) - set(fields_known))
    if unknown:
        raise ConfigError(f"unknown serving params {unknown}; known: {list(fields_known)}")
    refused = [f for f in fields_known if params.get(f) is not None and f not in allowed]
    if refused:
        raise ConfigError(f"serving params {refused} are not allowed by this model, whose policy "
                          f"{recorded.describe()!r} holds; allowed overrides: {overrides_text(allowed)}")
    fields = {**{f: v for f, v in recorded.as_dict().items() if f != "settings"}, **dict(recorded.settings)}
    method = params.get("rerank")
    if method is not None:
        method = str(method).strip().lower()
        if method not in policy_methods():
            raise ConfigError(f"rerank must be one of {list(policy_methods())}, got {params.get('rerank')!r}")
        if method != recorded.method:  # another method: none of the recorded method's settings carry over
            fields = {**{f: v for f, v in NO_POLICY.as_dict().items() if f != "settings"}, "method": method}
    changes = {f: _coerce(f, params[f]) for f in _fields() if params.get(f) is not None}
    if fields["method"] == "none" and changes:
        raise ConfigError(f"serving params {sorted(changes)} need a re-ranker: add rerank "
                          f"(one of {list(policy_methods()[1:])})")
    merged = {**fields, **changes}
    return _policy(merged.pop("method"), merged)


def apply_policy(
    df: pd.DataFrame, scores: np.ndarray, policy: ServingPolicy, columns: RankingColumns
) -> pd.DataFrame:
    """The served ranking of ``df`` under ``policy``, in INPUT row order and index: the query
    column (and the item column when the contract names one), ``score``, ``rank`` (1-based per
    query, after re-ranking) and ``fair_feasible`` (per query: whether the policy's constraint
    was met; always True for ``none``). The re-ranker is the declaration's ``serve`` (or ``apply``)."""
    from fairltr.data import query_codes, rank_within_query

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
    ranked = _declaration(policy.method).run(frame, s, columns=RankingColumns(query=columns.query, group=group,
                                                                              judgment=None),
                                             k=policy.k, served=True, **policy.values())
    rows = ranked["__row__"].to_numpy()
    rank = np.empty(len(df), dtype=np.int64)
    rank[rows] = ranked["rank"].to_numpy()
    feasible = np.empty(len(df), dtype=bool)
    feasible[rows] = ranked["fair_feasible"].to_numpy(dtype=bool)
    out["rank"] = rank
    out["fair_feasible"] = feasible
    return out


def request_param_types(shares: bool = False) -> list[tuple[str, str]]:
    """The served model's request params and their MLflow types: ``rerank`` and every declared
    setting (the built-ins' as before; ``shares``: a recorded share-list ``p`` makes ``p`` a
    string; a plugin's numeric setting is a double, a true/false one a boolean, others strings)."""
    from fairltr.fair.rerankers import declarers

    builtin = {"p": "string" if shares else "double", "alpha": "double", "adjust": "boolean", "k": "long",
               "target": "string"}
    out = [("rerank", "string")]
    for name in _fields():
        if name in builtin:
            out.append((name, builtin[name]))
            continue
        decl = declarers(name)[0]
        default = decl.options.get(name)
        out.append((name, "double" if decl.param(name) is not None else "boolean" if isinstance(default, bool)
                    else "string"))
    return out
