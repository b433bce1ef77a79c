"""FA*IR (Zehlike et al., CIKM 2017), done exactly and fast (docs/spec.md §4).

* :func:`mtable`, :func:`fail_probability`, :func:`adjust_alpha`, :func:`is_fair`: the ranked
  group fairness test with an exact fail probability and exact multiple-testing adjustment.
* :func:`rerank`: FA*IR top-k re-ranking of every query of a table at once.
* :func:`rerank_geyik`: Geyik et al.'s (KDD 2019) DetGreedy, DetCons, DetRelaxed and DetConstSort
  for any number of categories and a target distribution (:func:`parse_target`).
* :func:`fair_postprocess`, :func:`fair_preprocess`, :func:`protected_share`: the DELTR paper's
  post- and pre-processing baselines.
"""

from fairltr.fair.baselines import fair_postprocess, fair_preprocess, protected_share
from fairltr.fair.geyik import GEYIK_METHODS, prefix_feasible, rerank_geyik
from fairltr.fair.mtable import (adjust_alpha, cached_mtable, check_params, clear_caches, fail_probability, is_fair,
                                 mtable)
from fairltr.fair.rerank import required_counts, rerank
from fairltr.fair.target import category_codes, parse_target, target_shares

__all__ = [
    "mtable", "cached_mtable", "fail_probability", "adjust_alpha", "is_fair", "check_params", "clear_caches",
    "rerank", "required_counts", "fair_postprocess", "fair_preprocess", "protected_share",
    "GEYIK_METHODS", "rerank_geyik", "prefix_feasible", "category_codes", "parse_target", "target_shares",
]
