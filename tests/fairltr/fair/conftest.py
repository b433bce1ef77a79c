"""The FA*IR tests write adjusted mtables to a temporary cache folder, never the user's
(fairltr.fair.table_cache; tests/conftest.py may set FAIRLTR_CACHE_DIR for the whole suite)."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("FAIRLTR_CACHE_DIR", tempfile.mkdtemp(prefix="fairltr-test-cache-"))
