"""The names of Geyik et al.'s re-rankers, in a module of their own: the re-ranker declarations
(:mod:`fairltr.fair.builtin_rerankers`) read them without importing numpy or pandas, and
:mod:`fairltr.fair.geyik` checks its ``method`` against the same tuple."""

from __future__ import annotations

__all__ = ["GEYIK_METHODS"]

GEYIK_METHODS = ("detgreedy", "detcons", "detrelaxed", "detconstsort")
