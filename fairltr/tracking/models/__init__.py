"""Model formats: the registrable "fairltr ranker" pyfunc (``pyfunc``, ``ranker_code``), the
"fairltr retriever" package and pyfunc (``retriever*``), content digests (``digests``), verified
loading (``verify``), score-to-rank alignment (``ranks``) and ``mlflow models serve`` as a context
manager (``serving``). Imports :mod:`fairltr.tracking.runs` only, never evaluation or job logging.

The public names are re-exported lazily by :mod:`fairltr.tracking`.
"""
