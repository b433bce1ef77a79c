"""FA*IR (Zehlike et al., CIKM 2017), done exactly and fast (docs/spec.md §4).

* :func:`mtable`, :func:`fail_probability`, :func:`adjust_alpha`, :func:`is_fair`: the ranked
  group fairness test with an exact fail probability and exact multiple-testing adjustment.
* :func:`rerank`: FA*IR top-k re-ranking of every query of a table at once.
* :func:`fair_postprocess`, :func:`fair_preprocess`, :func:`protected_share`: the DELTR paper's
  post- and pre-processing baselines.

Exports are lazy (:mod:`fairltr.lazy`): the mtable needs neither torch nor pandas.
"""

from fairltr.lazy import lazy_exports

__all__ = [
    "mtable", "cached_mtable", "fail_probability", "adjust_alpha", "is_fair", "check_params", "clear_caches",
    "rerank", "required_counts", "fair_postprocess", "fair_preprocess", "protected_share",
]

lazy_exports(__name__, {
    **dict.fromkeys(["mtable", "cached_mtable", "fail_probability", "adjust_alpha", "is_fair", "check_params",
                     "clear_caches"], "fairltr.fair.mtable"),
    **dict.fromkeys(["rerank", "required_counts"], "fairltr.fair.rerank"),
    **dict.fromkeys(["fair_postprocess", "fair_preprocess", "protected_share"], "fairltr.fair.baselines"),
})
