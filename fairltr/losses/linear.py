"""DELTR's objective for a linear scorer with a fused analytic gradient (docs/spec.md §2).

For s = X w over a fixed padded batch, with T = softmax(y) (constant) and P = softmax(s):

* ListNet:  sum_q L_q = sum_q logsumexp(s_q) - c.w,  c = sum_{q,i} T_qi x_qi   (sum_i T_qi = 1)
            dL/ds_qi = P_qi - T_qi,  so  dL/dw = X^T P - c
* exposure (two groups): D_q = Exp(G_0) - Exp(G_1) = sum_i a_qi P_qi with
            a_qi = v_1 / |G_0| for group 0, -v_1 / |G_1| for group 1 (0 when a group is absent);
            h_q = max(0, D_q) (hinge) or D_q (symmetric); U_q = h_q^2;
            dU_q/ds_qj = 2 h_q P_qj (a_qj - D_q)     (softmax Jacobian, since sum_i a_i P_i = D)
* several protected groups: the same with per-group coefficients (reduce max / mean).

The gradient w.r.t. w is then one pass X^T g, so an iteration costs the two passes over the
feature tensor (X w and X^T g) plus a handful of element-wise passes over (Q, N) scores,
done in preallocated buffers (P = e / z is never normalised in memory: 1/z is folded into
the per-query factors). :class:`LinearDELTRObjective` computes exactly the value of
:func:`fairltr.losses.objective.deltr_objective` (tested against it and against autograd).
"""

from __future__ import annotations

import math
from typing import Literal

import torch

from fairltr.errors import ConfigError
from fairltr.losses.builtin import GAMMA
from fairltr.losses.exposure import V1, check_group_ids, exposure_disparity
from fairltr.losses.listnet import top_one_probability
from fairltr.losses.objective import ObjectiveTerms
from fairltr.losses.plugins import get_loss

__all__ = ["LinearDELTRObjective", "fused_variant", "masked_moments"]

Variant = Literal["hinge", "symmetric"] | None


def fused_variant(fairness_loss: str) -> tuple[bool, Variant]:
    """Whether the registered ranking loss ``fairness_loss`` has a fused form, and its variant:
    what its registry entry declares (:attr:`~fairltr.losses.plugins.FairnessLoss.fused`).

    The built-in ``none`` (no fairness term), ``exposure_hinge`` and ``exposure_symmetric`` do; a
    plugin loss that declares nothing (or one re-registered under those names without the
    declaration) goes through autograd.
    """
    loss = get_loss(fairness_loss)
    if loss.fn is None:
        return True, None
    if loss.fused is not None:
        return True, loss.fused
    return False, None


MOMENT_BLOCK = 1 << 20
"""Feature cells above which :func:`masked_moments` works block by block in float64."""


