"""The PLRank estimator: a Plackett-Luce ranking policy over a linear scorer, trained for
E[DCG] - lambda * D(pi) (Fair-PG-Rank, Singh & Joachims 2019; PL-Rank, Oosterhuis 2021/2022).

The scorer is linear (s = ((x - mean) / scale) @ w), as DELTR's: :class:`PLRank` is a
:class:`~fairltr.linear_ranker.LinearRanker` (prediction, ranking, persistence), a sibling of
:class:`~fairltr.DELTR`, with its own parameters and training loop. Each iteration samples ``samples`` rankings per
query of the current policy (Gumbel trick, every query at once), estimates E[DCG], the expected
exposure and the disparity, and takes one Adam (or SGD) step along the PL-Rank (or REINFORCE)
gradient estimate (:mod:`fairltr.losses.plackett_luce`). ``predict`` / ``rank`` are the policy's
mean scores: the deterministic ranking by decreasing score, the policy's most probable ranking.
Model files carry the format marker ``fairltr.PLRank`` (JSON or safetensors, never pickle).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Callable

import torch

from fairltr.buckets import BucketedBatch
from fairltr.columns import DEFAULT_COLUMNS, RankingColumns
from fairltr.errors import ConfigError
from fairltr.linear_ranker import LinearRanker
from fairltr.losses.builtin import LAMBDA
from fairltr.losses.merit import check_merits
from fairltr.buckets import split_batch
from fairltr.losses.plackett_luce import DISPARITIES, ESTIMATORS, BaselineCarry, check_cutoff, pl_policy_gradient
from fairltr.model_file import PARAM_KINDS as _DELTR_PARAM_KINDS
from fairltr.ranker_params import OptimiserChoices
from fairltr.training_loop import LoopLabels, run_training_loop

__all__ = ["PLRank", "PLRankSettings", "PL_DEFAULT_MAX_ITER", "PL_DEFAULT_LR", "PL_OPTIMIZERS", "PL_MAX_PADDING"]

PL_OPTIMIZERS = ("adam", "sgd")
PL_DEFAULT_MAX_ITER = 300
PL_DEFAULT_LR = {"adam": 0.05, "sgd": 0.01}
PL_MAX_PADDING = 1.25
"""Length buckets for training: padded cells <= 1.25 x rows (DELTR's fit uses 2): a sampled
ranking costs per padded slot (the keys and the sort), so tighter buckets pay for their calls."""


@dataclass(frozen=True)
class PLRankSettings:
    """A :class:`PLRank`'s validated parameters (what ``fit`` trains with)."""

    lam: float
    samples: int
    cutoff: int | None
    columns: RankingColumns
    l2: float
    tol: float
    max_iter: int
    lr: float

    @property
    def gamma(self) -> float:
        """The fairness weight under DELTR's name (shared checks read ``settings.gamma``)."""
        return self.lam


class PLRank(LinearRanker):
    """A Plackett-Luce policy with a linear scoring function, trained by policy gradient.

    Objective (maximised, summed over queries): E_pi[DCG] - ``lam`` * D(pi), with D the group
    disparity of expected exposure ``disparity`` (``"squared"``: (a_0 - a_p)^2; ``"hinge"``:
    max(0, a_0 - a_p)), where a_p is group p's mean expected exposure, or with ``merit=True``
    its exposure per unit of merit (mean judgment; merit-proportional exposure, which needs
    judgments >= 0); ``reduce`` over protected groups p >= 1 (max or mean). ``samples``
    rankings per query and iteration; ``cutoff`` K: DCG@K and exposure 0 past position K (the
    authors' ``--cutoff``; None or 0: the whole ranking); ``estimator`` ``"plrank"`` (PL-Rank-2
    with the position baseline, docs/plrank.md), ``"plrank_plain"`` (PL-Rank-2 as published) or
    ``"reinforce"`` (with a leave-one-out baseline). Columns, features, ``colorblind``, ``standardize``,
    ``l2``, ``seed``, ``device`` and ``dtype`` mean what they mean for :class:`~fairltr.DELTR`.

    Fitted attributes are DELTR's; each ``history_`` record is ``iteration``, ``total``
    (the sampled objective), ``dcg`` (sum over queries of E[DCG]) and ``disparity`` (sum of D).
    """

    _FILE_KIND = "PLRank"
    _OPTIMISERS = OptimiserChoices(names=PL_OPTIMIZERS, max_iter={name: PL_DEFAULT_MAX_ITER for name in PL_OPTIMIZERS},
                                   lr=PL_DEFAULT_LR)

    def __init__(
        self,
        lam: float = LAMBDA.default,
        samples: int = 16,
        cutoff: int | None = None,
        estimator: str = "plrank",
        disparity: str = "squared",
        merit: bool = False,
        reduce: str = "max",
        protected: str = DEFAULT_COLUMNS.group,
        colorblind: bool = False,
        standardize: bool = True,
        l2: float = 0.0,
        optimizer: str = "adam",
        max_iter: int | None = None,
        lr: float | None = None,
        tol: float = 0.0,
        seed: int = 0,
        device: str = "auto",
        dtype: torch.dtype = torch.float64,
        columns: RankingColumns | None = None,
    ) -> None:
        self.lam = lam
        self.samples = samples
        self.cutoff = cutoff
        self.estimator = estimator
        self.disparity = disparity
        self.merit = merit
        self._store_linear_params(protected=protected, colorblind=colorblind, standardize=standardize, l2=l2,
                                  optimizer=optimizer, max_iter=max_iter, lr=lr, tol=tol, reduce=reduce, seed=seed,
                                  device=device, dtype=dtype, columns=columns)

    # the registry's name of this method's loss (run params, tags)
    fairness_loss = "plrank"

    def settings(self) -> PLRankSettings:  # type: ignore[override]
        """Validate the parameters; every problem is a :class:`ConfigError` naming the allowed values."""
        lam = LAMBDA.validate(self.lam)
        if isinstance(self.samples, bool) or not isinstance(self.samples, numbers.Integral) or self.samples < 1:
            raise ConfigError(f"samples must be an integer >= 1, got {self.samples!r}")
        for name, allowed in (("estimator", ESTIMATORS), ("disparity", DISPARITIES)):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name} must be one of {list(allowed)}, got {getattr(self, name)!r}")
        if not isinstance(self.merit, bool):
            raise ConfigError(f"merit must be True or False, got {self.merit!r}")
        # 0 is how a model file stores "no cut-off" (its params are typed: an integer)
        cutoff = None if self.cutoff is None or (self.cutoff == 0 and not isinstance(self.cutoff, bool)) \
            else check_cutoff(self.cutoff)
        shared = self._linear_params()  # columns, l2, tol, max_iter, lr, optimizer, reduce: fairltr.ranker_params
        return PLRankSettings(lam=lam, samples=int(self.samples), cutoff=cutoff, columns=shared.columns, l2=shared.l2,
                              tol=shared.tol, max_iter=shared.max_iter, lr=shared.lr)

    def effective_params(self) -> dict[str, Any]:
        """The validated parameters as a model file stores them and MLflow logs them (JSON-serialisable)."""
        s = self.settings()
        return {
            "lam": s.lam, "samples": s.samples, "cutoff": s.cutoff or 0, "estimator": self.estimator, "disparity": self.disparity,
            "merit": self.merit, "reduce": self.reduce, "protected": s.columns.group, "colorblind": self.colorblind,
            "standardize": self.standardize, "l2": s.l2, "optimizer": self.optimizer, "max_iter": s.max_iter,
            "lr": s.lr, "tol": s.tol, "seed": self.seed, "device": str(self.device),
            "dtype": str(self.dtype).replace("torch.", ""),
        }

    def describe(self, title: str | None = None) -> str:
        """``PLRank, lambda=10, squared disparity, 16 samples, plrank gradient``, without what
        ``title`` already says (the words of a run's report and version description)."""
        words = ["PLRank"]
        if not title or f"lambda={self.lam:g}" not in title:
            words.append(f"lambda={self.lam:g}")
        words.append(f"{self.disparity} disparity" + (" per merit" if self.merit else ""))
        words.append(f"{self.samples} samples, {self.estimator} gradient")
        if self.colorblind and not (title and "colorblind" in title):
            words.append("colorblind")
        return ", ".join(words)

    # ------------------------------------------------------------------ training
    def _check_fairness_signal(self, batches, where, settings) -> None:  # type: ignore[override]
        if self.merit:
            for b in [batches] if not isinstance(batches, (list, tuple)) else batches:
                check_merits(b.judgments, b.mask)
        super()._check_fairness_signal(batches, where, settings)

    def _fit_buckets(  # type: ignore[override]
        self,
        buckets: BucketedBatch,
        columns: RankingColumns,
        settings: PLRankSettings,
        names: list[str],
        callback: Callable[[int, dict[str, float]], None] | None,
        progress: bool,
    ) -> "PLRank":
        """Policy-gradient steps over every length bucket at once per iteration; sets the fitted state."""
        device = self._device()
        gen = torch.Generator().manual_seed(self.seed)
        batches = [part for b in buckets.batches if bool(b.mask.any())
                   for part in split_batch(b, PL_MAX_PADDING).batches] or list(buckets.batches[:1])
        inputs = self._training_inputs(batches, columns, names, settings)
        parts = []
        for x, b in zip(inputs.xs, batches):
            xn = ((x - inputs.mean) / inputs.std).masked_fill(~b.mask.unsqueeze(-1), 0.0).to(device)
            parts.append((xn, b.judgments.to(device, self.dtype), b.groups.to(device), b.mask.to(device)))
        inputs.xs.clear()
        w = self._initial_weights(inputs, gen, device)
        opt: torch.optim.Optimizer = (torch.optim.Adam([w], lr=settings.lr) if self.optimizer == "adam"
                                      else torch.optim.SGD([w], lr=settings.lr))
        carries = [BaselineCarry() for _ in parts]  # the baseline's carried part, one per bucket

        def step_terms() -> tuple[torch.Tensor, dict[str, float]]:
            """(the ascent direction d/dw of the sampled objective, its terms): X^T of the score
            gradient of each bucket, without autograd (the scorer is linear)."""
            grad_w = torch.zeros_like(w)
            total = dcg = disp = 0.0
            wd = w.detach()
            for (x, y, g, m), carry in zip(parts, carries):
                t = pl_policy_gradient(x @ wd, y, g, m, lam=settings.lam, n_samples=settings.samples,
                                       estimator=self.estimator, disparity=self.disparity, merit=self.merit,
                                       reduce=self.reduce, n_groups=inputs.n_groups, generator=gen,
                                       cutoff=settings.cutoff, carry=carry)
                grad_w += t.grad.to(x.dtype).reshape(1, -1).matmul(x.reshape(-1, x.shape[-1]))[0]
                total, dcg, disp = total + float(t.total), dcg + float(t.dcg), disp + float(t.disparity)
            if settings.l2:
                grad_w -= 2.0 * settings.l2 * wd
                total -= settings.l2 * float((wd ** 2).sum())
            return grad_w, {"total": total, "dcg": dcg, "disparity": disp}

        def step() -> dict[str, float]:
            ascent, terms = step_terms()
            w.grad = -ascent  # the optimisers minimise
            opt.step()
            return terms

        labels = LoopLabels(model="PLRank", weight="lambda", desc=f"PLRank lambda={settings.lam:g}",
                            postfix="objective", finite=("total", "dcg", "disparity"))
        # a sampled objective: tol=0 never stops early; final() samples the objective at the returned weights
        n_iter, history = run_training_loop(step, lambda: step_terms()[1], max_iter=settings.max_iter,
                                            tol=settings.tol, labels=labels, callback=callback, progress=progress,
                                            exact_stall_stops=False)
        return self.set_fitted_state(columns=columns, feature_names=inputs.names, weights=w.detach().cpu().numpy(),
                                     mean=inputs.mean.cpu().numpy(), scale=inputs.std.cpu().numpy(), n_iter=n_iter,
                                     history=history)

PLRank._PARAM_KINDS = {
    "lam": "number", "samples": "int", "cutoff": "int", "estimator": "str", "disparity": "str", "merit": "bool", "reduce": "str",
    **{k: v for k, v in _DELTR_PARAM_KINDS.items() if k not in ("gamma", "fairness_loss", "reduce")},
}
PLRank._HISTORY_KEYS = frozenset({"iteration", "total", "dcg", "disparity"})
# the registry names the weight "lambda" (a Python keyword, so the parameter is ``lam``): readers of
# the declared hyper-parameters (``getattr(model, "lambda")``, e.g. MLflow's run params) see lam
setattr(PLRank, "lambda", property(lambda self: self.lam, doc="The fairness weight ``lam`` (the registry's name)."))
