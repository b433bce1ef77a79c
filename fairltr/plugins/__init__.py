"""Plugins: the declarations every pluggable kind is built from (losses, metrics, re-rankers,
rankers, sweep methods), one generic :class:`PluginRegistry` with an entry-point group per kind,
the declared parameters (:class:`HyperParam`) and what a ranker is (:class:`Ranker`,
:class:`RankerDeclaration`). The core's bottom floor: imports nothing of
fairltr but :mod:`fairltr.errors`."""

from fairltr.plugins.params import HyperParam
from fairltr.plugins.rankers import Ranker, RankerDeclaration
from fairltr.plugins.registry import ENTRY_POINT_GROUPS, PluginRegistry

__all__ = ["PluginRegistry", "ENTRY_POINT_GROUPS", "HyperParam", "Ranker", "RankerDeclaration"]
