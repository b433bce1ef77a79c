"""FA*IR (Zehlike et al., CIKM 2017), done exactly and fast (docs/spec.md §4).

* :func:`mtable`, :func:`fail_probability`, :func:`adjust_alpha`, :func:`is_fair`: the ranked
  group fairness test with an exact fail probability and exact multiple-testing adjustment.
* :func:`rerank`: FA*IR top-k re-ranking of every query of a table at once.
* :func:`fair_postprocess`, :func:`fair_preprocess`, :func:`protected_share`: the DELTR paper's
  post- and pre-processing baselines.
* :class:`ServingPolicy`, :func:`parse_policy`, :func:`apply_policy`: the post-processing a served
  model applies (``--serve-rerank fair:p=0.3,alpha=0.1``).
"""

from fairltr.fair.baselines import fair_postprocess, fair_preprocess, protected_share
from fairltr.fair.mtable import (adjust_alpha, cached_mtable, check_params, clear_caches, fail_probability, is_fair,
                                 mtable)
from fairltr.fair.policy import (GEYIK_METHODS, NO_POLICY, POLICY_METHODS, ServingPolicy, apply_policy, parse_policy,
                                  policy_from_params)
from fairltr.fair.rerank import required_counts, rerank

__all__ = [
    "mtable", "cached_mtable", "fail_probability", "adjust_alpha", "is_fair", "check_params", "clear_caches",
    "rerank", "required_counts", "fair_postprocess", "fair_preprocess", "protected_share", "ServingPolicy",
    "POLICY_METHODS", "GEYIK_METHODS", "NO_POLICY", "parse_policy", "policy_from_params", "apply_policy",
]
