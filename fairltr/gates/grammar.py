"""The gate grammar: bounds, gates, presets and their parsing (see :mod:`fairltr.gates`)."""


from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from fairltr.errors import ConfigError
from fairltr.metrics import METRICS, is_metric_key
from fairltr.metrics.compare import GATE_TOLERANCE, holds

__all__ = [
    "OPS", "Bound", "Gate", "GatePreset", "GATE_PRESETS", "parse_gate", "expand_preset", "gate_cutoffs",
    "is_finite_number", "GATE_TOLERANCE",
]

OPS: dict[str, Callable[[float, float], bool]] = {
    op: (lambda a, b, op=op: holds(op, a, b)) for op in (">=", "<=", ">", "<")
}
"""The comparisons, equality within :data:`fairltr.metrics.compare.GATE_TOLERANCE` (an exact 4/5 passes ``>=0.8``)."""
_FLIP = {">=": "<=", "<=": ">=", ">": "<", "<": ">"}
_SPLIT = re.compile(r"(>=|<=|>|<)")
_NAME = re.compile(r"^[A-Za-z_][\w.:]*(?:/[A-Za-z][\w-]*)?$")
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_REL = re.compile(rf"^champion\s*(?:([-+*])\s*({_NUM}))?$")
_PRESET = re.compile(r"^([A-Za-z_]\w*)\s*(?:@\s*(\S*))?$")
_SYNTAX = ("expected '<metric> <op> <bound>' (op one of >=, <=, >, <; bound a number or champion[+-*]<number>), "
           "'<low> <= <metric> <= <high>', or a preset ({presets}); e.g. 'exposure_disparity<=0.1', "
           "'0.8<=exposure_ratio<=1.25', 'ndcg_at_10>=champion-0.01', 'four_fifths@10'")
_NUMBERS_SYNTAX = ("expected 'metric>=number', 'metric<=number' (or > / <), 'low<=metric<=high', or a preset "
                   "({presets}); e.g. 'kendall_tau>=0.2', '0.8<=exposure_ratio<=1.25', 'four_fifths@5'")


