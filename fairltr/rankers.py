"""The ranker registry (``fairltr.rankers`` entry points): every kind of ranker by its
:class:`~fairltr.plugins.RankerDeclaration`, the declaration of a model, and any model file
loaded by its format marker (``fairltr.DELTR``, ``fairltr.PLRank``, ``fairltr.LambdaMART``, or
a plugin's).

The ranker pyfunc, promotion's verified loading and ``fairltr evaluate`` read model files through
:func:`load_ranker` / :func:`load_ranker_files`, so every ranker goes through its own validating
loader; logging and serving read a model through :func:`declaration_of` and the
:class:`~fairltr.plugins.Ranker` protocol.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from fairltr.errors import ConfigError
from fairltr.losses.builtin import GAMMA, LAMBDA
from fairltr.plugins.rankers import Ranker, RankerDeclaration
from fairltr.plugins.registry import PluginRegistry

__all__ = ["RANKERS", "RANKER_CLASSES", "declaration_of", "declaration_for_format", "load_ranker",
           "load_ranker_files", "model_format", "Ranker", "RankerDeclaration"]


def _check_format(item: RankerDeclaration, others: dict[str, RankerDeclaration]) -> None:
    for other in others.values():
        if other.format == item.format:
            raise ConfigError(f"ranker {item.name!r} declares the format marker {item.format!r} of ranker {other.name!r}")


RANKERS: PluginRegistry[RankerDeclaration] = PluginRegistry("ranker", RankerDeclaration, check=_check_format)
"""Every ranker kind, by name (built-ins: ``deltr``, ``plrank``, ``lambdamart``)."""

RANKERS.register(RankerDeclaration(
    "deltr", "fairltr.deltr:DELTR", label="DELTR", format="fairltr.DELTR", weight="gamma", hyperparams=(GAMMA,),
    curve_caption="Training objective per iteration: total = listnet + gamma x exposure",
    model_file="deltr.safetensors"))
RANKERS.register(RankerDeclaration(
    "plrank", "fairltr.plrank:PLRank", label="PLRank", format="fairltr.PLRank", weight="lambda",
    weight_attribute="lam", hyperparams=(LAMBDA,), stochastic=True,
    curve_caption="Training objective per iteration: total = E[DCG] - lambda x disparity (sampled, maximised)",
    model_file="deltr.safetensors"))  # the file name every logged linear ranker has had
RANKERS.register(RankerDeclaration(
    "lambdamart", "fairltr.gbdt:LambdaMART", label="LambdaMART", format="fairltr.LambdaMART",
    model_file="lambdamart.json", requirements=("lightgbm",)))


def declaration_of(model: Any) -> RankerDeclaration:
    """The declaration of ``model``'s class, or of its nearest declared base class (a subclass of
    DELTR is a DELTR); a model of no declared class is a ConfigError naming the declared ones."""
    cls = model if isinstance(model, type) else type(model)
    by_class: dict[str, RankerDeclaration] = {}
    for d in RANKERS.values():
        module, _, attr = d.estimator.partition(":")
        by_class[f"{module}.{attr}"] = d
    for base in cls.__mro__:
        d = by_class.get(f"{base.__module__}.{base.__qualname__}")
        if d is not None and d.estimator_class() is base:
            return d
    raise ConfigError(f"{cls.__name__} is not a declared ranker (declare it in the fairltr.rankers entry-point "
                      f"group); declared: {RANKERS.names()}")


def declaration_for_format(marker: str | None) -> RankerDeclaration | None:
    """The declaration whose model files carry ``marker`` (None when no ranker declares it)."""
    return next((d for d in RANKERS.values() if d.format == marker), None)


def model_format(path: str | Path) -> str | None:
    """The format marker of a model file, or None when it cannot be read (the class's own
    ``load`` then reports what is wrong)."""
    p = Path(path)
    try:
        data = p.read_bytes()
        if p.suffix == ".safetensors":
            n = int.from_bytes(data[:8], "little")
            meta = json.loads(data[8:8 + n].decode("utf-8")).get("__metadata__", {})
            state = json.loads(meta.get("fairltr", "{}"))
        else:
            state = json.loads(data.decode("utf-8"))
        fmt = state.get("format") if isinstance(state, dict) else None
        return fmt if isinstance(fmt, str) else None
    except (OSError, ValueError, UnicodeDecodeError, AttributeError, RecursionError):
        return None


def load_ranker_files(files: Sequence[str | Path]) -> Any:
    """The model saved in ``files`` (the main file first, as ``saved_files`` lists them), read by
    the ranker its format marker names (DELTR's loader when the marker is missing or unknown: it
    reports the defect)."""
    d = declaration_for_format(model_format(files[0])) or RANKERS.require("deltr")
    return d.estimator_class().load_saved(list(files))


def load_ranker(path: str | Path) -> Any:
    """The model in ``path`` (its companion files beside it), loaded by the class its format
    marker names (see :func:`load_ranker_files`)."""
    return load_ranker_files([path])


def __getattr__(name: str) -> Any:
    if name == "RANKER_CLASSES":  # the earlier {format marker: class} map, built from the registry
        return {d.format: d.estimator_class() for d in RANKERS.values()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
