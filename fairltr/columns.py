"""The column contract of a ranking table: which columns hold the query id, the group, the
judgment and (optionally) an item id. One frozen object travels through data, metrics, FA*IR,
tracking, workflows and the CLI instead of four loose strings.

Inside the library every function takes ``columns: RankingColumns`` only. Loose ``query=``,
``group=``, ``judgment=`` and ``item=`` keywords remain only at the outer edges that users call
(``fairltr.to_batch``, ``to_buckets``, ``rank_frame``, ``evaluate_ranking``, ``DELTR.fit`` and
DELTR's / PLRank's ``protected=``, ``fairltr.io.read_table`` / ``read_ranking``, the
``fairltr.fair`` functions); each edge maps them with the ``columns=`` object into ONE
:class:`RankingColumns` through :func:`resolve_columns`, THE helper for this (a keyword left at
:data:`UNSET` takes the object's name), and passes only the object on.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from fairltr.errors import ConfigError

__all__ = ["RankingColumns", "DEFAULT_COLUMNS", "UNSET", "resolve_columns", "check_column_roles", "ColumnNames"]


class _Unset:
    """The type of :data:`UNSET` (one instance; copies and pickles stay that instance)."""

    _instance: "_Unset | None" = None

    def __new__(cls) -> "_Unset":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self) -> str:
        return "UNSET"  # pickle / deepcopy: the module attribute, i.e. this very object


UNSET: Any = _Unset()
"""Default of the ``query`` / ``group`` / ``judgment`` / ``item`` keywords: "take the name from
``columns``". (``None`` is a value: no group column, no judgment column, no item column.)"""


def check_column_roles(
    *, query: str | None = None, group: str | None = None, judgment: str | None = None, item: str | None = None
) -> None:
    """Raise :class:`ConfigError` when two of the query, group, judgment and item columns are
    the same column (e.g. ``judgment="protected"`` would make the group the label). None
    means "no such column" and is never a clash."""
    seen: dict[object, str] = {}
    for role, name in (("query", query), ("group", group), ("judgment", judgment), ("item", item)):
        if name is None:
            continue
        if name in seen:
            raise ConfigError(f"the {seen[name]} and {role} columns must differ, both are {name!r}")
        seen[name] = role