def is_finite_number(v: Any) -> bool:
    """True for a finite int or float (not a bool, not NaN or infinite)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def _num(v: float) -> str:
    return repr(float(v))


@dataclass(frozen=True)
class Bound:
    """One side of a gate: the metric must satisfy ``metric <op> threshold`` (metric on the left).

    The threshold is ``value``, or for a ``relative`` bound the champion's value combined with
    ``amount`` by ``rel_op`` (``+``, ``-``, ``*``)."""

    op: str
    value: float | None = None
    relative: bool = False
    rel_op: str = "+"
    amount: float = 0.0

    @property
    def text(self) -> str:
        """The bound as written in a gate: ``0.8``, ``champion``, ``champion-0.01``, ``champion*1.1``."""
        if not self.relative:
            return _num(self.value)
        if self.rel_op == "*":
            return f"champion*{_num(self.amount)}"
        return "champion" if self.amount == 0 else f"champion{self.rel_op}{_num(self.amount)}"

    def threshold(self, metric: str, champion: Mapping[str, float] | None) -> float | None:
        """The number to compare with; None for a relative bound without a finite champion value."""
        if not self.relative:
            return self.value
        if champion is None or not is_finite_number(champion.get(metric)):
            return None
        base = float(champion[metric])
        if self.rel_op == "*":
            return base * self.amount
        return base + self.amount if self.rel_op == "+" else base - self.amount

    def margin(self, value: float, threshold: float) -> float:
        """How far ``value`` is on the passing side of ``threshold`` (negative: failing)."""
        return value - threshold if self.op in (">=", ">") else threshold - value


@dataclass(frozen=True)
class Gate:
    """A parsed gate: ``metric`` and one bound (``metric op bound``) or two (``low <= metric <= high``,
    stored as ``metric >= low`` then ``metric <= high``). ``preset`` names the preset it came from.

    ``op``, ``value``, ``rel_op`` and ``amount`` describe the first bound (the lower one of a
    two-sided gate); ``relative`` is True when any bound is relative."""

    text: str
    metric: str
    bounds: tuple[Bound, ...]
    preset: str | None = None

    @property
    def op(self) -> str:
        return self.bounds[0].op

    @property
    def value(self) -> float | None:
        return self.bounds[0].value

    @property
    def rel_op(self) -> str:
        return self.bounds[0].rel_op

    @property
    def amount(self) -> float:
        return self.bounds[0].amount

    @property
    def relative(self) -> bool:
        return any(b.relative for b in self.bounds)

    @property
    def two_sided(self) -> bool:
        return len(self.bounds) == 2

    @property
    def rule(self) -> str:
        """The canonical expression checked: ``exposure_ratio>=0.9``, ``0.8<=exposure_ratio<=1.25``."""
        if self.two_sided:
            low, high = self.bounds
            return f"{low.text}{_FLIP[low.op]}{self.metric}{high.op}{high.text}"
        b = self.bounds[0]
        return f"{self.metric}{b.op}{b.text}"

    def bound(self, champion: Mapping[str, float] | None) -> float | None:
        """Threshold of the first bound (see :meth:`Bound.threshold`)."""
        return self.bounds[0].threshold(self.metric, champion)


@dataclass(frozen=True)
class GatePreset:
    """A named gate: ``<metric template with {k}> <op> <value>``, k defaulting to ``default_k``."""

    name: str
    metric: str
    op: str
    value: float
    default_k: int
    description: str

    def expand(self, k: int | None = None) -> str:
        return f"{self.metric.format(k=self.default_k if k is None else k)}{self.op}{_num(self.value)}"


GATE_PRESETS: dict[str, GatePreset] = {p.name: p for p in [
    GatePreset("four_fifths", "impact_ratio_at_{k}", ">=", 0.8, 10,
               "four-fifths rule of hiring audits: every audited category's pooled selection rate in the top k "
               "(its items in the top k / its items) is at least 80% of the most-selected category's, over every "
               "group attribute and their intersection (small categories excluded and listed)"),
    GatePreset("scoring_four_fifths", "scoring_impact_ratio", ">=", 0.8, 0,
               "four-fifths rule on LL144's scoring rates: every audited category's share of members scoring above "
               "the sample's median is at least 80% of the highest category's (docs/spec.md section 3c)"),
]}


def _preset_list() -> str:
    return ", ".join(f"{n}, {n}@<k>" if "{k}" in p.metric else n for n, p in GATE_PRESETS.items())


def _guide(champion: bool) -> str:
    """The syntax a refused text is told to follow: a gate's (champion bounds), or a constraint's (numbers)."""
    return (_SYNTAX if champion else _NUMBERS_SYNTAX).format(presets=_preset_list())


def expand_preset(text: str, *, what: str = "gate") -> tuple[str, str] | None:
    """``"four_fifths@5"`` -> ``("four_fifths@5", "impact_ratio_at_5>=0.8")``; None when ``text``
    names no preset; :class:`ConfigError` for a bad ``@k`` (``what`` names the text in it)."""
    m = _PRESET.match((text or "").strip())
    if not m or m.group(1) not in GATE_PRESETS:
        return None
    preset, k_text = GATE_PRESETS[m.group(1)], m.group(2)
    if "{k}" not in preset.metric:  # a preset without a cut-off (the scoring rate's)
        if k_text is not None:
            raise ConfigError(f"{what} {text.strip()!r}: preset {preset.name} has no cut-off (@k); write {preset.name}")
        return preset.name, preset.expand()
    if k_text is None:
        return f"{preset.name}@{preset.default_k}", preset.expand()
    if not k_text.isdigit() or int(k_text) < 1:
        raise ConfigError(f"{what} {text.strip()!r}: preset {preset.name} takes @<k> with k a positive integer "
                          f"(e.g. {preset.name}@5)")
    k = int(k_text)
    return f"{preset.name}@{k}", preset.expand(k)


def _is_bound(text: str) -> bool:
    if _REL.match(text):
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class _Reader:
    """Reads one text: ``raw`` as written, ``what`` its noun in messages (``gate``, ``constraint``),
    ``champion`` whether champion-relative bounds are allowed."""

    raw: str
    what: str
    champion: bool

    def refuse(self, problem: str) -> ConfigError:
        """A syntax error: the problem, then the syntax to follow."""
        return ConfigError(f"cannot parse {self.what} {self.raw!r}: {problem}{_guide(self.champion)}")

    def bound(self, op: str, rhs: str) -> Bound:
        rel = _REL.match(rhs)
        if rel and not self.champion:
            raise ConfigError(f"{self.what} {self.raw!r}: bound {rhs!r} needs a champion to compare with, and a "
                              f"{self.what} has none; " + _guide(False))
        if rel:
            sign, amount = rel.groups()
            return Bound(op, relative=True, rel_op=sign or "+",
                         amount=float(amount) if amount else (1.0 if sign == "*" else 0.0))
        try:
            value = float(rhs)
        except ValueError:
            if self.champion:
                raise ConfigError(f"{self.what} {self.raw!r}: bound {rhs!r} is neither a number nor "
                                  "champion[+-*]<number>") from None
            raise ConfigError(f"{self.what} {self.raw!r}: bound {rhs!r} is not a number; " + _guide(False)) from None
        if not math.isfinite(value):
            raise ConfigError(f"{self.what} {self.raw!r}: bound {rhs!r} must be finite")
        return Bound(op, value=value)

    def metric(self, name: str) -> str:
        if not name:
            raise self.refuse("the metric is missing; ")
        if not _NAME.match(name):
            raise self.refuse(f"{name!r} is not a metric name; ")
        if not is_metric_key(name):
            raise ConfigError(f"{self.what} {self.raw!r}: unknown metric {name!r}; known: {sorted(METRICS)} "
                              "(append _at_<k> where k applies, /<lang> for one query language)")
        return name

    def one_sided(self, lhs: str, op: str, rhs: str) -> tuple[str, tuple[Bound, ...]]:
        if _is_bound(lhs) and not _is_bound(rhs):  # '0.9 <= exposure_ratio' reads 'exposure_ratio >= 0.9'
            lhs, op, rhs = rhs, _FLIP[op], lhs
        return self.metric(lhs), (self.bound(op, rhs),)

    def two_sided(self, low: str, op1: str, metric: str, op2: str, high: str) -> tuple[str, tuple[Bound, ...]]:
        if op1 not in ("<=", "<") or op2 not in ("<=", "<"):
            hint = "" if self.champion else "; " + _guide(False)
            raise ConfigError(f"{self.what} {self.raw!r}: a two-sided {self.what} reads '<low> <= <metric> <= <high>' "
                              f"(each <= may be <), e.g. '0.8<=exposure_ratio<=1.25'{hint}")
        name = self.metric(metric)
        lower, upper = self.bound(_FLIP[op1], low), self.bound(op2, high)
        if not lower.relative and not upper.relative and (
                lower.value > upper.value or (lower.value == upper.value and "<" in (op1, op2))):
            raise ConfigError(f"{self.what} {self.raw!r}: the interval is empty (low {low} is not below high {high})")
        return name, (lower, upper)


def parse_gate(text: str, *, what: str = "gate", champion: bool = True) -> Gate:
    """Parse one gate (see the module docstring); :class:`ConfigError` with a one-line message
    otherwise. ``what`` names the text in the messages (``"constraint"`` for a sweep's);
    ``champion=False`` refuses champion-relative bounds (a sweep constraint compares numbers)."""
    raw = (text or "").strip()
    preset = expand_preset(raw, what=what)
    reader = _Reader(raw, what, champion)
    parts = [p.strip() for p in _SPLIT.split(preset[1] if preset else raw)]
    if len(parts) == 3:
        metric, bounds = reader.one_sided(*parts)
    elif len(parts) == 5:
        metric, bounds = reader.two_sided(*parts)
    else:
        raise reader.refuse("")
    return Gate(raw, metric, bounds, preset[0] if preset else None)


def gate_cutoffs(gates: Iterable[Gate]) -> list[int]:
    """The cut-offs k of the ``_at_<k>`` metrics the gates read (sorted, distinct), e.g. to make
    sure the evaluation computes ``selection_ratio_at_<k>`` for a ``four_fifths@<k>`` gate."""
    ks = {int(m.group(1)) for g in gates for m in [re.search(r"_at_(\d+)", g.metric)] if m}
    return sorted(ks)

