"""The audit of a job, as the workflows see it: :mod:`fairltr.metrics.audit_jobs` (pure core, so
the MLflow adapter can read it too without importing a workflow)."""

from fairltr.metrics.audit_jobs import *  # noqa: F401,F403
from fairltr.metrics.audit_jobs import __all__  # noqa: F401
