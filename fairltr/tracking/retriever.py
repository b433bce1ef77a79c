"""Kept for the models already logged: a retriever logged before the MLflow adapter was split into
sub-packages stores a ``retriever_code.py`` that imports ``FairltrRetriever`` from here, and MLflow
runs that file on ``mlflow.pyfunc.load_model``. New code imports :mod:`fairltr.tracking.models.retriever`."""

from fairltr.tracking.models.retriever import FairltrRetriever

__all__ = ["FairltrRetriever"]
