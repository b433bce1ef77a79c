"""Kept for the models already logged: a ranker logged before the MLflow adapter was split into
sub-packages stores a ``ranker_code.py`` that imports ``FairltrRanker`` from here, and MLflow runs
that file on ``mlflow.pyfunc.load_model``. New code imports :mod:`fairltr.tracking.models.pyfunc`."""

from fairltr.tracking.models.pyfunc import FairltrRanker

__all__ = ["FairltrRanker"]
