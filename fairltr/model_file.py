"""The model file of the linear rankers (:class:`~fairltr.DELTR`, :class:`~fairltr.PLRank`).

A model file is ``.json`` (everything as text) or ``.safetensors`` (the weight, mean and scale
vectors as tensors, the rest as JSON text in the ``fairltr`` metadata entry); never pickle.
The state (:meth:`fairltr.DELTR.model_state`) carries the format marker ``fairltr.<kind>`` (the
estimator class's ``_FILE_KIND``) and :data:`FORMAT_VERSION`. Reading validates every field:
known keys only, the marker and version, parameter types (``dtype`` from {float32, float64},
``device`` a torch device), distinct feature names, finite vectors of one value per feature,
scale > 0, the history records; any defect is one :class:`~fairltr.errors.DataError` naming the
file and the field.
"""

from __future__ import annotations

import contextvars
import json
import math
import struct
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import torch

from fairltr.columns import RankingColumns
from fairltr.data import show_value
from fairltr.errors import ConfigError, DataError, one_line
from fairltr.files import atomic_write_bytes, atomic_write_text

__all__ = ["FORMAT_VERSION", "MODEL_SUFFIXES", "STATE_KEYS", "ARRAY_KEYS", "HISTORY_KEYS", "DTYPES", "PARAM_KINDS",
           "write_model_file", "read_model_file"]

FORMAT_VERSION = 1
_KIND: contextvars.ContextVar[str] = contextvars.ContextVar("fairltr_model_file_kind", default="DELTR")
"""The model class whose file is being read (``fairltr.<kind>`` format marker, error messages)."""
MODEL_SUFFIXES = (".json", ".safetensors")
STATE_KEYS = frozenset({"format", "format_version", "params", "feature_names", "query", "judgment", "n_iter",
                        "history"})
ARRAY_KEYS = ("weights", "mean", "scale")
HISTORY_KEYS = frozenset({"iteration", "total", "listnet", "exposure"})
DTYPES = {"float32": torch.float32, "float64": torch.float64}
PARAM_KINDS = {
    "gamma": "number", "protected": "str", "colorblind": "bool", "standardize": "bool", "l2": "number",
    "optimizer": "str", "max_iter": "int", "lr": "number", "tol": "number", "seed": "int", "device": "str",
    "fairness_loss": "str", "reduce": "str", "dtype": "str",
}
_OPTIONAL_PARAMS = {"reference_group": None}  # absent from model files written before issue 18
# safetensors dtype codes accepted in a model file (little-endian floats only)
_SAFETENSORS_DTYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8")}


