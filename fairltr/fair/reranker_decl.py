"""The re-ranker declaration, :class:`Reranker` (the registry and its lookups:
:mod:`fairltr.fair.rerankers`; the built-ins: :mod:`fairltr.fair.builtin_rerankers`)."""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from fairltr.errors import ConfigError
from fairltr.plugins.params import HyperParam

__all__ = ["Reranker"]

_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
_COMMON = ("k",)  # every re-ranker takes the top k it re-ranks


@dataclass(frozen=True)
class Reranker:
    """One re-ranker (module docstring for ``apply`` / ``serve``).

    ``params``: its numeric settings (:class:`HyperParam`: name, default, range, description);
    ``options``: its other settings and their defaults (bool or text; None = unset);
    ``required``: settings a call must give; ``categories``: the group column may hold any number
    of categories (False: a binary group, values >= 1 protected; FA*IR's share-list ``p`` takes
    categories too); ``several_attributes``: more than one group attribute may be given.
    ``label`` names it in messages (``"FA*IR"``; default: the name), ``takes`` says what it takes
    instead of another re-ranker's setting (default: its first setting), ``notes`` say whose a
    setting is (``{"p": "FA*IR's"}``), ``example`` is a policy spec, ``summary`` one line of help.
    """

    name: str
    apply: Callable[..., Any]
    params: tuple[HyperParam, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    categories: bool = False
    several_attributes: bool = False
    serve: Callable[..., Any] | None = None
    label: str = ""
    takes: str = ""
    notes: Mapping[str, str] = field(default_factory=dict)
    example: str = ""
    summary: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name) or self.name == "none":
            raise ConfigError(f"re-ranker name {self.name!r}: lower-case letters, digits, _ and - ('none' is taken)")
        if not callable(self.apply) or (self.serve is not None and not callable(self.serve)):
            raise ConfigError(f"re-ranker {self.name!r}: apply (and serve) must be callable")
        own = [p.name for p in self.params] + list(self.options)
        if len(set(own)) < len(own) or set(own) & set(_COMMON) or "rerank" in own:
            raise ConfigError(f"re-ranker {self.name!r}: setting names must be distinct and not k or rerank, got {own}")
        unknown = [r for r in self.required if r not in own]
        if unknown:
            raise ConfigError(f"re-ranker {self.name!r}: required {unknown} are not among its settings {own}")

    @property
    def fields(self) -> tuple[str, ...]:
        """Its settings in order: the params, the options, then ``k``."""
        return (*[p.name for p in self.params], *self.options, *_COMMON)

    @property
    def main(self) -> str:
        """Its first own setting (what messages say it takes), or ``"no setting"``."""
        own = [f for f in self.fields if f not in _COMMON]
        return own[0] if own else "no setting"

    @property
    def takes_text(self) -> str:
        return self.takes or self.main

    @property
    def label_text(self) -> str:
        return self.label or self.name

    def takes_setting(self, name: str) -> bool:
        return name in self.fields

    def param(self, name: str) -> HyperParam | None:
        return next((p for p in self.params if p.name == name), None)

    def describe_setting(self, name: str) -> str:
        """A setting in words (its declared description, else its name)."""
        p = self.param(name)
        return (p.description if p is not None else "") or name

    def defaults(self) -> dict[str, Any]:
        """Every own setting's default (a required one: None)."""
        out: dict[str, Any] = {p.name: (None if p.name in self.required else p.default) for p in self.params}
        out.update({k: v for k, v in self.options.items()})
        return out

    def check_value(self, name: str, value: Any) -> Any:
        """``value`` as the declared type of setting ``name`` (a param: a finite number in its
        declared domain, an integer param rounded; an option: the type of its default)."""
        p = self.param(name)
        if p is not None:
            number = p.validate(value)
            if not p.low <= number <= p.high and not (number == 0.0 and p.include_zero):
                raise ConfigError(f"re-ranker {self.name!r}: {name} must be in [{p.low:g}, {p.high:g}], got {number:g}")
            return float(round(number)) if p.integer else number
        if name not in self.options:
            raise ConfigError(f"re-ranker {self.name!r} has no setting {name!r}; it takes {list(self.fields)}")
        return _option_value(self.name, name, self.options[name], value)

    def run(self, frame: Any, scores: Any, *, columns: Any, k: int | None = None, served: bool = False,
            **settings: Any) -> Any:
        """``apply`` (or ``serve`` when ``served``) with the defaults filled in for unset settings."""
        fn = self.serve if served and self.serve is not None else self.apply
        given = {**self.defaults(), **{key: v for key, v in settings.items() if v is not None}}
        return fn(frame, scores, columns=columns, k=k, **given)


def _option_value(reranker: str, key: str, default: Any, value: Any) -> Any:
    where = f"re-ranker {reranker!r} setting {key!r}"
    if isinstance(default, bool):
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
            return value.strip().lower() in ("true", "1", "yes")
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}")
        return value
    if isinstance(default, numbers.Real) and not isinstance(default, bool):
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where} must be a finite number, got {value!r}") from None
        if not math.isfinite(number):
            raise ConfigError(f"{where} must be a finite number, got {value!r}")
        return number
    return str(value)
