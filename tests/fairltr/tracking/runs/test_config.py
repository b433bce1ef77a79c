"""fairltr.tracking.runs.config: MLflow's registration prints follow the mlflow logger's level."""

from __future__ import annotations

import logging
import sys

import pytest

from fairltr.tracking.runs.config import registry_prints_follow_log_level


@pytest.fixture
def mlflow_logger_level():
    logger = logging.getLogger("mlflow")
    before = logger.level
    yield logger.setLevel
    logger.setLevel(before)


def test_prints_shown_at_info_held_when_quiet(mlflow_logger_level, capsys):
    mlflow_logger_level(logging.INFO)
    with registry_prints_follow_log_level():
        print("Successfully registered model 'a'.", file=sys.stderr)
    assert "Successfully registered model 'a'." in capsys.readouterr().err
    mlflow_logger_level(logging.ERROR)  # what the fairltr command sets without --verbose
    with registry_prints_follow_log_level():
        print("Successfully registered model 'b'.", file=sys.stderr)
        print("stdout is not touched")
    out = capsys.readouterr()
    assert out.err == "" and out.out == "stdout is not touched\n"


def test_held_lines_are_written_out_when_registration_fails(mlflow_logger_level, capsys):
    mlflow_logger_level(logging.ERROR)
    with pytest.raises(RuntimeError, match="store down"):
        with registry_prints_follow_log_level():
            print("Registered model 'c' already exists.", file=sys.stderr)
            raise RuntimeError("store down")
    assert "Registered model 'c' already exists." in capsys.readouterr().err
