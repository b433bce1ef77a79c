"""FA*IR (Zehlike et al., CIKM 2017), done exactly and fast (docs/spec.md §4).

* :func:`mtable`, :func:`fail_probability`, :func:`adjust_alpha`, :func:`is_fair`: the ranked
  group fairness test with an exact fail probability and exact multiple-testing adjustment.
* :func:`rerank`: FA*IR top-k re-ranking of every query of a table at once.
* :func:`fair_postprocess`, :func:`fair_preprocess`, :func:`protected_share`: the DELTR paper's
  post- and pre-processing baselines.
"""

from fairltr.fair.baselines import fair_postprocess, fair_preprocess, protected_share
from fairltr.fair.mtable import (adjust_alpha, cached_mtable, check_params, clear_caches, fail_probability, is_fair,
                                 mtable)
from fairltr.fair.rerank import required_counts, rerank

__all__ = [
    "mtable", "cached_mtable", "fail_probability", "adjust_alpha", "is_fair", "check_params", "clear_caches",
    "rerank", "required_counts", "fair_postprocess", "fair_preprocess", "protected_share",
]
