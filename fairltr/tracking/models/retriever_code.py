"""MLflow "models from code" definition of the fairltr retriever (see :mod:`fairltr.tracking.models.retriever`).

MLflow copies this file into the logged model and runs it on load; the towers and the document
index come from the model's ``package`` artifact (safetensors and JSON), never from a pickle."""

import mlflow.models

from fairltr.tracking.models.retriever import FairltrRetriever

mlflow.models.set_model(FairltrRetriever())
