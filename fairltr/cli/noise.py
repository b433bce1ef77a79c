"""Third-party noise, silenced inside the ``fairltr`` command (``--verbose`` brings it back).

MLflow (INFO lines, "View run" URLs, artifact progress bars), Lightning (accelerator summary,
"Tip" lines, eval-mode reports), Optuna (one INFO line per trial, experimental warnings),
transformers (weight-loading reports) and their deprecation warnings are not the user's
business when a fairltr command runs; fairltr's own progress and results are printed as usual.
Library users configure logging themselves: this applies to the console script only.
"""

from __future__ import annotations

import logging
import os
import warnings

__all__ = ["quiet_third_party", "NOISY_LOGGERS"]

NOISY_LOGGERS = ("mlflow", "alembic", "lightning", "lightning.pytorch", "lightning.fabric", "pytorch_lightning",
                 "lightning_utilities", "optuna", "transformers", "huggingface_hub", "urllib3", "torch.distributed",
                 "sentence_transformers", "bm25s")
_ENV = {
    "MLFLOW_LOGGING_LEVEL": "WARNING",
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "OPTUNA_DISABLE_EXPERIMENTAL_WARNING": "1",
}
_NOISY_MODULES = r"(mlflow|lightning|lightning_fabric|pytorch_lightning|lightning_utilities|optuna|optuna_integration|" \
                 r"transformers|huggingface_hub|torch|sqlalchemy|alembic|pandas|pyarrow|bm25s)(\..*)?"


def quiet_third_party(verbose: bool = False) -> None:
    """Set quiet defaults (environment, loggers, warning filters) unless ``verbose``; values
    the user set in the environment are kept."""
    if verbose:
        os.environ["FAIRLTR_VERBOSE"] = "1"  # read by code that sets a library's verbosity itself (Optuna)
        return
    for key, value in _ENV.items():
        os.environ.setdefault(key, value)
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    for category in (DeprecationWarning, FutureWarning, PendingDeprecationWarning, UserWarning, RuntimeWarning):
        warnings.filterwarnings("ignore", category=category, module=_NOISY_MODULES)
    warnings.filterwarnings("ignore", message=r".*(Experimental|experimental).*")
    import sys

    if "huggingface_hub" in sys.modules:  # imported before us: its progress-bar switch was read already
        sys.modules["huggingface_hub"].utils.disable_progress_bars()
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.disable_progress_bar()
    if "pandas" in sys.modules:  # Pandas4Warning (pandas >= 3) anywhere; raised from MLflow it is a
        # DeprecationWarning of a noisy module (above) anyway, so pandas is not imported for it (start-up time)
        try:
            from pandas.errors import Pandas4Warning

            warnings.filterwarnings("ignore", category=Pandas4Warning)
        except ImportError:
            pass
