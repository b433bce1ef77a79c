"""The built-in sweep methods, each declared once (see :mod:`fairltr.workflows.sweep_plugins`).

A ranking method is a :class:`~fairltr.workflows.sweep_declaration.RankingPlan`: its search space
(read from the loss registry, FA*IR's parameters or LightGBM's declared ranges) and the map from a
trial's values to a :class:`~fairltr.workflows.ranking.RankerSpec`; the trial itself is always
:func:`~fairltr.workflows.sweep.ranking_trial`. The trial builders live in
:mod:`fairltr.workflows.sweep_trials` (imported at the first trial), which never looks a method up
through :mod:`~fairltr.workflows.sweep_plugins`: the registry imports this module. To add a
method, add one ``register_sweep_method`` call here (or in your own package): the CLI choices, the
sweep workflow, the docs table and the comparison benchmark read it from the registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from fairltr.workflows.sweep_declaration import RankingContext, RankingPlan, SweepMethod, register_sweep_method

if TYPE_CHECKING:  # the declarations load no pandas or torch (``fairltr sweep --help`` lists the methods)
    from fairltr.workflows.ranking import FairParams, RankerSpec


def _trial(name: str):
    """The trial builder ``fairltr.workflows.sweep_trials.<name>``, imported at the first call."""
    def build(inputs: Any):
        from fairltr.workflows import sweep_trials

        return getattr(sweep_trials, name)(inputs)

    build.__name__ = build.__qualname__ = name
    return build


ranking_trial_from = _trial("ranking_trial_from")
plrank_trial_from = _trial("plrank_trial_from")
dpr_trial_from = _trial("dpr_trial_from")

__all__ = ["ranking_method"]

GBDT = {"lightgbm": "gbdt"}


def ranking_method(name: str, summary: str, plan: RankingPlan, *, searches: str, objectives: str | None = None,
                   requires: Mapping[str, str] | None = None) -> SweepMethod:
    """Declare and register a ranking sweep method (its trial is :func:`ranking_trial`)."""
    return register_sweep_method(SweepMethod(name, summary, ranking_trial_from, searches=searches,
                                             objectives=objectives, data="ranking", requires=requires or {},
                                             ranking=plan))


# ---------------------------------------------------------------------------------- spaces
def _loss_space(ctx: RankingContext):
    from fairltr.losses import available_losses, get_loss
    from tuning.space import loss_space

    if get_loss(ctx.loss).kind != "ranking":
        from fairltr.errors import ConfigError

        raise ConfigError(f"--loss {ctx.loss!r} is a {get_loss(ctx.loss).kind} loss; DELTR sweeps take a ranking "
                          f"loss: {available_losses('ranking')}")
    return loss_space(ctx.loss)


def _fair_space(ctx: RankingContext):
    from fairltr.fair.rerank import binary_group_codes
    from tuning.space import fair_space, protected_share

    binary_group_codes(ctx.train, ctx.columns.replace(group=ctx.columns.group))  # FA*IR: two categories, refused now

    return fair_space(protected_share(ctx.train, ctx.columns), ctx.p_range, ctx.alpha_range)


def _lambdamart_space(ctx: RankingContext):
    from fairltr.gbdt import LAMBDAMART_SPACE
    from tuning.space import SearchSpace

    return SearchSpace(LAMBDAMART_SPACE)


# ---------------------------------------------------------------------------------- settings
def _deltr(base: RankerSpec, values: Mapping[str, float], ctx: RankingContext) -> RankerSpec:
    from fairltr.losses import get_loss

    weight = get_loss(ctx.loss).weight_param
    return base.with_(gamma=float(values[weight.name]) if weight is not None else 0.0, fairness_loss=ctx.loss)


def _fair(values: Mapping[str, float]) -> FairParams:
    from fairltr.workflows.ranking import FairParams

    return FairParams(float(values["fair_p"]), float(values["fair_alpha"]))


def _lambdamart(base: RankerSpec, values: Mapping[str, float] | None = None) -> RankerSpec:
    from fairltr.gbdt import LAMBDAMART_SPACE

    names = {p.name for p in LAMBDAMART_SPACE}
    gbdt = base.gbdt.with_values({k: v for k, v in (values or {}).items() if k in names})
    return base.with_(ranker="lambdamart", gamma=0.0, gbdt=gbdt)


def _geyik_space(ctx: RankingContext):
    """``geyik_p``: the target share of the protected categories (>= 1) together, on FA*IR's
    ``fair_p`` range around their pooled training share."""
    from fairltr.losses import HyperParam
    from tuning.space import SearchSpace, fair_space, protected_share

    p = fair_space(protected_share(ctx.train, ctx.columns), ctx.p_range, ctx.alpha_range).params[0].param
    return SearchSpace((HyperParam("geyik_p", default=p.default, low=p.low, high=p.high,
                                   description="DetConstSort target share of the protected categories"),))


def _pool_mix(ctx: RankingContext, methods: str):
    """(categories, pooled training counts, protected mask: numeric value >= 1) of the group column."""
    import numpy as np
    import pandas as pd

    from fairltr.errors import ConfigError
    from fairltr.fair import category_codes

    codes, cats = category_codes(ctx.train, ctx.columns.group)
    counts = np.bincount(codes, minlength=len(cats)).astype(float)
    numeric = pd.to_numeric(pd.Series(cats), errors="coerce").to_numpy(dtype=float)
    if np.isnan(numeric).any():
        raise ConfigError(f"the {methods} sweep methods need a numeric group column (0 = non-protected, "
                          f">= 1 = protected categories); got categories {cats}")
    return cats, counts, numeric >= 1


def _geyik_target(ctx: RankingContext, share: float) -> tuple[tuple[object, float], ...]:
    """Target distribution: ``1 - share`` for category 0, ``share`` split over the protected
    categories (>= 1) in proportion to their pooled training counts."""
    import numpy as np

    cats, counts, prot = _pool_mix(ctx, "detconstsort")
    shares = np.where(prot, share * counts / max(counts[prot].sum(), 1.0), 0.0)
    shares[~prot] = (1.0 - share) * counts[~prot] / max(counts[~prot].sum(), 1.0)
    return tuple((c, float(v)) for c, v in zip(cats, shares))


def _detconstsort(base: RankerSpec, values: Mapping[str, float], ctx: RankingContext) -> RankerSpec:
    from fairltr.workflows.ranking import GeyikParams

    return base.with_(geyik_post=GeyikParams("detconstsort", _geyik_target(ctx, float(values["geyik_p"]))))


def _multinomial_space(ctx: RankingContext):
    """FA*IR's ``fair_p`` (the protected categories' total minimum share, around their pooled
    training share) and ``fair_alpha``, on any number of protected categories (>= 1)."""
    from tuning.space import fair_space, protected_share

    _pool_mix(ctx, "multinomial-fair")  # numeric categories, refused before any training
    return fair_space(protected_share(ctx.train, ctx.columns), ctx.p_range, ctx.alpha_range)


def _multinomial_shares(ctx: RankingContext, total: float) -> tuple[tuple[object, float], ...]:
    """Minimum shares: ``total`` split over the protected categories (>= 1) in proportion to their
    pooled training counts (the multinomial test's p_1..p_g, summing to ``total``)."""
    cats, counts, prot = _pool_mix(ctx, "multinomial-fair")
    n_prot = max(float(counts[prot].sum()), 1.0)
    return tuple((c, total * float(n) / n_prot) for c, n, is_p in zip(cats, counts, prot) if is_p and n > 0)


def _multinomial(base: RankerSpec, values: Mapping[str, float], ctx: RankingContext) -> RankerSpec:
    from fairltr.workflows.ranking import MultinomialParams

    return base.with_(gamma=0.0, multinomial_post=MultinomialParams(
        _multinomial_shares(ctx, float(values["fair_p"])), float(values["fair_alpha"])))


# ---------------------------------------------------------------------------------- methods
ranking_method("deltr", "DELTR (ListNet + the loss's exposure penalty)",
               RankingPlan(_loss_space, _deltr, uses_loss=True),
               searches="the `--loss`'s declared parameters (DELTR: `gamma`, log, with 0)")
ranking_method("fair-pre", "FA*IR pre-processing of the training lists, then ListNet (gamma 0)",
               RankingPlan(_fair_space, lambda base, v, ctx: base.with_(gamma=0.0, fair_pre=_fair(v))),
               searches="`fair_p` (around the protected share), `fair_alpha` (log)")
ranking_method("fair-post", "FA*IR post-processing of a ListNet (gamma 0) ranking, fitted once per fold",
               RankingPlan(_fair_space, lambda base, v, ctx: base.with_(gamma=0.0, fair_post=_fair(v)),
                           reuse_base=True),
               searches="`fair_p`, `fair_alpha`")
register_sweep_method(SweepMethod(
    "dpr", "bi-encoder (DPR) with the retrieval loss weighted by `alpha`; frozen document tower",
    dpr_trial_from, searches="the `--dpr-loss`'s `alpha`", objectives="mrr_at_100:max,mrc_at_5:max",
    data="parallel",
    options={"dpr_loss": "loss", "steps": "steps", "batch_size": "batch_size", "max_train_items": "max_train_items",
             "max_test_items": "max_test_items", "encoder": "encoder"}))
ranking_method("lambdamart", "LambdaMART (LightGBM lambdarank), no fairness term: where its settings land",
               RankingPlan(_lambdamart_space, lambda base, v, ctx: _lambdamart(base, v)),
               searches="`learning_rate` (log), `num_leaves`, `min_data_in_leaf` (log, rounded)", requires=GBDT)
ranking_method("lambdamart+fair", "FA*IR post-processing of LambdaMART scores (default settings, fitted once per fold)",
               RankingPlan(_fair_space, lambda base, v, ctx: _lambdamart(base).with_(fair_post=_fair(v)),
                           reuse_base=True),
               searches="`fair_p`, `fair_alpha`", requires=GBDT)
ranking_method("detconstsort", "Geyik et al.'s DetConstSort re-ranking of a ListNet (gamma 0) ranking, fitted once "
               "per fold", RankingPlan(_geyik_space, lambda base, v, ctx: _detconstsort(base.with_(gamma=0.0), v, ctx),
                                       reuse_base=True),
               searches="`geyik_p` (target share of the protected categories, split by their pool mix)")
ranking_method("lambdamart+detconstsort", "DetConstSort re-ranking of LambdaMART scores (default settings, fitted once "
               "per fold)", RankingPlan(_geyik_space, lambda base, v, ctx: _detconstsort(_lambdamart(base), v, ctx),
                                        reuse_base=True),
               searches="`geyik_p`", requires=GBDT)
ranking_method("multinomial-fair", "multinomial FA*IR post-processing (several protected categories) of a ListNet "
               "(gamma 0) ranking, fitted once per fold",
               RankingPlan(_multinomial_space, _multinomial, reuse_base=True),
               searches="`fair_p` (the protected categories' total minimum share, split by their pool mix), "
                        "`fair_alpha`")
register_sweep_method(SweepMethod(
    "plrank", "Plackett-Luce policy (PL-Rank gradient, Fair-PG-Rank squared disparity of expected exposure), "
    "evaluated on its mean-score ranking", plrank_trial_from,
    searches="the `plrank` policy loss's `lambda` (log, with 0)", data="ranking", evaluator="policy"))