def write_model_file(p: Path, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> Path:
    """Write ``state`` and the ``arrays`` (weights, mean, scale) to ``p`` by its suffix (one of
    :data:`MODEL_SUFFIXES`, checked by the caller), atomically: a failure or Ctrl-C midway leaves
    the previous file intact. JSON: the state then the three vectors as lists, indented by 1."""
    if p.suffix == ".safetensors":
        from safetensors.numpy import save as to_bytes

        tensors = {k: np.ascontiguousarray(arrays[k], dtype=np.float64) for k in ARRAY_KEYS}
        atomic_write_bytes(p, to_bytes(tensors, metadata={"fairltr": json.dumps(dict(state))}))
    else:
        text_state = dict(state)
        text_state.update({k: arrays[k].tolist() for k in ARRAY_KEYS})
        atomic_write_text(p, json.dumps(text_state, indent=1))
    return p


def read_model_file(cls: type, path: str | Path) -> Any:
    """The fitted ``cls`` model read from a file :func:`write_model_file` wrote, every field
    validated against the class's ``_FILE_KIND`` (format marker, messages), ``_PARAM_KINDS`` and
    ``_HISTORY_KEYS``; ``cls(**params, columns=...)`` is built and given its fitted state by
    ``set_fitted_state``. Any defect is a :class:`DataError` naming the file and the field."""
    token = _KIND.set(cls._FILE_KIND)
    try:
        return _read(cls, Path(path))
    finally:
        _KIND.reset(token)


def _read(cls: type, p: Path) -> Any:
    if not p.exists():
        raise DataError(f"model file not found: {p}")
    if not p.is_file():
        raise DataError(f"{p}: not a fairltr {_KIND.get()} model file: not a regular file")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise DataError(f"{p}: cannot read the model file: {exc.strerror or exc}") from None
    try:
        state, arrays = _state_and_arrays(p, data)
        params = _params(p, state["params"], cls._PARAM_KINDS)
        names = state["feature_names"]
        _check_columns(p, state, params, names)
        _check_arrays(p, arrays, names)
        n_iter = state["n_iter"]
        if not _is_int(n_iter) or n_iter < 0:
            raise _bad(p, "n_iter", f"must be an integer >= 0, got {show_value(n_iter)}")
        history = _history(p, state["history"], cls._HISTORY_KEYS)
        try:
            columns = RankingColumns(query=state["query"], group=params["protected"], judgment=state["judgment"])
            model = cls(**params, columns=columns)
            model.settings()
        except ConfigError as exc:
            raise _bad(p, "params", str(exc)) from None
    except DataError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError, RecursionError) as exc:
        raise DataError(f"{p}: not a fairltr {_KIND.get()} model file: {one_line(exc)}") from None
    return model.set_fitted_state(columns=columns, feature_names=names, weights=arrays["weights"],
                                  mean=arrays["mean"], scale=arrays["scale"], n_iter=n_iter, history=history)


def _state_and_arrays(p: Path, data: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    """The state and the three vectors of a file's bytes (format chosen by suffix), keys checked."""
    if p.suffix == ".safetensors":
        state, arrays = _read_safetensors(p, data)
        _check_state(p, state, STATE_KEYS, "the 'fairltr' metadata")
    else:
        state = _json_object(p, data, "the file")
        _check_state(p, state, STATE_KEYS | set(ARRAY_KEYS), "the file")
        arrays = {k: _json_vector(p, k, state[k]) for k in ARRAY_KEYS}
    return state, arrays


def _check_columns(p: Path, state: dict, params: dict[str, Any], names: object) -> None:
    """Distinct non-empty feature names; query and judgment columns distinct and not features;
    a colorblind model without its group column."""
    if (not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names)
            or len(set(names)) != len(names)):
        raise _bad(p, "feature_names", "must be a non-empty list of distinct non-empty strings")
    for key in ("query", "judgment"):
        if not isinstance(state[key], str) or not state[key]:
            raise _bad(p, key, f"must be a non-empty string, got {show_value(state[key])}")
        if state[key] in names:
            raise _bad(p, key, f"{state[key]!r} is also a feature in 'feature_names'")
    if state["query"] == state["judgment"]:
        raise _bad(p, "judgment", f"the query and judgment columns must differ, both are {state['query']!r}")
    if params["colorblind"] and params["protected"] in names:
        raise _bad(p, "feature_names", f"a colorblind model cannot use the group column {params['protected']!r}")


def _check_arrays(p: Path, arrays: dict[str, np.ndarray], names: list[str]) -> None:
    """One finite value per feature in each vector; scale > 0."""
    for key, arr in arrays.items():
        if arr.shape != (len(names),):
            raise _bad(p, key, f"shape {tuple(arr.shape)}, expected ({len(names)},): one value per feature "
                               f"in 'feature_names'")
        if not np.all(np.isfinite(arr)):
            raise _bad(p, key, "holds a non-finite value (NaN or infinity)")
    if not np.all(arrays["scale"] > 0):
        raise _bad(p, "scale", f"must be > 0, got {show_value(float(arrays['scale'].min()))}")


def _bad(p: Path, field: str, problem: str) -> DataError:
    return DataError(f"{p}: not a fairltr {_KIND.get()} model file: field {field!r}: {problem}")


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: object) -> bool:
    """A finite JSON number (not a boolean; integers beyond float range are not numbers here)."""
    if isinstance(v, float):
        return math.isfinite(v)
    return _is_int(v) and abs(v) < 2 ** 1023


