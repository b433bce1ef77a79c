"""DELTR's training steps, apart from the estimator's face (:mod:`fairltr.deltr`).

:class:`DELTRTraining` is a mixin of :class:`~fairltr.DELTR` (and so of :class:`~fairltr.PLRank`):
the fairness-signal check, the training inputs (features, standardisation, group count), the
seeded initial weights, the objective summed over length buckets (fused analytic gradient, or
autograd for a plugin loss) and the optimiser steps. It holds no state of its own; it reads
the estimator's parameters (``dtype``, ``colorblind``, ``standardize``, ``fairness_loss``,
``reduce``, ``optimizer``). :class:`DELTRSettings`, :class:`TrainingInputs` and
:func:`resolve_device` are re-exported by :mod:`fairltr.deltr`, their earlier home.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from fairltr.columns import RankingColumns
from fairltr.data import RankingBatch
from fairltr.errors import DataError
from fairltr.losses.linear import LinearDELTRObjective, fused_variant, masked_moments
from fairltr.losses.objective import ObjectiveTerms, deltr_objective

__all__ = ["DELTRSettings", "DELTRTraining", "TrainingInputs", "resolve_device"]


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` -> CUDA when present, else CPU."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)



@dataclass
class TrainingInputs:
    """What a linear ranker trains on (:meth:`DELTR._training_inputs`): per bucket the features
    (unstandardised, ``self.dtype``), the feature names, the standardisation and the group count."""

    xs: list[torch.Tensor]
    names: list[str]
    mean: torch.Tensor
    std: torch.Tensor
    n_groups: int
    owned: bool = False
    """True when ``xs`` are fit's own tensors (built from the frame): training may overwrite them."""


@dataclass(frozen=True)
class DELTRSettings:
    """A :class:`DELTR`'s parameters after validation, with the derived defaults filled in:
    what ``fit`` trains with. ``columns`` is the column contract (``protected`` folded in)."""

    gamma: float
    columns: RankingColumns
    l2: float
    tol: float
    max_iter: int
    lr: float


