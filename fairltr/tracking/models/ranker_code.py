"""MLflow "models from code" definition of the fairltr ranker (see :mod:`fairltr.tracking.models.pyfunc`).

A model logged in that form (before the verifying loader) holds a copy of this file, which MLflow
runs on load; the weights come from the model's ``weights`` artifact, never from a pickle. Models
logged now keep a copy that MLflow does not run: their MLmodel names
:mod:`fairltr.tracking.models.verified_loader`."""

import mlflow.models

from fairltr.tracking.models.pyfunc import FairltrRanker

mlflow.models.set_model(FairltrRanker())
