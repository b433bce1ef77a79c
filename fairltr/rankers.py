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

from fairltr.errors import ConfigError, DataError
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
    "deltr", "fairltr.deltr:DELTR", label="DELTR", format="fairltr.DELTR", weight=GAMMA,
    curve_caption="Training objective per iteration: total = listnet + gamma x exposure",
    model_file="deltr.safetensors"))
RANKERS.register(RankerDeclaration(
    "plrank", "fairltr.plrank:PLRank", label="PLRank", format="fairltr.PLRank", weight=LAMBDA,
    weight_attribute="lam", stochastic=True,
    curve_caption="Training objective per iteration: total = E[DCG] - lambda x disparity (sampled, maximised)",
    model_file="deltr.safetensors"))  # the file name every logged linear ranker has had
RANKERS.register(RankerDeclaration(
    "lambdamart", "fairltr.gbdt:LambdaMART", label="LambdaMART", format="fairltr.LambdaMART",
    model_file="lambdamart.json", requirements=("lightgbm",)))


def _declared_classes() -> list[tuple[type, RankerDeclaration]]:
    """(estimator class, declaration) of every declared ranker whose estimator imports (a plugin
    that cannot be imported declares no class here; its own lookups report why)."""
    out = []
    for d in RANKERS.values():
        try:
            out.append((d.estimator_class(), d))
        except ConfigError:
            continue
    return out


def declaration_of(model: Any) -> RankerDeclaration:
    """The declaration of ``model``'s class, or of its nearest declared base class (a subclass of
    DELTR is a DELTR), matched by the class object (a declaration may name a re-export, e.g.
    ``"mypkg:MyRanker"``); a model of no declared class is a ConfigError naming the declared ones."""
    cls = model if isinstance(model, type) else type(model)
    declared = _declared_classes()
    for base in cls.__mro__:
        for estimator, d in declared:
            if estimator is base:
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


def load_ranker_files(files: Sequence[str | Path], label: str | None = None) -> Any:
    """The model saved in ``files`` (the main file first, as ``saved_files`` lists them), read by
    the ranker its format marker names. A marker no ranker declares is a DataError naming it and
    the declared ones (a plugin that is not installed here); a file whose marker cannot be read is
    given to the loader of the ranker labelled ``label`` (a logged model's config records it),
    else DELTR's, which reports the defect."""
    marker = model_format(files[0])
    d = declaration_for_format(marker)
    if d is None and marker is not None:
        raise DataError(f"{files[0]}: model format {marker!r} is declared by no installed ranker (install the "
                        f"package that declares it in the fairltr.rankers entry points); declared: "
                        f"{[r.format for r in RANKERS.values()]}")
    if d is None:
        d = next((r for r in RANKERS.values() if label is not None and r.label == label), RANKERS.require("deltr"))
    return d.estimator_class().load_saved(list(files))


def load_ranker(path: str | Path) -> Any:
    """The model in ``path`` (its companion files beside it), loaded by the class its format
    marker names (see :func:`load_ranker_files`)."""
    return load_ranker_files([path])


def __getattr__(name: str) -> Any:
    if name == "RANKER_CLASSES":  # the earlier {format marker: class} map, built from the registry
        return {d.format: d.estimator_class() for d in RANKERS.values()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