class DELTRTraining:
    """The training steps of the linear rankers (a mixin of :class:`~fairltr.DELTR`)."""

    def _check_fairness_signal(self, batches: RankingBatch | Sequence[RankingBatch], where: str | None,
                               settings: DELTRSettings) -> None:
        """With gamma > 0 the fairness term needs protected (group >= 1) and non-protected
        candidates, and the exposure losses a query holding both; else it is 0 everywhere.
        ``batches``: one padded batch or the length buckets of one table."""
        if settings.gamma == 0 or self.fairness_loss == "none":
            return
        if isinstance(batches, RankingBatch):
            batches = [batches]
        any_protected = any_unprotected = any_mixed = False
        for batch in batches:
            m = batch.mask.cpu()
            protected = batch.groups.cpu() >= 1
            has_p, has_u = (protected & m).any(dim=1), (~protected & m).any(dim=1)
            any_protected |= bool(has_p.any())
            any_unprotected |= bool(has_u.any())
            any_mixed |= bool((has_p & has_u).any())
        prefix = f"{where}: " if where else ""
        group = settings.columns.group
        advice = f"use gamma 0 or a different group column (--group; now {group!r})"
        useless = f"so the fairness term would be 0 everywhere and gamma={settings.gamma:g} would do nothing; {advice}"
        if not any_protected:
            raise DataError(f"{prefix}no protected candidate (group column {group!r} >= 1) in the "
                            f"training data, {useless}")
        if not any_unprotected:
            raise DataError(f"{prefix}every candidate is protected (group column {group!r} >= 1) in the "
                            f"training data, {useless}")
        if fused_variant(self.fairness_loss)[0] and not any_mixed:
            raise DataError(f"{prefix}no query has both protected and non-protected candidates (group column "
                            f"{group!r}), {useless}")

    def _training_inputs(self, batches: list[RankingBatch], columns: RankingColumns, names: list[str],
                         settings: DELTRSettings) -> TrainingInputs:
        """The features of ``batches`` in ``self.dtype`` (the group column dropped when colorblind),
        checked against ``names`` and for a fairness signal, with the standardisation over real
        candidates (scale 1 for a constant feature; mean 0, scale 1 without ``standardize``) and
        the number of groups (>= 2). Shared with :class:`~fairltr.PLRank`."""
        xs = [b.features.to(self.dtype) for b in batches]
        if self.colorblind and columns.group in names:
            keep = [i for i, name in enumerate(names) if name != columns.group]
            if not keep:
                raise DataError("no feature columns to train on after dropping the group column (colorblind)")
            xs, names = [x[..., keep] for x in xs], [names[i] for i in keep]
        n_features = xs[0].shape[-1]
        if not names or n_features != len(names):
            raise DataError(f"the batch has {n_features} feature(s) but {len(names)} feature name(s)")
        self._check_fairness_signal(batches, None, settings)
        if self.standardize:  # over real candidates; no copy of a large table (masked_moments)
            mean, std = masked_moments(xs, [b.mask for b in batches])
            std = torch.where(std > 0, std, torch.ones_like(std))
        else:
            mean = torch.zeros(n_features, dtype=self.dtype)
            std = torch.ones(n_features, dtype=self.dtype)
        real_groups = [b.groups[b.mask] for b in batches if bool(b.mask.any())]
        n_groups = max(2, max((int(gr.max()) + 1 for gr in real_groups), default=1))
        return TrainingInputs(xs=xs, names=names, mean=mean, std=std, n_groups=n_groups)

    def _initial_weights(self, inputs: TrainingInputs, gen: torch.Generator, device: torch.device) -> torch.Tensor:
        """w ~ 0.01 * N(0, 1) from the seeded generator, on ``device``, requiring a gradient."""
        n_features = len(inputs.names)
        return (0.01 * torch.randn(n_features, generator=gen, dtype=self.dtype)).to(device).requires_grad_(True)

    def _objective(self, batches: list[RankingBatch], inputs: TrainingInputs, w: torch.Tensor,
                   settings: DELTRSettings, device: torch.device) -> Callable[[], tuple[torch.Tensor, ObjectiveTerms]]:
        """``terms()`` -> (total + l2 * |w|^2, the objective's terms) at the current ``w``: the
        DELTR objective summed over the buckets holding a real candidate (standardised features
        on ``device``; a fused analytic-gradient objective, or autograd for a plugin loss).
        Releases ``inputs.xs`` as the tensors move."""
        gamma, l2 = settings.gamma, settings.l2
        n_groups, xs = inputs.n_groups, inputs.xs
        fused, variant = fused_variant(self.fairness_loss)
        # buckets without a real candidate contribute nothing (keep one so that the sum is defined)
        used = [i for i, b in enumerate(batches) if bool(b.mask.any())] or [0]
        parts = []  # per bucket: a fused objective, or the standardised tensors for autograd
        mean, std = inputs.mean.to(device), inputs.std.to(device)
        for i in used:
            b = batches[i]
            x = xs[i].to(device)
            xs[i] = None  # type: ignore[call-overload]  # release the (colorblind) copy early
            # a tensor nobody else holds (fit's own buckets, a dtype/device/colorblind copy) is
            # standardised in place; a caller's batch is copied once (elementwise: same values)
            mine = inputs.owned or x.data_ptr() != b.features.data_ptr()
            y, g, m = b.judgments.to(device, self.dtype), b.groups.to(device), b.mask.to(device)
            if fused:  # analytic gradient: one X w and one X^T g pass per evaluation
                parts.append(LinearDELTRObjective(x, y, g, m, gamma, variant=variant, reduce=self.reduce,
                                                  n_groups=n_groups, standardize=(mean, std), consume=mine))
            else:
                x = x if mine else x.clone()
                x.sub_(mean).div_(std).masked_fill_(~m.unsqueeze(-1), 0.0)
                parts.append((x, y, g, m))
            del x
        xs.clear()

        def bucket_terms(part) -> ObjectiveTerms:
            if fused:  # analytic gradient: one X w and one X^T g pass per evaluation
                return part(w)
            x, y, g, m = part  # a plugin fairness loss: autograd through the scores
            return deltr_objective(x @ w, y, g, m, gamma, fairness_loss=self.fairness_loss,
                                   reduce=self.reduce, n_groups=n_groups)

        def evaluate() -> ObjectiveTerms:
            t = bucket_terms(parts[0])
            for part in parts[1:]:  # the objective is a sum over queries: add the buckets' sums
                u = bucket_terms(part)
                t = ObjectiveTerms(t.total + u.total, t.listnet + u.listnet, t.exposure + u.exposure)
            return t

        if fused and len(parts) == 1:  # one bucket (e.g. equal-length queries): call the objective directly
            evaluate = functools.partial(parts[0], w)  # noqa: F811

        def terms() -> tuple[torch.Tensor, ObjectiveTerms]:
            t = evaluate()
            total = t.total + l2 * (w * w).sum() if l2 else t.total
            return total, t

        return terms

    def _optimizer_steps(self, w: torch.Tensor, terms: Callable[[], tuple[torch.Tensor, ObjectiveTerms]],
                         lr: float) -> tuple[Callable[[], dict[str, float]], Callable[[], dict[str, float]]]:
        """(step, final) for :func:`~fairltr.training_loop.run_training_loop`: ``step`` takes one
        L-BFGS (strong Wolfe line search) or Adam step and returns the terms at the weights before
        it; ``final`` the terms at the current weights."""
        if self.optimizer == "lbfgs":
            opt: torch.optim.Optimizer = torch.optim.LBFGS(
                [w], lr=lr, max_iter=1, max_eval=25, history_size=20, line_search_fn="strong_wolfe",
                tolerance_grad=0.0, tolerance_change=0.0,
            )
        else:
            opt = torch.optim.Adam([w], lr=lr)

        # The first closure call of every optimizer step is made at the current weights, so it
        # gives the objective after the previous iteration (line-search trials are not recorded).
        last: dict[str, torch.Tensor] = {}

        def closure():
            opt.zero_grad()
            total, t = terms()
            total.backward()
            if not last:
                last.update(total=total.detach(), listnet=t.listnet.detach(), exposure=t.exposure.detach())
            return total

        def recorded() -> dict[str, float]:
            return {"total": float(last["total"]), "listnet": float(last["listnet"]),
                    "exposure": float(last["exposure"])}

        def step() -> dict[str, float]:
            last.clear()
            opt.step(closure)
            return recorded()

        def final() -> dict[str, float]:
            last.clear()
            closure()  # objective at the final weights
            return recorded()

        return step, final
