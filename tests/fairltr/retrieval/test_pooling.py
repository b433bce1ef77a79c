"""Pooling lives in the core and is the one the bi-encoder uses."""

from __future__ import annotations

import pytest
import torch

from fairltr.errors import ConfigError
from fairltr.retrieval import POOLINGS, pool


def _loop_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Masked mean by a Python loop over texts and tokens (independent of the vectorised form)."""
    out = torch.zeros(hidden.shape[0], hidden.shape[2], dtype=hidden.dtype)
    for b in range(hidden.shape[0]):
        n = 0
        for t in range(hidden.shape[1]):
            if mask[b, t]:
                out[b] += hidden[b, t]
                n += 1
        out[b] /= max(n, 1)
    return out


def test_pool_cls_and_masked_mean_match_loops():
    g = torch.Generator().manual_seed(0)
    h = torch.randn(4, 7, 5, generator=g, dtype=torch.float64)
    mask = torch.tensor([[1] * 7, [1, 1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0, 0], [0] * 7])
    assert POOLINGS == ("cls", "mean")
    torch.testing.assert_close(pool(h, mask, "cls"), h[:, 0], rtol=0, atol=0)
    torch.testing.assert_close(pool(h, mask, "mean"), _loop_mean(h, mask), rtol=0, atol=1e-12)
    assert torch.equal(pool(h, mask, "mean")[3], torch.zeros(5, dtype=torch.float64))  # all padding: 0, no NaN
    with pytest.raises(ConfigError, match="pooling must be one of"):
        pool(h, mask, "max")


def test_core_module_does_not_import_transformers():
    import subprocess
    import sys

    code = "import sys, fairltr.retrieval.pooling; assert 'transformers' not in sys.modules and 'lightning' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
