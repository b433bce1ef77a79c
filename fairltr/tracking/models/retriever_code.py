"""MLflow "models from code" definition of the fairltr retriever (see :mod:`fairltr.tracking.models.retriever`).

A model logged in that form (before the verifying loader) holds a copy of this file, which MLflow
runs on load; the towers and the document index come from the model's ``package`` artifact
(safetensors and JSON), never from a pickle. Models logged now keep a copy that MLflow does not
run: their MLmodel names :mod:`fairltr.tracking.models.verified_loader`."""

import mlflow.models

from fairltr.tracking.models.retriever import FairltrRetriever

mlflow.models.set_model(FairltrRetriever())
