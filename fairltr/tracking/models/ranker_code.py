"""MLflow "models from code" definition of the fairltr ranker (see :mod:`fairltr.tracking.models.pyfunc`).

MLflow copies this file into the logged model and runs it on load; the weights come from the
model's ``weights`` artifact, never from a pickle."""

import mlflow.models

from fairltr.tracking.models.pyfunc import FairltrRanker

mlflow.models.set_model(FairltrRanker())