def masked_moments(features: list[torch.Tensor], masks: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and population standard deviation (F,) of the real candidates' features over the
    padded tensors ``features[b]`` (Q_b, N_b, F) with ``masks[b]`` (Q_b, N_b), in their dtype.

    Up to :data:`MOMENT_BLOCK` real cells: the gathered rows' ``mean`` / ``std`` (one copy of
    them). Above: two passes over blocks of queries accumulated in float64 (sum, then the sum of
    squared deviations), so no copy of the table is made; the figures then differ from the
    one-copy ones by float summation order only (float64 accumulation: closer to exact).
    """
    dtype = features[0].dtype
    n_f = features[0].shape[-1]
    cells = sum(int(m.sum()) for m in masks) * n_f
    if cells <= MOMENT_BLOCK:
        real = features[0][masks[0]] if len(features) == 1 else torch.cat([x[m] for x, m in zip(features, masks)])
        return real.mean(0), real.std(0, unbiased=False)

    def blocks():
        for x, m in zip(features, masks):
            step = max(1, MOMENT_BLOCK // max(1, x.shape[1] * n_f))
            for q0 in range(0, x.shape[0], step):
                yield x[q0:q0 + step][m[q0:q0 + step]].to(torch.float64)

    count = cells // n_f
    mean = sum(b.sum(0) for b in blocks()) / count
    var = sum((b - mean).square_().sum(0) for b in blocks()) / count
    return mean.to(dtype), var.sqrt().to(dtype)


class _Fused(torch.autograd.Function):
    """(listnet, exposure) sums of a linear scorer; backward is one X^T pass."""

    @staticmethod
    def forward(ctx, w: torch.Tensor, obj: "LinearDELTRObjective"):  # type: ignore[override]
        listnet, exposure = obj._forward(w.detach())
        ctx.obj = obj
        ctx.call = obj._calls
        return listnet, exposure

    @staticmethod
    def backward(ctx, grad_listnet: torch.Tensor, grad_exposure: torch.Tensor):  # type: ignore[override]
        obj: LinearDELTRObjective = ctx.obj
        if ctx.call != obj._calls:
            raise RuntimeError(
                "LinearDELTRObjective: backward of an older call; call backward() before evaluating again"
            )
        return obj._backward(grad_listnet, grad_exposure), None


def _shifted_rows(features: torch.Tensor, mask: torch.Tensor, standardize: tuple[torch.Tensor, torch.Tensor] | None,
                  consume: bool) -> torch.Tensor:
    """The features as (Q*N, F) rows, standardized when asked and shifted per query by its first
    real row, 0 on padding; the only full-size tensor made (none with ``consume``)."""
    # Shifted per query by the query's first real row: softmax, ListNet and exposure are
    # invariant to adding a constant to a query's scores, and the shifted scores are 0 at that
    # row, so exp() never underflows to an all-zero list and needs no per-query max in the
    # common case (the max is used when exp overflows). ``standardize`` = (mean, std):
    # x = (features - mean) / std, 0 on padding, computed here in place (element by element
    # exactly as out of place); ``consume``: ``features`` may be overwritten (else one copy is made).
    q, n, f = features.shape
    x = features if consume and features.is_contiguous() else features.clone(memory_format=torch.contiguous_format)
    pad_mask = ~mask.unsqueeze(-1)
    if standardize is not None:
        x.sub_(standardize[0]).div_(standardize[1]).masked_fill_(pad_mask, 0.0)
    first = mask.to(features.dtype).argmax(dim=1)  # first real slot (argmax returns the first maximum)
    x0 = x[torch.arange(q, device=x.device), first]  # (Q, F), a copy
    x.sub_(x0.unsqueeze(1)).masked_fill_(pad_mask, 0.0)
    del pad_mask
    return x.view(q * n, f)


class LinearDELTRObjective:
    """sum_q L_q and sum_q U_q of s = X w with an analytic gradient (see the module docstring).

    ``features`` (Q, N, F), ``judgments`` (Q, N), ``groups`` (Q, N) long, ``mask`` (Q, N) bool.
    ``variant=None`` (no fairness term), ``"hinge"`` (DELTR) or ``"symmetric"``.
    Calling ``obj(w)`` returns :class:`ObjectiveTerms` differentiable w.r.t. ``w``
    (``total = listnet + gamma * exposure``); call ``backward()`` before the next evaluation,
    as every optimizer closure does (the buffers are reused between calls).

    ``standardize=(mean, std)`` scores standardised features (x - mean) / std instead (0 on
    padding); ``consume=True`` lets the objective overwrite ``features`` with its own layout
    instead of copying them (the caller gives the tensor up). The objective keeps one tensor of
    the features' size; every other buffer is (Q, N).
    """

    def __init__(
        self,
        features: torch.Tensor,
        judgments: torch.Tensor,
        groups: torch.Tensor,
        mask: torch.Tensor,
        gamma: float = 0.0,
        *,
        variant: Variant = "hinge",
        reduce: Literal["max", "mean"] = "max",
        n_groups: int | None = None,
        standardize: tuple[torch.Tensor, torch.Tensor] | None = None,
        consume: bool = False,
    ) -> None:
        if variant not in (None, "hinge", "symmetric"):
            raise ConfigError(f"variant must be None, 'hinge' or 'symmetric', got {variant!r}")
        if reduce not in ("max", "mean"):
            raise ConfigError(f"reduce must be 'max' or 'mean', got {reduce!r}")
        gamma = GAMMA.validate(gamma)
        keep = mask.any(dim=1)
        if not bool(keep.all()):  # empty queries contribute nothing; drop them
            features, judgments, groups, mask = features[keep], judgments[keep], groups[keep], mask[keep]
            consume = True  # ``features`` is now a copy of our own
        q, n, _ = features.shape
        dtype = features.dtype
        self.gamma = float(gamma)
        self.variant = variant
        self.reduce = reduce
        self.shape = (q, n)
        self.mask = mask
        self.padded = not bool(mask.all())
        self.x = _shifted_rows(features, mask, standardize, consume)
        target = top_one_probability(judgments.to(dtype), mask)
        self.c = self.x.T @ target.reshape(-1)  # sum_{q,i} T_qi x_qi
        self._set_groups(groups, mask, n_groups, dtype, features.device)
        self._s = torch.empty(q * n, dtype=dtype, device=features.device)
        self._buf = torch.empty(q, n, dtype=dtype, device=features.device)
        self._calls = 0
        self._state: dict[str, torch.Tensor] = {}

    def _set_groups(self, groups: torch.Tensor, mask: torch.Tensor, n_groups: int | None, dtype: torch.dtype,
                    device: torch.device) -> None:
        """The group buffers: ``n_groups`` (at least 2), the codes (0 on padding), the per-query
        counts, which queries hold G_0 and G_p, and the exposure weights (``a`` for two groups,
        ``slot_inv`` = v1 / |G_{g_i}| per slot otherwise)."""
        q = mask.shape[0]
        if n_groups is None:
            n_groups = int(groups[mask].max().item()) + 1 if mask.any() else 1
        self.n_groups = max(2, int(n_groups))
        g = groups.masked_fill(~mask, 0).long()
        check_group_ids(g, self.n_groups)
        self.groups = g
        onehot_counts = torch.zeros(q, self.n_groups, dtype=dtype, device=device)
        onehot_counts.scatter_add_(1, g, mask.to(dtype))
        self.counts = onehot_counts
        present = onehot_counts > 0
        self.valid = present[:, :1] & present[:, 1:]  # (Q, G-1): query holds G_0 and G_p
        inv = V1 / onehot_counts.clamp(min=1.0)  # v1 / |G_p|
        if self.n_groups == 2:
            a = torch.where(g == 0, inv[:, :1], -inv[:, 1:2]) * self.valid.to(dtype)
            self.a = a.masked_fill(~mask, 0.0)
        else:
            self.a = None
            self.slot_inv = inv.gather(1, g).masked_fill(~mask, 0.0)  # v1 / |G_{g_i}| per slot

    # ---------------------------------------------------------------- forward
    def _forward(self, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self._calls += 1
        q, n = self.shape
        s = self._scores(w)
        e = s.exp_()  # in place: exp(s); P = e / z is never materialised
        z = e.sum(dim=1, keepdim=True)
        lse_sum = z.log().sum()  # finite unless some exp() overflowed (or w holds NaN/inf)
        if not math.isfinite(float(lse_sum)):  # redo with the per-query max shift
            s = self._scores(w)
            m = s.amax(dim=1, keepdim=True)
            e = s.sub_(m).exp_()
            z = e.sum(dim=1, keepdim=True)
            lse_sum = (m + z.log()).sum()
        listnet = lse_sum - self.c @ w
        state = {"e": e, "z": z}
        if self.variant is None:
            exposure = torch.zeros((), dtype=e.dtype, device=e.device)
        elif self.a is not None:
            t = torch.mul(self.a, e, out=self._buf)  # a_i e_i, kept for the gradient
            d = t.sum(dim=1) / z.squeeze(1)  # Exp(G0) - Exp(G1)
            h = d.clamp(min=0.0) if self.variant == "hinge" else d
            exposure = (h * h).sum()
            state.update(d=d, h=h, active=exposure)  # exposure > 0 <=> some h_q != 0
        else:
            exposure, coef = self._multi_group(e / z)
            state.update(coef=coef)
        self._state = state
        return listnet, exposure

    def _scores(self, w: torch.Tensor) -> torch.Tensor:
        """Shifted scores (Q, N) in the reused buffer; -inf on padding."""
        q, n = self.shape
        torch.mv(self.x, w, out=self._s)
        s = self._s.view(q, n)
        if self.padded:
            s.masked_fill_(~self.mask, float("-inf"))
        return s

    def _multi_group(self, p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """U summed over queries and dU/dP per slot for G > 2 groups."""
        q = p.shape[0]
        e = torch.zeros(q, self.n_groups, dtype=p.dtype, device=p.device)
        e.scatter_add_(1, self.groups, p * self.slot_inv)  # Exp(G_p)
        diff = e[:, :1] - e[:, 1:]
        h = diff.clamp(min=0.0) if self.variant == "hinge" else diff
        h = h.masked_fill(~self.valid, 0.0)
        per = h * h
        if self.reduce == "max":
            u, arg = per.max(dim=1)
            dd = torch.zeros_like(h).scatter_(1, arg.unsqueeze(1), (2.0 * h).gather(1, arg.unsqueeze(1)))
        else:
            n_valid = self.valid.sum(dim=1, keepdim=True).clamp(min=1).to(p.dtype)
            u = per.sum(dim=1) / n_valid.squeeze(1)
            dd = 2.0 * h / n_valid
        de = torch.cat([dd.sum(dim=1, keepdim=True), -dd], dim=1)  # dU/dExp(G_p)
        coef = de.gather(1, self.groups) * self.slot_inv  # dU/dP_i
        return u.sum(), coef

    # ---------------------------------------------------------------- backward
    def _backward(self, g_listnet: torch.Tensor, g_exposure: torch.Tensor) -> torch.Tensor:
        st = self._state
        if not st:
            raise RuntimeError("LinearDELTRObjective: backward called twice for one evaluation")
        e, z = st["e"], st["z"]
        gl = g_listnet.to(e.dtype)
        ge = g_exposure.to(e.dtype)
        fair = self.variant is not None and float(ge) != 0.0
        k = None
        if fair and self.a is not None and float(st["active"]) > 0.0:
            k = (2.0 * ge) * st["h"]  # (Q,)
        if k is not None:
            # g = P (gl + k (a - D)) = e (gl - k D) / z + (a e) k / z
            zq = z.squeeze(1)
            e.mul_(((gl - k * st["d"]) / zq).unsqueeze(1)).addcmul_(self._buf, (k / zq).unsqueeze(1))
        elif fair and self.a is None:
            coef = st["coef"]
            p = e.div_(z)
            inner = (coef * p).sum(dim=1, keepdim=True)
            p.mul_(gl + ge * (coef - inner))
        else:
            e.mul_(gl / z)
        self._state = {}
        return self.x.T @ e.reshape(-1) - gl * self.c

    # ---------------------------------------------------------------- API
    def __call__(self, w: torch.Tensor) -> ObjectiveTerms:
        """Objective terms at ``w`` (F,); ``total`` backpropagates to ``w`` analytically."""
        listnet, exposure = _Fused.apply(w, self)
        return ObjectiveTerms(listnet + self.gamma * exposure, listnet, exposure)

    @torch.no_grad()
    def per_query_exposure(self, w: torch.Tensor) -> torch.Tensor:
        """U_q of every (non-empty) query at ``w``, shape (Q,): the fairness term before the sum
        (zeros without one); ``exposure`` of the objective is its sum. For diagnostics, e.g. the
        share of queries whose hinge is active."""
        q, n = self.shape
        if self.variant is None:
            return torch.zeros(q, dtype=self.x.dtype, device=self.x.device)
        scores = (self.x @ w.detach().to(self.x.dtype)).view(q, n)
        return exposure_disparity(scores, self.groups, self.mask, variant=self.variant, reduce=self.reduce,
                                  n_groups=self.n_groups)

    def value_and_grad(self, w: torch.Tensor) -> tuple[ObjectiveTerms, torch.Tensor]:
        """Terms and d total / d w without autograd (one forward, one X^T pass)."""
        w = w.detach()
        listnet, exposure = self._forward(w)
        one = torch.ones((), dtype=w.dtype, device=w.device)
        grad = self._backward(one, one * self.gamma)
        return ObjectiveTerms(listnet + self.gamma * exposure, listnet, exposure), grad
