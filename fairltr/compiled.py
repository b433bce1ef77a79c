"""Whether fairltr's compiled CPU kernels run.

The kernels (:mod:`fairltr.losses.pl_kernels`, :mod:`fairltr.fair.geyik_kernels`, :mod:`fairltr.row_sort`) are numba loops, the
``[fast]`` extra (in ``[all]``). They run when numba imports and ``FAIRLTR_COMPILED`` is not
``0``; otherwise the same results come from the tensor / numpy code (slower). A kernel compiles on
its first call and numba caches it on disk.
"""

from __future__ import annotations

import importlib.util
import os

__all__ = ["ENV_VAR", "compiled_enabled"]

ENV_VAR = "FAIRLTR_COMPILED"


def compiled_enabled() -> bool:
    """numba is installed and ``FAIRLTR_COMPILED`` is not ``0`` (read at every call)."""
    return os.environ.get(ENV_VAR, "1") != "0" and importlib.util.find_spec("numba") is not None
