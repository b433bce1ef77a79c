"""A table made to fit a logged model's input signature, and MLflow's schema errors in one line.

A ranker's signature records each input column with the type it had in the training file
(``long`` for integer features, ``double`` for float ones, ``string`` for text categories).
MLflow's schema enforcement refuses a conversion it cannot call safe (int64 -> double, float ->
long), so a file whose integer column arrives as floats (or the reverse) would be refused by a
model that can score it. :func:`conform_to_schema` converts exactly where no value changes
(integers to double below 2^53, floats that are all whole numbers to long); anything else is
left to MLflow, whose refusal :func:`schema_error_line` states in one line with its reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["conform_to_schema", "schema_error_line", "input_types", "training_types", "check_identifier_columns",
           "any_typed_signature"]

_EXACT_INT = 2 ** 53  # every integer below this is exact as a double


def input_types(schema: Any) -> dict[str, str]:
    """``{column: MLflow type name}`` of a signature's named input columns ({} without a schema)."""
    if schema is None or not getattr(schema, "has_input_names", lambda: False)():
        return {}
    out = {}
    for spec in schema.inputs:
        name = getattr(spec, "name", None)
        kind = getattr(getattr(spec, "type", None), "name", None)
        if name is not None and kind is not None:
            out[name] = kind
    return out


def _as(values: pd.Series, kind: str) -> pd.Series | None:
    """``values`` converted to the signature type ``kind`` without changing a value, or None."""
    dtype = values.dtype
    if kind in ("double", "float") and (pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_bool_dtype(dtype)):
        arr = values.to_numpy()
        if pd.api.types.is_bool_dtype(dtype) or (len(arr) == 0 or np.abs(arr.astype(np.float64)).max() < _EXACT_INT):
            return values.astype(np.float64 if kind == "double" else np.float32)
        return None
    if kind in ("long", "integer") and pd.api.types.is_float_dtype(dtype):
        arr = values.to_numpy(dtype=np.float64)
        if np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)) and np.all(np.abs(arr) < _EXACT_INT):
            return values.astype(np.int64 if kind == "long" else np.int32)
        return None
    if kind == "long" and pd.api.types.is_integer_dtype(dtype) and dtype != np.int64:
        return values.astype(np.int64)
    if kind == "string" and not (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)):
        return values.astype(str).astype(object)  # integer categories of a text-category model: as text
    return None


def conform_to_schema(df: pd.DataFrame, schema: Any) -> pd.DataFrame:
    """``df`` with every signature column converted to its recorded type where that is exact
    (module docstring); other columns and the row order unchanged. The frame is copied only
    when a column changes."""
    types = input_types(schema)
    changed: dict[str, pd.Series] = {}
    for name, kind in types.items():
        if name in df.columns:
            converted = _as(df[name], kind)
            if converted is not None:
                changed[name] = converted
    return df.assign(**changed) if changed else df


def any_typed_signature(columns: list[str], optional: tuple[str, ...] = ()):
    """An input schema declaring every column of ``columns`` (and the optional ones) as MLflow's
    ``AnyType``: MLflow then hands the values to the model as they arrive (its REST parser would
    truncate 37.5 to 37 for a ``long`` column, and its schema check refuses int64 for a ``double``
    one); the model checks them against the training file's types (``input_types``)."""
    from mlflow.types.schema import AnyType, ColSpec, Schema

    specs = [ColSpec(AnyType(), name) for name in columns]
    specs += [ColSpec(AnyType(), name, required=False) for name in optional if name not in columns]
    return Schema(specs)


def schema_error_line(exc: BaseException) -> str:
    """MLflow's schema refusal in one line that keeps its reason: ``Failed to enforce schema of
    data '<the whole table>' with schema '<every column>'. Error: <reason>`` becomes ``the model's
    input signature refuses the data: <reason>``; other errors their own text, on one line."""
    text = " ".join(str(exc).split())
    if "Failed to enforce schema" in text and "Error:" in text:
        reason = text.rsplit("Error:", 1)[1].strip()
        return f"the model's input signature refuses the data: {reason}"
    return text


def training_types(example: pd.DataFrame) -> dict[str, str]:
    """``{column: "long" | "double" | "string" | "boolean"}``: the type each input column had in
    the training file (recorded in the model config as ``input_types``)."""
    out = {}
    for name in example.columns:
        dtype = example[name].dtype
        if pd.api.types.is_bool_dtype(dtype):
            out[str(name)] = "boolean"
        elif pd.api.types.is_integer_dtype(dtype):
            out[str(name)] = "long"
        elif pd.api.types.is_float_dtype(dtype):
            out[str(name)] = "double"
        else:
            out[str(name)] = "string"
    return out


def check_identifier_columns(df: pd.DataFrame, input_types: dict[str, str], names: tuple[str, ...]) -> None:
    """A :class:`~fairltr.errors.DataError` naming the row and value when a column of ``names``
    (the query id, the group column) that the training file held as integers holds a value that is
    not an integer: served rankings of ids 7.2 and 7.7 must not be merged into query 7 (MLflow's
    REST parser truncates floats for a ``long`` column; the signature declares these columns Any
    so that fairltr sees the values as sent)."""
    from fairltr.errors import DataError

    for name in names:
        if name is None or input_types.get(name) != "long" or name not in df.columns:
            continue
        values = df[name]
        if pd.api.types.is_integer_dtype(values.dtype):
            continue
        numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(numbers) | (numbers != np.round(numbers)) | values.map(lambda v: isinstance(v, bool)).to_numpy()
        if bad.any():
            pos = int(np.flatnonzero(bad)[0])
            from fairltr.data import show_value

            raise DataError(f"row {pos}: {name!r} is {show_value(values.iloc[pos])}, not an integer; the model was trained on "
                            f"integer {name!r} values ({int(bad.sum())} such row(s))")
