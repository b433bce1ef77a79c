"""FA*IR (Zehlike et al., CIKM 2017), done exactly and fast (docs/spec.md §4).

* :func:`mtable`, :func:`fail_probability`, :func:`adjust_alpha`, :func:`is_fair`: the ranked
  group fairness test with an exact fail probability and exact multiple-testing adjustment.
* :func:`rerank`: FA*IR top-k re-ranking of every query of a table at once.
* :func:`fair_postprocess`, :func:`fair_preprocess`, :func:`protected_share`: the DELTR paper's
  post- and pre-processing baselines.
* :func:`rerank_geyik`: Geyik et al.'s multi-group re-rankers (DetGreedy, DetCons, DetRelaxed,
  DetConstSort) toward a target category mix.
* :func:`multinomial_mtable`, :func:`multinomial_fail_probability`, :func:`multinomial_adjust_alpha`,
  :func:`multinomial_is_fair`, :func:`rerank_multinomial`: FA*IR for several protected groups
  (minimum shares ``A=0.2,B=0.1``), exact, reducing to the binomial test at one group.
* :class:`Reranker`, :data:`RERANKERS`: the re-ranker declarations (built-ins and the
  ``fairltr.rerankers`` entry points) every CLI choice, policy and dispatch reads.
* :class:`ServingPolicy`, :func:`parse_policy`, :func:`apply_policy`: the post-processing a served
  model applies (``--serve-rerank fair:p=0.3,alpha=0.1``).

Exports are lazy (:mod:`fairltr.lazy`): the mtable needs neither torch nor pandas.
"""

from fairltr.lazy import lazy_exports

__all__ = [
    "mtable", "cached_mtable", "fail_probability", "adjust_alpha", "is_fair", "check_params", "clear_caches",
    "rerank", "required_counts", "fair_postprocess", "fair_preprocess", "protected_share",
    "GEYIK_METHODS", "rerank_geyik", "prefix_feasible", "geyik_order", "category_codes", "parse_target", "target_shares",
    "ServingPolicy", "POLICY_METHODS", "NO_POLICY", "parse_policy", "policy_from_params", "apply_policy",
    "OVERRIDE_FIELDS", "parse_overrides", "overrides_text",
    "check_multinomial_params", "multinomial_mtable", "multinomial_fail_probability", "multinomial_adjust_alpha",
    "multinomial_is_fair", "first_violation", "clear_multinomial_caches", "rerank_multinomial", "parse_min_shares",
    "protected_codes", "Reranker", "RERANKERS", "reranker_names", "get_reranker",
]

lazy_exports(__name__, {
    **dict.fromkeys(["mtable", "cached_mtable", "fail_probability", "adjust_alpha", "is_fair", "check_params",
                     "clear_caches"], "fairltr.fair.mtable"),
    **dict.fromkeys(["rerank", "required_counts"], "fairltr.fair.rerank"),
    **dict.fromkeys(["fair_postprocess", "fair_preprocess", "protected_share"], "fairltr.fair.baselines"),
    **dict.fromkeys(["GEYIK_METHODS", "rerank_geyik", "prefix_feasible"], "fairltr.fair.geyik"),
    "geyik_order": "fairltr.fair.geyik_one",
    **dict.fromkeys(["category_codes", "parse_target", "target_shares"], "fairltr.fair.target"),
    **dict.fromkeys(["ServingPolicy", "POLICY_METHODS", "NO_POLICY", "parse_policy", "policy_from_params",
                     "apply_policy", "OVERRIDE_FIELDS", "parse_overrides", "overrides_text"], "fairltr.fair.policy"),
    **dict.fromkeys(["check_multinomial_params", "multinomial_mtable", "multinomial_fail_probability",
                     "multinomial_adjust_alpha", "multinomial_is_fair", "first_violation", "clear_multinomial_caches"],
                    "fairltr.fair.multinomial"),
    **dict.fromkeys(["rerank_multinomial", "parse_min_shares", "protected_codes"], "fairltr.fair.multinomial_rerank"),
    **dict.fromkeys(["Reranker", "RERANKERS", "reranker_names", "get_reranker"], "fairltr.fair.rerankers"),
})
