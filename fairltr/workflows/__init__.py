"""Workflows: one function per job, one typed config in, one result out.

The only place where the core, Lightning, MLflow and Optuna meet. The CLI, the MLproject, the
benchmarks, the sweep runners and the tests call these functions; heavy libraries are imported
inside them, so ``import fairltr.workflows`` stays as cheap as the core.

| job | config -> function -> result |
|---|---|
| train a ranker | :class:`TrainRankerConfig` -> :func:`train_ranker` -> :class:`TrainRankerResult` |
| train a Plackett-Luce policy | :class:`TrainPLRankConfig` -> :func:`train_plrank` -> :class:`TrainRankerResult` |
| evaluate a saved ranker | :class:`EvaluateRankerConfig` -> :func:`evaluate_ranker` |
| quickstart | :class:`QuickstartConfig` -> :func:`quickstart` |
| reproduce the DELTR paper | :class:`ReproduceConfig` -> :func:`reproduce_deltr` |
| train a retriever | :class:`TrainRetrieverConfig` -> :func:`train_retriever` |
| evaluate a retriever / BM25 | :class:`EvaluateRetrievalConfig` -> :func:`evaluate_retrieval` |
| evaluate a logged model | :class:`EvaluateModelConfig` -> :func:`evaluate_model` |
| promote a registered version | :class:`PromoteConfig` -> :func:`promote_model` |
| compare tracked runs | :class:`CompareRunsConfig` -> :func:`compare_runs` |
| re-ranking of a file (FA*IR, Geyik et al.) | :class:`RerankConfig` -> :func:`rerank_file` |
| a sweep (any method) | :class:`SweepConfig` (``tuning.SweepConfig``) -> :func:`run_sweep_job`; trials: :func:`ranking_trial`, :func:`dpr_trial` |
"""

from fairltr.lazy import lazy_exports, moved_modules

moved_modules(__name__, {"registry": "model_registry", "sweep_registry": "sweep_plugins"})  # the old names

__all__ = [
    "RankingSource", "TrackingOptions", "read_source", "OutputSet", "check_output_dir", "check_output_file",
    "FairParams", "LightningOptions", "RankerSpec", "RankerOutcome", "fit_ranker", "rank_with", "evaluate_ranked",
    "train_and_evaluate",
    "TrainRankerConfig", "TrainRankerResult", "train_ranker", "EvaluateRankerConfig", "EvaluateRankerResult",
    "evaluate_ranker", "QuickstartConfig", "QuickstartResult", "quickstart", "ReproduceConfig", "ReproduceResult",
    "reproduce_deltr", "RetrieverSpec", "TrainRetrieverConfig", "TrainRetrieverResult", "train_retriever",
    "EvaluateRetrievalConfig", "evaluate_retrieval", "RetrievalEvalData", "EvaluateModelConfig",
    "EvaluateModelResult", "evaluate_model", "PromoteConfig", "promote_model", "split_gates", "CompareRunsConfig",
    "compare_runs", "RerankConfig", "RerankResult", "rerank_file", "mtable_report", "RankingTrial", "DprTrial",
    "ranking_trial", "dpr_trial", "run_sweep_job", "SweepConfig", "RetrieverOutcome", "train_and_evaluate_retriever",
    "PLRankSpec", "TrainPLRankConfig", "fit_plrank", "plrank_outcome", "train_plrank", "GBDTParams",
    "RelevanceConventions",
]

lazy_exports(__name__, {
    **dict.fromkeys(["RerankConfig", "RerankResult", "mtable_report", "rerank_file"], "fairltr.workflows.fair"),
    **dict.fromkeys(["RankingSource", "TrackingOptions", "read_source"], "fairltr.workflows.options"),
    **dict.fromkeys(["OutputSet", "check_output_dir", "check_output_file"], "fairltr.workflows.outputs"),
    **dict.fromkeys(["QuickstartConfig", "QuickstartResult", "quickstart"], "fairltr.workflows.quickstart"),
    **dict.fromkeys(["FairParams", "LightningOptions", "RankerOutcome", "RankerSpec", "evaluate_ranked", "fit_ranker",
                     "rank_with", "train_and_evaluate"], "fairltr.workflows.ranking"),
    **dict.fromkeys(["CompareRunsConfig", "EvaluateModelConfig", "EvaluateModelResult", "PromoteConfig",
                     "RetrievalEvalData", "compare_runs", "evaluate_model", "promote_model", "split_gates"],
                    "fairltr.workflows.model_registry"),
    **dict.fromkeys(["ReproduceConfig", "ReproduceResult", "reproduce_deltr"], "fairltr.workflows.reproduce"),
    **dict.fromkeys(["EvaluateRetrievalConfig", "RetrieverSpec", "TrainRetrieverConfig", "TrainRetrieverResult",
                     "evaluate_retrieval", "train_retriever"], "fairltr.workflows.retriever"),
    **dict.fromkeys(["DprTrial", "RankingTrial", "dpr_trial", "ranking_trial", "run_sweep_job"],
                    "fairltr.workflows.sweep"),
    "SweepConfig": "tuning.sweep",  # the sweep's typed config (the Optuna adapter's), loaded on first use
    **dict.fromkeys(["RetrieverOutcome", "train_and_evaluate_retriever"], "fairltr.workflows.retriever"),
    **dict.fromkeys(["EvaluateRankerConfig", "EvaluateRankerResult", "TrainRankerConfig", "TrainRankerResult",
                     "evaluate_ranker", "train_ranker"], "fairltr.workflows.train_ranker"),
    **dict.fromkeys(["PLRankSpec", "TrainPLRankConfig", "fit_plrank", "plrank_outcome", "train_plrank"],
                    "fairltr.workflows.train_plrank"),
    # the core's config types a workflow config holds (RankerSpec.gbdt, the evaluations' conventions)
    "GBDTParams": "fairltr.gbdt", "RelevanceConventions": "fairltr.metrics.conventions",
})
