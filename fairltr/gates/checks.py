"""Checking gates against a candidate's (and a champion's) metrics: fail closed, with a stated
tolerance, on interval ends in confidence mode (see :mod:`fairltr.gates`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from fairltr.errors import ConfigError
from fairltr.gates.grammar import OPS, Bound, Gate, is_finite_number
from fairltr.metrics.compare import holds

__all__ = ["GateResult", "check_gates", "constant_model_reason"]


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


_Check = tuple[Bound, float, float, str]  # a bound, the end compared, its threshold, the words saying so


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
    checks: list[_Check] = []
    notes: list[str] = []
    diff_point = diff_iv = None
    for b in g.bounds:
        if not b.relative:
            if iv is None:
                return GateResult(**base, threshold=b.value, passed=False, margin=None,
                                  note=f"no {level:.0%} interval of {g.metric!r} (fail closed)")
            checks.append(_absolute_check(b, iv))
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
            checks.append(_ratio_check(b, iv, civ))
            continue
        d = differences.get(g.metric)
        if d is None or not (is_finite_number(d.get("ci_low")) and is_finite_number(d.get("ci_high"))):
            return GateResult(**base, threshold=None, passed=False, margin=None,
                              note=f"no paired interval of (candidate - champion) for {g.metric!r} (fail closed)")
        diff_point = float(d.get("difference", value - float(champion.get(g.metric, math.nan))))
        diff_iv = (float(d["ci_low"]), float(d["ci_high"]))
        checks.append(_difference_check(b, diff_iv))
    base.update(difference=diff_point, difference_interval=diff_iv)
    return _confident_result(base, checks, notes)


def _absolute_check(b: Bound, iv: tuple[float, float]) -> _Check:
    """An absolute bound: the candidate's low end against a lower bound, its high end against an upper one."""
    up = b.op in (">=", ">")
    end = iv[0] if up else iv[1]
    return (b, end, float(b.value), f"{'low' if up else 'high'} {end:.6g} {b.op} {b.value:.6g}")


def _ratio_check(b: Bound, iv: tuple[float, float], civ: tuple[float, float]) -> _Check:
    """A ``champion*x`` bound: the candidate's conservative end against x times the champion's
    opposite end (``civ``)."""
    up = b.op in (">=", ">")
    end, champ_end = (iv[0], civ[1]) if up else (iv[1], civ[0])
    return (b, end, champ_end * b.amount, f"{'low' if up else 'high'} {end:.6g} {b.op} {b.amount:g} x champion "
                                          f"{'high' if up else 'low'} {champ_end:.6g}")


def _difference_check(b: Bound, diff_iv: tuple[float, float]) -> _Check:
    """A ``champion+x`` / ``champion-x`` bound: the paired interval of (candidate - champion),
    its conservative end, against +x / -x."""
    up = b.op in (">=", ">")
    t = b.amount if b.rel_op == "+" else -b.amount
    end = diff_iv[0] if up else diff_iv[1]
    return (b, end, t, f"difference {'low' if up else 'high'} {end:.6g} {b.op} {t:+.6g}")


def _confident_result(base: Mapping[str, object], checks: Sequence[_Check], notes: Sequence[str]) -> GateResult:
    """The gate's result from its checked bounds: skipped when none was checked, else passed when
    every bound holds, with the binding (smallest-margin) bound's threshold and margin."""
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


def constant_model_warning(metrics: Mapping[str, float]) -> str | None:
    """The one-line warning a command prints when the scores are all tied within every query
    (``tied_score_share`` 1, a constant model: its relevance figures describe an arbitrary order
    and every relevance gate fails on it); None otherwise."""
    share = metrics.get("tied_score_share")
    if not (is_finite_number(share) and holds(">=", float(share), 1.0)):
        return None
    return ("Warning: the model's scores are all tied within every query (a constant model: "
            "tied_score_share 1.0); its ranking is arbitrary and every relevance gate fails on it")


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
