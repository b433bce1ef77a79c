"""A disk cache of adjusted mtables in the user's cache directory, shared by processes.

An adjusted mtable costs a search over fail probabilities (about 25 s for the binomial table at
k = 10^5; the multinomial one costs more at any k); its entry holds the adjusted alpha_c and the
table itself, keyed by (kind, k, p, alpha) and the versions that could change the result
(this format, numpy, scipy). Unadjusted tables are not stored (their alpha_c is alpha, the table
one quantile call).

* where: ``$FAIRLTR_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/fairltr``, else
  ``~/.cache/fairltr`` (:func:`cache_root`); entries live in its ``mtables/`` folder.
  ``FAIRLTR_MTABLE_CACHE=0`` turns the disk cache off (neither read nor written).
* atomic: an entry is written to a temporary file in the same folder and moved into place with
  ``os.replace``, so a reader sees a whole entry or none, and processes racing on one key each
  write a whole (identical) entry.
* checked: the first line is the SHA-256 of the rest; a truncated, corrupt or foreign entry
  (other key, other versions) is ignored, recomputed and rewritten.
* never fatal: a folder that cannot be created or written only warns once; the table is computed.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np

from fairltr.compiled import ENV_CACHE_DIR as ENV_DIR, cache_root  # one cache folder for fairltr

__all__ = ["FORMAT", "ENV_DIR", "ENV_SWITCH", "MIN_K", "cache_root", "enabled", "entry_path", "load", "store"]

FORMAT = 1
ENV_SWITCH = "FAIRLTR_MTABLE_CACHE"
MIN_K = {"binomial": 256, "multinomial": 1}
"""Smallest k written to disk per kind (a binomial table below it is computed in a few ms)."""

_warned = False


def enabled() -> bool:
    """The disk cache is on unless ``FAIRLTR_MTABLE_CACHE=0``."""
    return os.environ.get(ENV_SWITCH, "1").strip() != "0"


def _versions() -> dict[str, str]:
    import scipy

    return {"format": str(FORMAT), "numpy": np.__version__, "scipy": scipy.__version__}


def _key(kind: str, k: int, p, alpha: float) -> dict:
    ps = [float(p)] if np.ndim(p) == 0 else [float(v) for v in p]
    return {"kind": kind, "k": int(k), "p": [v.hex() for v in ps], "alpha": float(alpha).hex(), **_versions()}


def entry_path(kind: str, k: int, p, alpha: float) -> Path:
    """The file of one entry (named by the hash of its key)."""
    digest = hashlib.sha256(json.dumps(_key(kind, k, p, alpha), sort_keys=True).encode()).hexdigest()[:32]
    return cache_root() / "mtables" / f"{kind}-k{int(k)}-{digest}.mtable"


def _wanted(kind: str, k: int) -> bool:
    return enabled() and k >= MIN_K[kind]


def load(kind: str, k: int, p, alpha: float) -> tuple[float, np.ndarray] | None:
    """(alpha_c, table) of a valid entry, or None (missing, corrupt, another key or versions)."""
    if not _wanted(kind, k):
        return None
    path = entry_path(kind, k, p, alpha)
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    try:
        digest, _, rest = raw.partition(b"\n")
        if hashlib.sha256(rest).hexdigest().encode() != digest:
            return None
        header, _, payload = rest.partition(b"\n")
        meta = json.loads(header)
        if meta.get("key") != _key(kind, k, p, alpha):
            return None
        shape = tuple(int(v) for v in meta["shape"])
        table = np.frombuffer(payload, dtype=np.dtype(meta["dtype"])).astype(np.int64).reshape(shape)
        if shape[0] != k:
            return None
        return float.fromhex(meta["alpha_c"]), table
    except (ValueError, KeyError, TypeError):
        return None


def store(kind: str, k: int, p, alpha: float, alpha_c: float, table: np.ndarray) -> None:
    """Write one entry atomically (temporary file + ``os.replace``); failures only warn once."""
    global _warned
    if not _wanted(kind, k):
        return
    path = entry_path(kind, k, p, alpha)
    data = np.ascontiguousarray(table, dtype=np.int32 if int(np.max(table, initial=0)) < 2**31 else np.int64)
    header = json.dumps({"key": _key(kind, k, p, alpha), "alpha_c": float(alpha_c).hex(),
                         "shape": list(data.shape), "dtype": data.dtype.str}, sort_keys=True).encode()
    rest = header + b"\n" + data.tobytes()
    blob = hashlib.sha256(rest).hexdigest().encode() + b"\n" + rest
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".mtable", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        if not _warned:
            _warned = True
            warnings.warn(f"fairltr could not write its mtable cache in {path.parent} ({exc}); tables are "
                          f"recomputed in every process (set {ENV_DIR} to a writable folder, or "
                          f"{ENV_SWITCH}=0)", RuntimeWarning, stacklevel=3)
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
