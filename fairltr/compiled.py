"""Whether fairltr's compiled CPU kernels run, where they cache, and when they pay.

The kernels (:mod:`fairltr.losses.pl_kernels`, :mod:`fairltr.fair.geyik_kernels`,
:mod:`fairltr.row_sort`, ...) are numba loops, the ``[fast]`` extra (in ``[all]``). They run when numba
imports and ``FAIRLTR_COMPILED`` is not ``0``; otherwise the same results come from the tensor /
numpy code (slower on large inputs). ``FAIRLTR_COMPILED=1`` runs them wherever they exist (the tests
compare both paths so); unset (or ``auto``), the callers that estimate their cost run them only where
they pay (below).

* cache: every kernel is declared with :func:`njit` (not numba's own ``cache=True``), which caches its
  machine code in ``<cache_root()>/numba`` (``$FAIRLTR_CACHE_DIR``, else ``$XDG_CACHE_HOME/fairltr``, else
  ``~/.cache/fairltr``), never in the installed package; a folder that cannot be written leaves the
  kernel uncached (compiled in every process) rather than falling back to the package tree.
* when they pay (:func:`pays`): loading the kernels costs once per process about
  :data:`LOAD_SECONDS` with a warm cache (``import numba`` and the cached machine code) and
  :data:`COMPILE_SECONDS` with an empty one; the numpy path's cost is estimated by the caller from the
  input size. The kernels run when that estimate exceeds the load cost, or when they are already
  loaded in this process (then they cost nothing extra). Same results either way.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import warnings
from pathlib import Path

__all__ = ["ENV_VAR", "ENV_CACHE_DIR", "LOAD_SECONDS", "COMPILE_SECONDS", "compiled_enabled", "compiled_available",
           "cache_root", "numba_cache_dir", "njit", "pays"]

ENV_VAR = "FAIRLTR_COMPILED"
ENV_CACHE_DIR = "FAIRLTR_CACHE_DIR"
LOAD_SECONDS = 1.3
"""A kernel module's first use in a process with a warm cache: ``import numba`` (0.45 s) plus loading the
cached code of the functions a call uses; 1.07-1.49 s measured for the Geyik kernels on the shared 2-core
machine (benchmarks/results/bench_compiled_cli.txt)."""
COMPILE_SECONDS = 4.0
"""The same with an empty cache (numba compiles the module's kernels)."""


def cache_root() -> Path:
    """fairltr's cache folder: ``$FAIRLTR_CACHE_DIR``, else ``$XDG_CACHE_HOME/fairltr``, else
    ``~/.cache/fairltr`` (a relative XDG_CACHE_HOME is ignored, as the XDG spec says)."""
    own = os.environ.get(ENV_CACHE_DIR, "").strip()
    if own:
        return Path(own).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "fairltr"


def numba_cache_dir() -> Path:
    """Where the kernels' machine code is cached: ``<cache_root()>/numba``."""
    return cache_root() / "numba"


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


@functools.lru_cache(maxsize=1)
def _numba_installed() -> bool:
    """numba can be found on the path (looked up once per process: the lookup costs about 0.1 ms,
    a sixth of re-ranking a list of 100 through the table API)."""
    return importlib.util.find_spec("numba") is not None


def compiled_available() -> bool:
    """numba is installed and ``FAIRLTR_COMPILED`` is not ``0`` (read at every call), without
    importing numba (cheap)."""
    return os.environ.get(ENV_VAR, "1") != "0" and _numba_installed()


def compiled_enabled() -> bool:
    """numba is installed and imports, and ``FAIRLTR_COMPILED`` is not ``0`` (read at every call;
    imports numba)."""
    return compiled_available() and _numba_imports()


def _cache_is_warm(module: str) -> bool:
    """Some cached machine code of ``module`` (e.g. ``geyik_kernels``) exists in the cache folder."""
    folder = numba_cache_dir()
    try:
        return any(folder.rglob(f"{module}.*.nbi"))
    except OSError:
        return False


def pays(module: str, numpy_seconds: float) -> bool:
    """Whether the kernels of ``module`` (a dotted name, e.g. ``"fairltr.fair.geyik_kernels"``) should
    run for an input whose numpy path is estimated at ``numpy_seconds``: they are enabled and either
    already loaded in this process, or the estimate exceeds the load cost (:data:`LOAD_SECONDS` with
    a warm cache, :data:`COMPILE_SECONDS` with an empty one); always with ``FAIRLTR_COMPILED=1``.
    Decides without importing numba when they do not run."""
    if not compiled_available():
        return False
    if module in sys.modules or os.environ.get(ENV_VAR, "auto").strip() == "1":
        return _numba_imports()
    if numpy_seconds < LOAD_SECONDS:
        return False
    load = LOAD_SECONDS if _cache_is_warm(module.rsplit(".", 1)[-1]) else COMPILE_SECONDS
    return numpy_seconds >= load and _numba_imports()


def njit(**options):
    """``numba.njit(**options)`` whose on-disk cache (on by default, ``cache=False`` turns it off) is
    :func:`numba_cache_dir`, for this function only (numba's global settings are left as they are)."""
    import numba
    from numba.core import caching, config

    cache = options.pop("cache", True)

    def wrap(fn):
        dispatcher = numba.njit(**options)(fn)
        if cache:
            folder = str(numba_cache_dir())
            before = config.CACHE_DIR
            try:
                config.CACHE_DIR = folder
                function_cache = caching.FunctionCache(fn)
            except (OSError, RuntimeError):
                function_cache = None
            finally:
                config.CACHE_DIR = before
            # only our folder: a locator that fell back (folder not writable) would write the package tree
            if function_cache is not None and function_cache._impl.locator.get_cache_path().startswith(folder):
                dispatcher._cache = function_cache
        return dispatcher

    return wrap

