"""Pooling of an encoder's last hidden state into one embedding per text.

* ``cls``:  e = h[:, 0]                                   (the first token)
* ``mean``: e = sum_t m_t h[:, t] / max(1, sum_t m_t)     (masked mean, m = attention mask)

Shared by training (``lightning_modules.BiEncoderModule``) and serving (the "fairltr retriever"
MLflow model), so a query is embedded the same way in both.
"""

from __future__ import annotations

import torch

from fairltr.errors import ConfigError

__all__ = ["pool", "POOLINGS"]

POOLINGS = ("cls", "mean")


def pool(hidden: torch.Tensor, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """(B, T, H) last hidden state -> (B, H): the first token (``cls``) or the masked mean (``mean``).
    A half-precision state (bfloat16 / float16 autocast) is pooled in float32."""
    if hidden.dtype in (torch.bfloat16, torch.float16):
        hidden = hidden.float()
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "mean":
        m = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)
    raise ConfigError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
