"""Plackett-Luce ranking policies (Fair-PG-Rank; PL-Rank), named in one place: the sampling, the
position weights and the gradient estimators (:mod:`fairltr.losses.pl_sampling`) and the
disparity of expected group exposure and the whole objective E[DCG] - lambda * D
(:mod:`fairltr.losses.pl_objective`). The math is stated in those two modules.

This module only re-exports (both import paths stay valid); it imports the two, neither imports
it, so there is no import circle. The block-size constants (``_BLOCK_ELEMENTS``,
``_MAX_PACKED_BITS``) are read where the code runs, in :mod:`fairltr.losses.pl_sampling`, and are
deliberately not re-exported here: patching a copy would change nothing.
"""

from __future__ import annotations

from fairltr.losses.pl_objective import (
    DISPARITIES, Disparity, PLGradientTerms, PLObjectiveTerms, disparity_gradient, group_means, pl_policy_gradient,
    pl_policy_objective, policy_disparity,
)
from fairltr.losses.pl_sampling import (  # noqa: F401 (the private names: benchmarks and tests use them)
    ESTIMATORS, BaselineCarry, Estimator, _argsort_rows, _kernel_seed, _kernels, _numpy64, check_cutoff, dcg_gains,
    dcg_weights, expected_dcg, plrank_gradient, plrank_sample_gradient, position_weights, ranks_of,
    reinforce_surrogate, sample_rankings, sampled_exposure,
)

__all__ = [
    "DISPARITIES", "ESTIMATORS", "Estimator", "PLObjectiveTerms", "PLGradientTerms", "Disparity",
    "sample_rankings", "dcg_weights", "ranks_of", "sampled_exposure", "expected_dcg", "group_means",
    "policy_disparity", "disparity_gradient", "plrank_gradient", "reinforce_surrogate", "pl_policy_objective",
    "pl_policy_gradient", "dcg_gains", "plrank_sample_gradient", "BaselineCarry", "check_cutoff",
    "position_weights",
]
