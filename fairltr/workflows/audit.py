"""The audit of a job, as the workflows see it: :mod:`fairltr.metrics.audit_jobs` (pure core, so
the MLflow adapter can read it too without importing a workflow), and what a command prints
under its metrics (the CLI reads the core through the workflows only)."""

from fairltr.gates import constant_model_warning
from fairltr.metrics.audit_jobs import *  # noqa: F401,F403
from fairltr.metrics.audit_jobs import __all__ as _JOBS
from fairltr.metrics.audit_jobs import audit_cutoff

__all__ = [*_JOBS, "constant_model_warning", "default_audit_cutoff"]


def default_audit_cutoff() -> int:
    """The audit's cut-off of a job evaluated at the metrics' default cut-offs (``DEFAULT_K``)."""
    from fairltr.metrics.evaluate import DEFAULT_K

    return audit_cutoff(DEFAULT_K)
