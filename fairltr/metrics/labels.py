"""Names in audit tables and metric keys, escaped so that no two things can share a name.

* An attribute's name in a metric key (``impact_ratio_at_10.<attribute>``) and in the audit
  table's ``attribute`` column: :func:`attribute_key`. Letters, digits, ``_``, ``-`` and spaces
  are kept; every other character (the intersection's ``:``, the key's ``.``, ``/``, ``,``, ``|``,
  ...) becomes ``.x<hex>.`` (``race:eth`` -> ``race.x3a.eth``). The escape starts with ``.``, which
  never appears otherwise, so the encoding is one-to-one, and every key stays a legal MLflow key.
* The intersection of several attributes: their keys joined by ``:`` (:func:`intersection_name`:
  ``race:sex``), never equal to one attribute's key, which holds no ``:``.
* An intersection cell's label: the categories joined by ``|``, each with ``\\`` and ``|``
  escaped by a backslash (:func:`category_label`: race ``A|B`` and sex ``C`` -> ``A\\|B|C``, race
  ``A`` and sex ``B|C`` -> ``A|B\\|C``). One attribute's categories are shown as written.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

__all__ = ["attribute_key", "intersection_name", "category_label", "split_category_label"]

_PLAIN = re.compile(r"[\w -]")  # \w: letters, digits and _ in any script


def attribute_key(name: str) -> str:
    """``name`` as it appears after the ``.`` of a per-attribute metric key (module docstring)."""
    return "".join(ch if _PLAIN.fullmatch(ch) else f".x{ord(ch):x}." for ch in str(name))


def intersection_name(names: Sequence[str]) -> str:
    """The intersection attribute of ``names`` (in the order given): their keys joined by ``:``."""
    return ":".join(attribute_key(n) for n in names)


def category_label(parts: Iterable[object]) -> str:
    """An intersection cell's label: the categories joined by ``|``, ``\\`` and ``|`` escaped."""
    return "|".join(str(p).replace("\\", "\\\\").replace("|", "\\|") for p in parts)


def split_category_label(label: str) -> list[str]:
    """The categories of a :func:`category_label` (its inverse)."""
    parts, current, i = [], [], 0
    while i < len(label):
        ch = label[i]
        if ch == "\\" and i + 1 < len(label):
            current.append(label[i + 1])
            i += 2
            continue
        if ch == "|":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts
