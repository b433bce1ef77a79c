"""Evaluation: the ``fair_ranking`` and ``fair_retrieval`` evaluator plugins (``evaluator``,
``retrieval_evaluator``), the user's ``extra_metrics`` and ``custom_artifacts`` (``extras``), how
result metrics are logged (``result_metrics``), figures (``plots``), HTML/JSON reports
(``report``, ``retrieval_report``) and the comparison of runs (``compare``). Imports
:mod:`fairltr.tracking.runs` and :mod:`fairltr.tracking.models`, never job logging.

The public names are re-exported lazily by :mod:`fairltr.tracking`.
"""
