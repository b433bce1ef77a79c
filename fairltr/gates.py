"""The one bound grammar of fairltr (pure core: no MLflow, no Optuna): promotion gates
(:mod:`fairltr.tracking.registry`), sweep constraints (:func:`tuning.parse_constraint`) and the
audit jobs' preset names (:mod:`fairltr.metrics.audit_jobs`) all parse with :func:`parse_gate`.

A gate is one of

* ``<metric> <op> <bound>`` with op in ``>=, <=, >, <``: ``exposure_disparity<=0.1``,
  ``ndcg_at_10>=champion-0.01`` (``<bound> <op> <metric>`` is read the same way);
* two-sided ``<low> <= <metric> <= <high>`` (either ``<=`` may be ``<``): ``0.8<=exposure_ratio<=1.25``
  — the way to gate a target metric (ideal 1.0) from both sides;
* a named preset: ``four_fifths`` = ``impact_ratio_at_10>=0.8`` (the four-fifths rule of hiring
  audits, docs/spec.md section 3b: every audited category's pooled selection rate in the top k is
  at least 80% of the most-selected category's, over every attribute and their intersection;
  small categories are excluded and listed); ``four_fifths@<k>`` for another k. (The per-query
  mean ``selection_ratio_at_<k>`` keeps its own name: gate it explicitly.)

A bound is a number or ``champion``, ``champion+x``, ``champion-x``, ``champion*x`` (relative to the
current champion's value of the same metric; ``parse_gate(..., champion=False)`` refuses these,
as a sweep constraint has no champion). Metric names must be known to the metric registry
(:func:`fairltr.metrics.metric_info`), so a typo fails at parse time with one line.

Confidence mode (``check_gates(..., confidence=0.95)``, ``fairltr promote --confidence``, SPEC 3b):
each bound is checked on the conservative end of an interval at that level. An absolute bound
compares the end of the metric's own interval (``<metric>_ci_low`` for ``>=`` / ``>``,
``<metric>_ci_high`` for ``<=`` / ``<``); a champion-relative ``champion+x`` / ``champion-x``
bound compares the end of the paired bootstrap interval of (candidate - champion) over the same
resampled queries with ``+x`` / ``-x``; a ``champion*x`` bound (not a difference) compares the
candidate's end with x times the champion's opposite end. A missing interval fails closed.

Checking (:func:`check_gates`) is fail-closed: a metric the candidate lacks (not computed, NaN)
fails the gate; so does a relative bound whose metric the champion lacks. Without a champion, the
relative bounds are skipped (``no_champion="pass"``, the first model that clears the absolute
bounds becomes champion) or fail the gate (``no_champion="fail"``). Every result records the rule
that was applied (the expanded expression, and the preset's name).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from fairltr.errors import ConfigError
from fairltr.metrics import METRICS, is_metric_key
from fairltr.metrics.compare import GATE_TOLERANCE, holds

__all__ = [
    "OPS", "Bound", "Gate", "GatePreset", "GATE_PRESETS", "GateResult", "parse_gate", "check_gates",
    "expand_preset", "gate_cutoffs", "is_finite_number", "GATE_TOLERANCE", "constant_model_reason",
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


@dataclass
class GateResult:
    """Outcome of one gate: candidate value, the binding threshold, pass, and the signed margin
    (how far on the passing side; negative = failed by that much; for a two-sided gate the
    smaller of the two). ``rule`` is the expression checked, ``preset`` the preset's name
    (``four_fifths@10``) or empty; ``lower`` / ``upper`` are the thresholds of each side."""

    gate: str
    metric: str
    value: float | None
    threshold: float | None
    passed: bool
    margin: float | None
    note: str = ""
    rule: str = ""
    preset: str = ""
    lower: float | None = None
    upper: float | None = None
    confidence: float | None = None  # confidence mode: the level
    interval: tuple[float, float] | None = None  # the candidate's interval of the metric
    difference: float | None = None  # champion-relative gate: candidate - champion (point)
    difference_interval: tuple[float, float] | None = None  # its paired bootstrap interval
    compared: str = ""  # confidence mode: which ends were compared, e.g. "low 0.74 >= 0.8"
    categories: list[dict] | None = None  # impact-ratio gates: each audited category's ratio, exclusions
    skipped: bool = False  # no bound was checked (relative bounds without a usable champion, by policy)

    @property
    def status(self) -> str:
        """``"passed"``, ``"failed"`` or ``"skipped"`` (a skipped gate does not block, and is never
        reported as passed)."""
        return "skipped" if self.skipped else ("passed" if self.passed else "failed")

    def worst_category(self) -> str | None:
        """``worst category race = Black: 0.44 [0.30, 0.51]`` from :attr:`categories` (the lowest
        non-excluded impact ratio, ties to the first listed); None without categories."""
        cats = [c for c in (self.categories or []) if not c.get("excluded") and is_finite_number(c.get("impact_ratio"))]
        if not cats:
            return None
        w = min(cats, key=lambda c: float(c["impact_ratio"]))
        lo, hi = w.get("ci_low"), w.get("ci_high")
        iv = f" [{float(lo):.4g}, {float(hi):.4g}]" if is_finite_number(lo) and is_finite_number(hi) else ""
        return f"worst category {w['attribute']} = {w['category']}: {float(w['impact_ratio']):.4g}{iv}"

    def describe(self) -> str:
        """One line: ``FAIL ndcg_at_10>=champion-0.01: ndcg_at_10=0.71, threshold 0.74, short by 0.03``;
        in confidence mode with the interval and the end compared; ``SKIP ...: skipped: <reason>``;
        an impact-ratio gate names its worst category (and its interval)."""
        line = self._describe()
        worst = self.worst_category()
        return f"{line}; {worst}" if worst else line

    def _describe(self) -> str:
        status = "SKIP" if self.skipped else ("PASS" if self.passed else "FAIL")
        head = f"{status} {self.gate}" + (f" [{self.rule}]" if self.rule and self.rule != self.gate else "")
        if self.value is None:
            return f"{head}: {self.note}"
        if self.confidence is not None:
            bits = [f"{self.metric}={self.value:.6g}"]
            if self.interval is not None:
                bits[0] += f" [{self.interval[0]:.6g}, {self.interval[1]:.6g}]"
            bits[0] += f" at {self.confidence:.0%}"
            if self.difference_interval is not None:
                bits.append(f"candidate - champion {self.difference:.6g} [{self.difference_interval[0]:.6g}, "
                            f"{self.difference_interval[1]:.6g}] (paired)")
            if self.compared:
                bits.append(f"compared {self.compared}")
            if self.margin is not None:
                bits.append(f"margin {self.margin:.6g}" if self.passed else f"short by {-self.margin:.6g}")
            if self.note:
                bits.append(self.note)
            return f"{head}: " + ", ".join(bits)
        if self.threshold is None:
            return f"{head}: {self.metric}={self.value:.6g}; {self.note}"
        how = f"margin {self.margin:.6g}" if self.passed else f"short by {-self.margin:.6g}"
        if self.lower is not None and self.upper is not None:
            where = f"interval [{self.lower:.6g}, {self.upper:.6g}]"
        else:
            where = f"threshold {self.threshold:.6g}"
        extra = f"; {self.note}" if self.note else ""
        return f"{head}: {self.metric}={self.value:.6g}, {where}, {how}{extra}"


def check_gates(
    gates: Sequence[Gate],
    candidate: Mapping[str, float],
    champion: Mapping[str, float] | None,
    no_champion: str = "pass",
    absent_reason: str = "no champion yet",
    *,
    confidence: float | None = None,
    differences: Mapping[str, Mapping[str, float]] | None = None,
) -> list[GateResult]:
    """Check every gate (no short-circuit) under the fail-closed policy of the module docstring.
    ``champion=None`` means there is none to compare with; ``absent_reason`` says why in the
    notes (``"no champion yet"``, or e.g. ``"champion v3 unloadable"``), and ``no_champion``
    decides whether its relative bounds are skipped (``"pass"``) or fail (``"fail"``).

    ``confidence`` (a level in (0, 1)): confidence mode of the module docstring; ``candidate``
    (and ``champion``) then hold ``<metric>_ci_low`` / ``_ci_high``, and ``differences`` maps a
    metric to its paired difference ``{"difference", "ci_low", "ci_high"}`` (candidate -
    champion, :func:`fairltr.metrics.paired_difference`). Without it: the point estimates."""
    if no_champion not in ("pass", "fail"):
        raise ConfigError(f"no_champion must be 'pass' or 'fail', got {no_champion!r}")
    if confidence is not None:
        if not (is_finite_number(confidence) and 0.0 < float(confidence) < 1.0):
            raise ConfigError(f"confidence must be a level in (0, 1), e.g. 0.95; got {confidence!r}")
        return [_check_confident(g, candidate, champion, no_champion, absent_reason, float(confidence),
                                 differences or {}) for g in gates]
    return [_check_one(g, candidate, champion, no_champion, absent_reason) for g in gates]


def _interval(metrics: Mapping[str, float] | None, metric: str) -> tuple[float, float] | None:
    if metrics is None:
        return None
    lo, hi = metrics.get(metric + "_ci_low"), metrics.get(metric + "_ci_high")
    return (float(lo), float(hi)) if is_finite_number(lo) and is_finite_number(hi) else None


def _check_confident(g: Gate, candidate: Mapping[str, float], champion: Mapping[str, float] | None,
                     no_champion: str, absent_reason: str, level: float,
                     differences: Mapping[str, Mapping[str, float]]) -> GateResult:
    """One gate in confidence mode: every bound on the conservative end of its interval."""
    base = dict(gate=g.text, metric=g.metric, rule=g.rule, preset=g.preset or "", confidence=level)
    value = candidate.get(g.metric)
    if not is_finite_number(value):
        return GateResult(**base, value=None, threshold=None, passed=False, margin=None,
                          note=f"candidate has no finite {g.metric!r} (fail closed)")
    value = float(value)
    iv = _interval(candidate, g.metric)
    base.update(value=value, interval=iv)
    constant = constant_model_reason(g, candidate)
    if constant:
        return GateResult(**base, threshold=None, passed=False, margin=None, note=constant)
    checks: list[tuple[Bound, float, float, str]] = []  # bound, end compared, threshold, words
    notes: list[str] = []
    diff_point = diff_iv = None
    for b in g.bounds:
        up = b.op in (">=", ">")
        if not b.relative:
            if iv is None:
                return GateResult(**base, threshold=b.value, passed=False, margin=None,
                                  note=f"no {level:.0%} interval of {g.metric!r} (fail closed)")
            end = iv[0] if up else iv[1]
            checks.append((b, end, float(b.value), f"{'low' if up else 'high'} {end:.6g} {b.op} {b.value:.6g}"))
            continue
        if champion is None:
            if no_champion == "fail":
                return GateResult(**base, threshold=None, passed=False, margin=None,
                                  note=f"{absent_reason}: relative gate failed (fail closed)")
            notes.append(f"bound {b.text} skipped: {absent_reason}")
            continue
        if b.rel_op == "*":  # not a difference: the candidate's end against x times the champion's opposite end
            civ = _interval(champion, g.metric)
            if iv is None or civ is None:
                return GateResult(**base, threshold=None, passed=False, margin=None,
                                  note=f"no {level:.0%} interval of {g.metric!r} for both models (fail closed)")
            end, champ_end = (iv[0], civ[1]) if up else (iv[1], civ[0])
            t = champ_end * b.amount
            checks.append((b, end, t, f"{'low' if up else 'high'} {end:.6g} {b.op} {b.amount:g} x champion "
                                      f"{'high' if up else 'low'} {champ_end:.6g}"))
            continue
        d = differences.get(g.metric)
        if d is None or not (is_finite_number(d.get("ci_low")) and is_finite_number(d.get("ci_high"))):
            return GateResult(**base, threshold=None, passed=False, margin=None,
                              note=f"no paired interval of (candidate - champion) for {g.metric!r} (fail closed)")
        diff_point = float(d.get("difference", value - float(champion.get(g.metric, math.nan))))
        diff_iv = (float(d["ci_low"]), float(d["ci_high"]))
        t = b.amount if b.rel_op == "+" else -b.amount
        end = diff_iv[0] if up else diff_iv[1]
        checks.append((b, end, t, f"difference {'low' if up else 'high'} {end:.6g} {b.op} {t:+.6g}"))
    base.update(difference=diff_point, difference_interval=diff_iv)
    if not checks:
        return GateResult(**base, threshold=None, passed=True, margin=None, note="; ".join(notes), skipped=True)
    passed = all(OPS[b.op](end, t) for b, end, t, _ in checks)
    binding = min(checks, key=lambda c: c[0].margin(c[1], c[2]))
    sides = {("lower" if b.op in (">=", ">") else "upper"): t for b, _, t, _ in checks}
    return GateResult(**base, threshold=binding[2], passed=bool(passed), margin=binding[0].margin(binding[1], binding[2]),
                      note="; ".join(notes), lower=sides.get("lower"), upper=sides.get("upper"),
                      compared="; ".join(words for *_, words in checks))


def constant_model_reason(g: Gate, candidate: Mapping[str, float]) -> str | None:
    """Why a relevance gate fails whatever its value: the candidate's scores are all tied within
    every query (``tied_score_share`` 1, a constant model; its ranking is arbitrary, docs/spec.md
    section 3 "Ties"); None otherwise."""
    from fairltr.metrics import metric_info

    share = candidate.get("tied_score_share")
    if not (is_finite_number(share) and holds(">=", float(share), 1.0)):
        return None
    try:
        relevance = metric_info(g.metric).kind == "relevance" and not g.metric.startswith("tied_score_share")
    except KeyError:
        return None
    return ("the candidate's scores are all tied within every query (a constant model: tied_score_share 1.0); "
            "its ranking is arbitrary, so a relevance gate fails") if relevance else None


def _check_one(g: Gate, candidate: Mapping[str, float], champion: Mapping[str, float] | None,
               no_champion: str, absent_reason: str = "no champion yet") -> GateResult:
    base = dict(gate=g.text, metric=g.metric, rule=g.rule, preset=g.preset or "")
    value = candidate.get(g.metric)
    if not is_finite_number(value):
        return GateResult(**base, value=None, threshold=None, passed=False, margin=None,
                          note=f"candidate has no finite {g.metric!r} (fail closed)")
    value = float(value)
    constant = constant_model_reason(g, candidate)
    if constant:
        return GateResult(**base, value=value, threshold=None, passed=False, margin=None, note=constant)
    checked: list[tuple[Bound, float]] = []
    notes: list[str] = []
    for b in g.bounds:
        if b.relative and champion is None:
            if no_champion == "fail":
                return GateResult(**base, value=value, threshold=None, passed=False, margin=None,
                                  note=f"{absent_reason}: relative gate failed (fail closed)")
            notes.append(f"skipped: {absent_reason}" if len(g.bounds) == 1
                         else f"bound {b.text} skipped: {absent_reason}")
            continue
        threshold = b.threshold(g.metric, champion)
        if threshold is None:
            return GateResult(**base, value=value, threshold=None, passed=False, margin=None,
                              note=f"champion has no finite {g.metric!r} (fail closed)")
        checked.append((b, threshold))
    sides = {("lower" if b.op in (">=", ">") else "upper"): t for b, t in checked}
    if not checked:
        return GateResult(**base, value=value, threshold=None, passed=True, margin=None, note="; ".join(notes),
                          skipped=True)
    passed = all(OPS[b.op](value, t) for b, t in checked)
    binding, threshold = min(checked, key=lambda bt: bt[0].margin(value, bt[1]))
    return GateResult(**base, value=value, threshold=threshold, passed=bool(passed),
                      margin=binding.margin(value, threshold), note="; ".join(notes),
                      lower=sides.get("lower"), upper=sides.get("upper"))
