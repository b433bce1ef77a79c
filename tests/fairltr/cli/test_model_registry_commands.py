"""``fairltr verify-alias`` / ``fairltr webhook-receiver`` as commands: usage and connection
errors exit 2 with one line and no traceback (1 is reserved for a FAIL); the receiver refuses a
non-loopback host unless told; (slow) the real console script registers its webhook on a real
server, records a FAIL for an alias moved with ``MlflowClient``, logs one line per event and
stops on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from fairltr.cli import cli

SECRET = "cli-test-secret-" + uuid.uuid4().hex


def _run(*args: str, env: dict | None = None):
    return CliRunner().invoke(cli, list(args), env=env)


def _one_error_line(result) -> str:
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]


@pytest.mark.parametrize("args, env, words", [
    ([], None, "exactly one of --secret-env"),
    (["--secret-env", "A", "--secret-file", "x"], None, "exactly one of --secret-env"),
    (["--secret-env", "FAIRLTR_TEST_NO_SUCH_VARIABLE"], None, "is not set"),
    (["--secret-env", "FAIRLTR_TEST_SHORT"], {"FAIRLTR_TEST_SHORT": "short"}, "at least 16 characters"),
    (["--secret-file", "/no/such/secret"], None, "no such file"),
    (["--secret-env", "S", "--host", "0.0.0.0"], {"S": SECRET}, "not a loopback address"),
    (["--secret-env", "S", "--port", "70000"], {"S": SECRET}, "--port must be 0..65535"),
    (["--secret-env", "S", "--tracking-uri", "http://127.0.0.1:9"], {"S": SECRET}, "not reachable"),
])
def test_receiver_usage_errors_exit_2(args, env, words):
    line = _one_error_line(_run("webhook-receiver", *args, env=env))
    assert words in line, line


def test_verify_alias_errors_exit_2_and_help_names_the_codes():
    line = _one_error_line(_run("verify-alias", "--model", "m", "--tracking-uri", "http://127.0.0.1:9"))
    assert "not reachable" in line
    missing = _run("verify-alias")
    assert missing.exit_code == 2 and "--model" in missing.output
    text = _run("verify-alias", "--help").output
    assert "0  the alias is backed by its promotion" in text and "2  usage or connection error" in text


def test_loopback_rule():
    from fairltr.errors import ConfigError
    from fairltr.workflows.alias_integrity import check_loopback

    for host in ("127.0.0.1", "localhost", "::1"):
        check_loopback(host, False)
    check_loopback("0.0.0.0", True)  # allowed explicitly
    with pytest.raises(ConfigError, match="not a loopback address"):
        check_loopback("0.0.0.0", False)


@pytest.mark.slow
def test_console_script_registers_and_records_a_fail(tmp_path_factory, tiny_rankings, tmp_path):
    """The real console script on a free port with --register, against a webhook-enabled server."""
    import mlflow

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tracking" / "model_registry"))
    from alias_fixtures import log_ranker, point_at, promote, register, start_webhook_server, wait_for
    from mlflow_fixtures import free_port

    server = start_webhook_server(tmp_path_factory)
    mp = point_at(server.uri)
    port = free_port()
    log = tmp_path / "receiver.log"
    env = dict(os.environ, MLFLOW_TRACKING_URI=server.uri, FAIRLTR_TEST_SECRET=SECRET)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    exe = str(Path(sys.executable).with_name("fairltr"))
    with open(log, "wb") as out:
        proc = subprocess.Popen([exe, "webhook-receiver", "--secret-env", "FAIRLTR_TEST_SECRET", "--port", str(port),
                                 "--register"], stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        wait_for(lambda: "listening on" in log.read_text(), timeout=120, what="the receiver to listen")
        text = log.read_text()
        assert f"MLflow webhook 'fairltr-alias-check' (" in text and f"created -> http://127.0.0.1:{port}/webhook" in text
        name = register(log_ranker(tiny_rankings), 2, prefix="cli-hooked")
        assert promote(name, "1").exit_code == 0
        mlflow.MlflowClient().set_registered_model_alias(name, "champion", "2")
        tag = wait_for(lambda: mlflow.MlflowClient().get_model_version(name, "2").tags.get("fairltr.alias_check"),
                       timeout=60, what="the FAIL tag")
        assert tag.startswith("FAIL ")
        wait_for(lambda: f"{name}@champion -> v2: FAIL" in log.read_text(), timeout=10, what="the log line")
        lines = [line for line in log.read_text().splitlines() if name in line]
        assert len(lines) == 2 and f"{name}@champion -> v1: OK" in lines[0], lines
        assert "fairltr.alias_check" not in mlflow.MlflowClient().get_model_version(name, "1").tags
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert "fairltr webhook-receiver stopped" in log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
        mp.undo()
        server.stop()
    print(f"receiver log:\n{log.read_text()}")
