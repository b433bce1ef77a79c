"""Load any fairltr ranker model file by its format marker (``fairltr.DELTR``, ``fairltr.PLRank``,
``fairltr.LambdaMART``).

The ranker pyfunc, promotion's verified loading and ``fairltr evaluate`` read model files through
:func:`load_ranker`, so every linear ranker written by ``save`` goes through the same checks.
"""

from __future__ import annotations

import json
from pathlib import Path

from fairltr.deltr import DELTR
from fairltr.gbdt import FORMAT as LAMBDAMART_FORMAT, LambdaMART
from fairltr.plrank import PLRank

__all__ = ["RANKER_CLASSES", "load_ranker", "model_format"]

RANKER_CLASSES: dict[str, type] = {"fairltr.DELTR": DELTR, "fairltr.PLRank": PLRank,
                                   LAMBDAMART_FORMAT: LambdaMART}


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


def load_ranker(path: str | Path) -> DELTR | LambdaMART:
    """The model in ``path``, loaded by the class its format marker names (DELTR when the
    marker is missing or unknown, whose loader reports the defect)."""
    return RANKER_CLASSES.get(model_format(path) or "", DELTR).load(path)