def _json_object(p: Path, data: bytes, what: str) -> dict:
    try:
        obj = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataError(f"{p}: not a fairltr {_KIND.get()} model file: {what} is not UTF-8 text "
                        f"(byte 0x{data[exc.start]:02x} at offset {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{p}: not a fairltr {_KIND.get()} model file: {what} is not valid JSON "
                        f"(line {exc.lineno} column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise DataError(f"{p}: not a fairltr {_KIND.get()} model file: {what} is nested too deeply") from None
    if not isinstance(obj, dict):
        raise DataError(f"{p}: not a fairltr {_KIND.get()} model file: {what} holds a JSON {type(obj).__name__}, "
                        "not an object")
    return obj


def _check_state(p: Path, state: dict, expected: frozenset | set, what: str) -> None:
    """The format marker and version first (another program's JSON says so), then the keys."""
    if "format" not in state:
        raise _bad(p, "format", f"missing from {what}; expected 'fairltr.{_KIND.get()}'")
    _check_format(p, state)
    _check_keys(p, state, expected, what)


def _check_keys(p: Path, state: dict, expected: frozenset | set, what: str) -> None:
    missing = sorted(set(expected) - set(state))
    extra = sorted(str(k) for k in set(state) - set(expected))
    if missing:
        raise _bad(p, missing[0], f"missing from {what} (missing: {missing})")
    if extra:
        raise _bad(p, extra[0], f"unknown field in {what} (unknown: {extra})")


def _check_format(p: Path, state: dict) -> None:
    expected = f"fairltr.{_KIND.get()}"
    if state.get("format") != expected:
        raise _bad(p, "format", f"{show_value(state.get('format'))}, expected {expected!r}")
    version = state.get("format_version")
    if not _is_int(version) or version != FORMAT_VERSION:
        raise _bad(p, "format_version", f"unsupported version {show_value(version)}; this fairltr reads "
                                        f"version {FORMAT_VERSION}")


def _json_vector(p: Path, field: str, value: object) -> np.ndarray:
    # NaN / infinity (Python's json reads them) pass here and are reported as non-finite later
    if not isinstance(value, list) or not all(_is_number(v) or isinstance(v, float) for v in value):
        raise _bad(p, field, "must be a flat list of numbers")
    return np.asarray(value, dtype=np.float64)


def _params(p: Path, params: object, kinds: dict[str, str] | None = None) -> dict[str, Any]:
    kinds = PARAM_KINDS if kinds is None else kinds
    if not isinstance(params, dict):
        raise _bad(p, "params", f"must be an object, got {type(params).__name__}")
    missing = sorted(set(kinds) - set(params))
    extra = sorted(str(k) for k in set(params) - set(kinds) - set(_OPTIONAL_PARAMS))
    if missing or extra:
        raise _bad(p, "params", f"missing {missing}, unknown {extra}" if missing and extra
                   else f"missing {missing}" if missing else f"unknown key(s) {extra}")
    out: dict[str, Any] = {}
    for key, kind in kinds.items():
        v = params[key]
        ok = {"number": _is_number, "int": _is_int, "bool": lambda x: isinstance(x, bool),
              "str": lambda x: isinstance(x, str)}[kind](v)
        if not ok:
            raise _bad(p, f"params.{key}", f"must be a {'finite number' if kind == 'number' else kind}, "
                                           f"got {show_value(v)}")
        out[key] = v
    if kinds is PARAM_KINDS:  # DELTR's optional reference category (other estimators have no such param)
        ref = params.get("reference_group")
        if not (ref is None or (isinstance(ref, str) and ref) or _is_int(ref)):
            raise _bad(p, "params.reference_group", f"must be null, a string or an integer, got {show_value(ref)}")
        out["reference_group"] = ref
    if out["dtype"] not in DTYPES:  # never getattr(torch, <text from the file>)
        raise _bad(p, "params.dtype", f"{out['dtype']!r} is not one of {sorted(DTYPES)}")
    out["dtype"] = DTYPES[out["dtype"]]
    if out["device"] != "auto":
        try:
            torch.device(out["device"])
        except (RuntimeError, ValueError):
            raise _bad(p, "params.device", f"{out['device']!r} is not a torch device") from None
    return out


def _history(p: Path, history: object, keys: frozenset[str] = HISTORY_KEYS) -> list[dict[str, float]]:
    if not isinstance(history, list):
        raise _bad(p, "history", f"must be a list of records, got {type(history).__name__}")
    out = []
    for i, rec in enumerate(history):
        if not isinstance(rec, dict) or set(rec) != keys:
            raise _bad(p, "history", f"record {i} must have exactly the keys {sorted(keys)}")
        if not _is_int(rec["iteration"]) or not all(_is_number(rec[k]) for k in keys - {"iteration"}):
            raise _bad(p, "history", f"record {i} must hold an integer iteration and finite numbers")
        out.append(dict(rec))
    return out


def _read_safetensors(p: Path, data: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    """Parse and check a safetensors file by its published layout (8-byte little-endian header
    length, JSON header, contiguous little-endian buffers). Done here rather than by the
    safetensors package so that every defect becomes a DataError naming the field (the package
    raises SafetensorError or panics on some malformed files)."""
    if len(data) < 8:
        raise DataError(f"{p}: not a fairltr {_KIND.get()} model file: truncated ({len(data)} bytes; a safetensors file "
                        "starts with an 8-byte header length)")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise DataError(f"{p}: not a fairltr {_KIND.get()} model file: truncated (the header needs {n} bytes, "
                        f"{len(data) - 8} follow)")
    header = _json_object(p, data[8:8 + n], "the safetensors header")
    body = memoryview(data)[8 + n:]
    meta = header.pop("__metadata__", None)
    if not isinstance(meta, dict) or set(meta) != {"fairltr"} or not isinstance(meta["fairltr"], str):
        raise _bad(p, "__metadata__", "must hold exactly one entry, 'fairltr' (the model state as JSON text)")
    _check_keys(p, header, set(ARRAY_KEYS), "the tensors")
    arrays: dict[str, np.ndarray] = {}
    spans = []
    for name in ARRAY_KEYS:
        info = header[name]
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            raise _bad(p, name, "tensor entry must have exactly 'dtype', 'shape' and 'data_offsets'")
        dtype = _SAFETENSORS_DTYPES.get(info["dtype"]) if isinstance(info["dtype"], str) else None
        if dtype is None:
            raise _bad(p, name, f"dtype {show_value(info['dtype'])}; only F32 and F64 (float32, float64) are accepted")
        shape, offsets = info["shape"], info["data_offsets"]
        if not isinstance(shape, list) or len(shape) != 1 or not _is_int(shape[0]) or shape[0] < 0:
            raise _bad(p, name, f"shape {show_value(shape)}; expected a vector [n]")
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(_is_int(o) for o in offsets)
                or not 0 <= offsets[0] <= offsets[1] <= len(body)):
            raise _bad(p, name, f"data_offsets {show_value(offsets)} lie outside the {len(body)}-byte data "
                                "(truncated file?)")
        if offsets[1] - offsets[0] != shape[0] * dtype.itemsize:
            raise _bad(p, name, f"data_offsets {offsets} do not hold {shape[0]} {info['dtype']} value(s)")
        arrays[name] = np.frombuffer(body, dtype=dtype, count=shape[0], offset=offsets[0]).astype(np.float64)
        spans.append(tuple(offsets))
    end = 0
    for begin, stop in sorted(spans):
        if begin != end:
            raise DataError(f"{p}: not a fairltr {_KIND.get()} model file: tensor data overlap or leave a gap at byte {end}")
        end = stop
    if end != len(body):
        raise DataError(f"{p}: not a fairltr {_KIND.get()} model file: {len(body) - end} unexpected byte(s) after the tensor "
                        "data")
    state = _json_object(p, meta["fairltr"].encode("utf-8"), "the 'fairltr' metadata")
    return state, arrays
