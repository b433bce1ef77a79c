"""Model formats: the registrable "fairltr ranker" pyfunc (``pyfunc``, ``ranker_code``), the
"fairltr retriever" package and pyfunc (``retriever*``), content digests (``digests``), verified
loading in fairltr's process (``verify``) and where MLflow loads a model (``verified_loader``, the
MLmodel ``loader_module``; ``loader_form`` logs models in that form with their staged wheel), the
REST body guard of ``mlflow models serve`` (``request_guard``), the decision log of served rankings
(``decision_log`` with its Parquet and PostgreSQL stores), score-to-rank alignment (``ranks``) and
``mlflow models serve`` as a context manager (``serving``). Imports :mod:`fairltr.tracking.runs`
only, never evaluation or job logging.

The public names are re-exported lazily by :mod:`fairltr.tracking`.
"""
