"""What a job logs into its run: a trained ranker (``ranker_logging``), a trained retriever
(``retrieval_logging``) and a monitoring check (``monitoring``). The top of the adapter's own
floors: composes runs, model formats and evaluation; none of those imports it.

The public names are re-exported lazily by :mod:`fairltr.tracking`.
"""
