"""The workflows and the CLI import their adapters lazily: importing them, and `fairltr --help`,
load none of MLflow, Lightning, Optuna or transformers (the layering of docs/architecture.md; the
static import rules are import-linter's contracts in pyproject.toml)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("mlflow", "lightning", "pytorch_lightning", "optuna", "transformers")

PROBE = """
import json, sys
from click.testing import CliRunner
import fairltr, fairltr.workflows, fairltr.cli
result = CliRunner().invoke(fairltr.cli.cli, ["--help"])
print(json.dumps({"exit": result.exit_code, "help": result.output[:200],
                  "loaded": sorted(m for m in sys.modules if m.split(".")[0] in %r)}))
""" % (HEAVY,)


def test_import_and_help_load_no_adapter_library():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=True)
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    assert probe["exit"] == 0 and "Usage" in probe["help"]
    assert probe["loaded"] == [], probe["loaded"]


@pytest.mark.slow  # imports MLflow (seconds to a minute on a loaded machine)
def test_the_probe_sees_a_loaded_library():
    """The check above can fail: importing an adapter that needs MLflow shows up in the probe."""
    probe = PROBE.replace("import fairltr, fairltr.workflows, fairltr.cli",
                          "import fairltr, fairltr.workflows, fairltr.cli, fairltr.tracking.models.pyfunc")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True)
    assert "mlflow" in json.loads(out.stdout.strip().splitlines()[-1])["loaded"]
