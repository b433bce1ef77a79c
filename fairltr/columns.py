"""The column contract of a ranking table: which columns hold the query id, the group, the
judgment and (optionally) an item id. One frozen object travels through data, metrics, FA*IR,
tracking, workflows and the CLI instead of four loose strings.

Public functions that predate the contract still accept ``query=``, ``group=``, ``judgment=``
and ``item=`` keywords; each resolves them with the ``columns=`` object into ONE
:class:`RankingColumns` through :func:`resolve_columns` (a keyword left at :data:`UNSET` takes
the object's name), and everything below that call takes the object only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
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

    ``query``: query id (rows of one query form one list); ``group``: integer group, 0 =
    non-protected, >= 1 protected (None: the table has no group column, every candidate is in
    group 0); ``judgment``: training/evaluation judgment, higher is better (None: no judgments,
    e.g. a table to score); ``item``: optional item (document) id, unique within a query when
    given. The names must be distinct: one column cannot be both the group and the label.
    """

    query: str = "query_id"
    group: str | None = "protected"
    judgment: str | None = "judgment"
    item: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.query, str) or not self.query.strip():
            raise ConfigError(f"the query column name must be a non-empty string, got {self.query!r}")
        for role in ("group", "judgment", "item"):
            name = getattr(self, role)
            if name is not None and (not isinstance(name, str) or not name.strip()):
                raise ConfigError(f"the {role} column name must be a non-empty string (or None: no {role} "
                                  f"column), got {name!r}")
        check_column_roles(query=self.query, group=self.group, judgment=self.judgment, item=self.item)

    @property
    def special(self) -> tuple[str, ...]:
        """Query, judgment and item names: never features. (The group column is a feature of
        DELTR's standard ranker unless it is colorblind.)"""
        return tuple(c for c in (self.query, self.judgment, self.item) if c is not None)

    @property
    def named(self) -> tuple[str, ...]:
        """Every column the contract names (query, group, judgment, item; None skipped)."""
        return tuple(c for c in (self.query, self.group, self.judgment, self.item) if c is not None)

    def replace(self, **changes: str | None) -> "RankingColumns":
        """A copy with some names changed (validated again)."""
        return replace(self, **changes)

    def require(self, *roles: str, purpose: str = "this") -> "RankingColumns":
        """``self``, or a :class:`ConfigError` when one of ``roles`` ("group", "judgment",
        "item") is None; ``purpose`` names what needs it ("the metrics")."""
        missing = [r for r in roles if getattr(self, r) is None]
        if missing:
            raise ConfigError(f"{purpose} needs a {' and a '.join(missing)} column; the column contract names none")
        return self

    def as_dict(self) -> dict[str, str | None]:
        return asdict(self)


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
    if not changes or all(getattr(base, role) == name for role, name in changes.items()):
        return base
    return replace(base, **changes)
