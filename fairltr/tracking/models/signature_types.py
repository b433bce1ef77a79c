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

__all__ = ["conform_to_schema", "schema_error_line", "input_types"]

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


def schema_error_line(exc: BaseException) -> str:
    """MLflow's schema refusal in one line that keeps its reason: ``Failed to enforce schema of
    data '<the whole table>' with schema '<every column>'. Error: <reason>`` becomes ``the model's
    input signature refuses the data: <reason>``; other errors their own text, on one line."""
    text = " ".join(str(exc).split())
    if "Failed to enforce schema" in text and "Error:" in text:
        reason = text.rsplit("Error:", 1)[1].strip()
        return f"the model's input signature refuses the data: {reason}"
    return text
