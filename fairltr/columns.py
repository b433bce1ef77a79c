"""The column contract of a ranking table: which columns hold the query id, the group, the
judgment and (optionally) an item id. One frozen object travels through data, metrics, FA*IR,
tracking, workflows and the CLI instead of four loose strings."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from fairltr.errors import ConfigError

__all__ = ["RankingColumns", "DEFAULT_COLUMNS"]


@dataclass(frozen=True)
class RankingColumns:
    """Names of the special columns of a ranking table.

    ``query``: query id (rows of one query form one list); ``group``: integer group, 0 =
    non-protected, >= 1 protected; ``judgment``: training/evaluation judgment, higher is better;
    ``item``: optional item (document) id, unique within a query when given. The names must be
    distinct: one column cannot be both the group and the label.
    """

    query: str = "query_id"
    group: str = "protected"
    judgment: str = "judgment"
    item: str | None = None

    def __post_init__(self) -> None:
        named = {"query": self.query, "group": self.group, "judgment": self.judgment}
        if self.item is not None:
            named["item"] = self.item
        for role, name in named.items():
            if not isinstance(name, str) or not name.strip():
                raise ConfigError(f"the {role} column name must be a non-empty string, got {name!r}")
        seen: dict[str, str] = {}
        for role, name in named.items():
            if name in seen:
                raise ConfigError(f"the {seen[name]} and {role} columns must differ, both are {name!r}")
            seen[name] = role

    @property
    def special(self) -> tuple[str, ...]:
        """Query, judgment and item names: never features. (The group column is a feature of
        DELTR's standard ranker unless it is colorblind.)"""
        return tuple(c for c in (self.query, self.judgment, self.item) if c is not None)

    def as_dict(self) -> dict[str, str | None]:
        return asdict(self)


DEFAULT_COLUMNS = RankingColumns()
