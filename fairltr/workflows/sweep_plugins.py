"""The sweep-method registry: a sweep method is ONE :class:`SweepMethod` declaration (name,
summary, what it searches, the trial builder = a workflow call, default objectives, the inputs
and extras it needs). ``fairltr sweep --method`` takes its choices from here, the sweep
workflow builds trials from here, docs/sweeps.md's method table is :func:`methods_markdown`
and ``benchmarks/pareto_comparison.py`` runs every ranking method registered here.

What a declaration is and the registry object live in :mod:`fairltr.workflows.sweep_declaration`
(re-exported here). The built-in methods are declared in :mod:`fairltr.workflows.sweep_methods`,
which this module imports, so a lookup here never misses one; another package registers its own
with :func:`register_sweep_method`, or declares it through the ``fairltr.sweep_methods``
entry-point group (a :class:`SweepMethod`, or a callable returning one), with no edit to fairltr.

Method names are user-facing (``lambdamart+fair``); where a name becomes part of an MLflow key
or a file name use :attr:`SweepMethod.key` / :func:`fairltr.metrics.key_part` (MLflow keys allow letters,
digits, ``_ - . /`` and spaces, not ``+``).
"""

from __future__ import annotations

import fairltr.workflows.sweep_methods  # noqa: F401 (registers the built-in methods)
from fairltr.workflows.sweep_declaration import (  # noqa: F401 (re-exported)
    DATA_KINDS, SWEEP_EVALUATORS, SWEEP_METHODS, RankingContext, RankingPlan, SweepInputs, SweepMethod,
    register_sweep_method, unregister_sweep_method,
)

__all__ = ["SweepInputs", "SweepMethod", "RankingContext", "RankingPlan", "register_sweep_method", "unregister_sweep_method", "get_sweep_method",
           "sweep_method_names", "sweep_methods", "methods_markdown", "DATA_KINDS", "SWEEP_METHODS"]


def sweep_methods(data: str | None = None) -> list[SweepMethod]:
    """The registered methods in declaration order (``data``: only that kind)."""
    return [m for m in SWEEP_METHODS.declarations() if data is None or m.data == data]


def sweep_method_names(data: str | None = None) -> list[str]:
    return [m.name for m in sweep_methods(data)]


def get_sweep_method(name: str) -> SweepMethod:
    """The method called ``name``; an unknown name is a :class:`ConfigError` listing the choices."""
    return SWEEP_METHODS.require(name)


def methods_markdown() -> str:
    """The method table of docs/sweeps.md (generated from the registry; a test keeps it in sync)."""
    lines = ["| method | data | searches | default objectives | what it is |", "|---|---|---|---|---|"]
    for m in sweep_methods():
        extra = f" (needs `fairltr[{', '.join(sorted(set(m.requires.values())))}]`)" if m.requires else ""
        summary = m.summary.replace("*", "\\*")  # FA*IR, not emphasis
        lines.append(f"| `{m.name}` | {m.data} | {m.searches} | `{m.default_objectives}` | {summary}{extra} |")
    return "\n".join(lines)
