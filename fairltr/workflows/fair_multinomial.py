"""``fairltr rerank --method fair --p "A=0.2,B=0.1"``: multinomial FA*IR on a group column with
several protected categories (:func:`fairltr.fair.rerank_multinomial`). A plain float ``--p`` stays
binomial FA*IR (:func:`fairltr.workflows.fair.rerank_file`); a ``category=share`` list on a group
with only two categories is refused (that is the binomial test: give the float)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fairltr.errors import ConfigError
from fairltr.fair.builtin_rerankers import is_share_list  # one reading of FA*IR's p

if TYPE_CHECKING:
    from fairltr.workflows.rerank_tables import RerankConfig, RerankResult

__all__ = ["is_share_list", "rerank_multinomial_file"]


def _check_two(categories: list, shares: dict, group: str) -> None:
    if len(categories) <= 2:
        shown = ", ".join(str(c) for c in categories)
        raise ConfigError(f"--p {','.join(f'{c}={v:g}' for c, v in shares.items())!r}: group column {group!r} has "
                          f"{len(categories)} categories ({shown}); that is binomial FA*IR: give --p as a plain "
                          "number, the protected share (values >= 1 are protected), e.g. --p 0.3")
    if len(shares) >= len(categories):
        raise ConfigError(f"--p names every category of group column {group!r} ({len(categories)}); leave at least "
                          "one non-protected category out of --p")


def rerank_multinomial_file(cfg: RerankConfig) -> RerankResult:
    """Check ``p`` (category=share list), the output path and the group column, then re-rank every
    query with multinomial FA*IR and write atomically. ``before`` / ``after``: each category's
    share of the top k (k = --k, or 10), ``target``: the protected categories' minimum shares."""
    from fairltr.data import numeric_column, query_codes, rank_within_query
    from fairltr.fair import check_multinomial_params, parse_min_shares
    from fairltr.fair.rerankers import get_reranker
    from fairltr.fair.target import category_codes
    from fairltr.io import write_table
    from fairltr.workflows.rerank_tables import RerankResult, read_category_table, top_k_shares

    c = cfg.columns
    shares = parse_min_shares(str(cfg.p))
    check_multinomial_params(cfg.k, tuple(shares.values()), cfg.alpha)
    if c.group is None:
        raise ConfigError("multinomial FA*IR (--p 'A=0.2,B=0.1') needs a --group column")
    if len(c.groups) > 1:
        raise ConfigError(f"--method fair re-ranks on one group attribute; got {len(c.groups)} ({', '.join(c.groups)})")
    df = read_category_table(cfg)  # categories: any values
    _, cats = category_codes(df, c.group)
    _check_two(cats, shares, c.group)
    df[cfg.scores_col] = numeric_column(df, cfg.scores_col, query=c.query)
    k_show = cfg.k or 10
    label = f"share in top {k_show}"
    codes, _ = query_codes(df, c.query)
    before = top_k_shares(df[c.group], rank_within_query(codes, df[cfg.scores_col].to_numpy(dtype=float)),
                           k_show, label)
    out = get_reranker(cfg.method).run(df, cfg.scores_col, p=shares, k=cfg.k, alpha=cfg.alpha, adjust=cfg.adjust,
                                       columns=c.replace(judgment=None, item=None))  # the declared FA*IR
    after = top_k_shares(out[c.group], out["rank"].to_numpy(), k_show, label)
    write_table(out, cfg.out_path)
    feasible = out.groupby(c.query, sort=False)["fair_feasible"].first()
    minimum = {key: float(shares.get(key.split(": ", 1)[1], float("nan"))) for key in before}
    return RerankResult(len(feasible), int((~feasible).sum()), before, after, len(out), cfg.out_path, "fair",
                        minimum)
