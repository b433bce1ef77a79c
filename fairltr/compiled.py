"""Whether fairltr's compiled CPU kernels run.

The kernels (:mod:`fairltr.losses.pl_kernels`, :mod:`fairltr.fair.geyik_kernels`,
:mod:`fairltr.row_sort`) are numba loops, the ``[fast]`` extra (in ``[all]``). They run when numba
imports and ``FAIRLTR_COMPILED`` is not ``0``; otherwise the same results come from the tensor /
numpy code (slower). A kernel compiles on its first call and numba caches it on disk.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import warnings

__all__ = ["ENV_VAR", "compiled_enabled"]

ENV_VAR = "FAIRLTR_COMPILED"


@functools.lru_cache(maxsize=1)
def _numba_imports() -> bool:
    """numba imports (once per process; a broken install warns and falls back)."""
    try:
        import numba  # noqa: F401
    except Exception as exc:  # an install that cannot load (e.g. built for another numpy)
        warnings.warn(f"numba is installed but does not import ({type(exc).__name__}: {exc}); fairltr runs "
                      f"its numpy/tensor code instead of the compiled kernels", RuntimeWarning, stacklevel=3)
        return False
    return True


def compiled_enabled() -> bool:
    """numba is installed and imports, and ``FAIRLTR_COMPILED`` is not ``0`` (read at every call)."""
    return (os.environ.get(ENV_VAR, "1") != "0" and importlib.util.find_spec("numba") is not None
            and _numba_imports())