@dataclass(frozen=True)
class RankingColumns:
    """Names of the special columns of a ranking table.

    ``query``: query id (rows of one query form one list); ``group``: the group attribute, or
    several (``group=("race", "sex")``; None: the table has no group column, every candidate is
    in group 0). Categories are integers >= 0 (0 = non-protected / the reference, >= 1
    protected: docs/spec.md section 1) or strings, as written in the file. After construction
    ``group`` is the FIRST attribute (what training and the binary section-3 metrics use) and
    :attr:`groups` every attribute, in the order given (the audit of docs/spec.md section 3b
    covers each and their intersection). ``judgment``: training/evaluation judgment, higher is
    better (None: no judgments, e.g. a table to score); ``item``: optional item (document) id,
    unique within a query when given. The names must be distinct: one column cannot be both a
    group and the label.
    """

    query: str = "query_id"
    group: str | None = "protected"
    judgment: str | None = "judgment"
    item: str | None = None
    more_groups: tuple[str, ...] = field(default=(), repr=False)
    """The attributes after the first (set from a tuple ``group``; read :attr:`groups`)."""

    def __post_init__(self) -> None:
        if not isinstance(self.query, str) or not self.query.strip():
            raise ConfigError(f"the query column name must be a non-empty string, got {self.query!r}")
        group, more = self.group, tuple(self.more_groups or ())
        if isinstance(group, (tuple, list)):
            if more:
                raise ConfigError("give the group attributes once: group=(first, second, ...)")
            names = tuple(group)
            group, more = (names[0], names[1:]) if names else (None, ())
        elif group is None and more:
            raise ConfigError(f"more_groups={more!r} without a first group attribute")
        object.__setattr__(self, "group", group)
        object.__setattr__(self, "more_groups", more)
        for role in ("group", "judgment", "item"):
            name = getattr(self, role)
            if name is not None and (not isinstance(name, str) or not name.strip()):
                raise ConfigError(f"the {role} column name must be a non-empty string (or None: no {role} "
                                  f"column), got {name!r}")
        for name in more:
            if not isinstance(name, str) or not name.strip():
                raise ConfigError(f"a group column name must be a non-empty string, got {name!r}")
        dup = [g for g in dict.fromkeys(self.groups) if self.groups.count(g) > 1]
        if dup:
            raise ConfigError(f"group attribute(s) {dup} given more than once")
        check_column_roles(query=self.query, group=self.group, judgment=self.judgment, item=self.item)
        for name in more:
            check_column_roles(query=self.query, group=name, judgment=self.judgment, item=self.item)

    def __repr__(self) -> str:
        group = self.groups if self.more_groups else self.group
        return (f"RankingColumns(query={self.query!r}, group={group!r}, judgment={self.judgment!r}, "
                f"item={self.item!r})")

    @property
    def groups(self) -> tuple[str, ...]:
        """Every group attribute, in the order given (``()`` when there is none)."""
        return () if self.group is None else (self.group, *self.more_groups)

    @property
    def special(self) -> tuple[str, ...]:
        """Query, judgment and item names: never features. (The group column is a feature of
        DELTR's standard ranker unless it is colorblind.)"""
        return tuple(c for c in (self.query, self.judgment, self.item) if c is not None)

    @property
    def named(self) -> tuple[str, ...]:
        """Every column the contract names (query, the groups, judgment, item; None skipped)."""
        return tuple(c for c in (self.query, *self.groups, self.judgment, self.item) if c is not None)

    def replace(self, **changes: Any) -> "RankingColumns":
        """A copy with some names changed (validated again). A new ``group`` (a name or a tuple
        of names) replaces every group attribute."""
        if "group" in changes and "more_groups" not in changes:
            changes["more_groups"] = ()
        return replace(self, **changes)

    def require(self, *roles: str, purpose: str = "this") -> "RankingColumns":
        """``self``, or a :class:`ConfigError` when one of ``roles`` ("group", "judgment",
        "item") is None; ``purpose`` names what needs it ("the metrics")."""
        missing = [r for r in roles if getattr(self, r) is None]
        if missing:
            raise ConfigError(f"{purpose} needs a {' and a '.join(missing)} column; the column contract names none")
        return self

    def as_dict(self) -> dict[str, Any]:
        """``{"query", "group", "judgment", "item"}``; ``group`` is the list of attributes when
        there are several (``RankingColumns(**d)`` reads either form back)."""
        return {"query": self.query, "group": list(self.groups) if self.more_groups else self.group,
                "judgment": self.judgment, "item": self.item}


DEFAULT_COLUMNS = RankingColumns()


class ColumnNames:
    """Mixin for an object holding a :class:`RankingColumns` as ``self.columns``: its query,
    group and judgment names as read-only attributes."""

    columns: RankingColumns

    @property
    def query(self) -> str:
        return self.columns.query

    @property
    def group(self) -> str | None:
        return self.columns.group

    @property
    def groups(self) -> tuple[str, ...]:
        return self.columns.groups

    @property
    def judgment(self) -> str | None:
        return self.columns.judgment


def resolve_columns(
    columns: RankingColumns | None = None,
    *,
    query: Any = UNSET,
    group: Any = UNSET,
    judgment: Any = UNSET,
    item: Any = UNSET,
    defaults: RankingColumns = DEFAULT_COLUMNS,
) -> RankingColumns:
    """THE place where loose column keywords become one contract: ``columns`` (None:
    ``defaults``) with every keyword that is not :data:`UNSET` replacing its name. A bad or
    clashing name is a :class:`ConfigError`."""
    base = defaults if columns is None else columns
    if not isinstance(base, RankingColumns):
        raise ConfigError(f"columns must be a fairltr.RankingColumns, got {type(base).__name__}")
    changes = {role: name for role, name in (("query", query), ("group", group), ("judgment", judgment),
                                             ("item", item)) if name is not UNSET}
    if not changes or all(_same(base, role, name) for role, name in changes.items()):
        return base
    return base.replace(**changes)


def _same(base: RankingColumns, role: str, name: Any) -> bool:
    if role == "group" and isinstance(name, (tuple, list)):
        return base.groups == tuple(name)
    return getattr(base, role) == name
