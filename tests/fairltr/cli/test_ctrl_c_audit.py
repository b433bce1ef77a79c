"""Ctrl-C during ``fairltr audit`` (issue 30): the real console script on a 400,000-row CSV,
interrupted by a real SIGINT (default handler restored in the child) at fixed delays (start-up,
reading, the audit, the bootstrap). Every interrupted command exits 130 with the one line
``interrupted``; the output folder still holds the earlier complete summary, byte for byte, and
nothing else (no half-written bias_audit.json, no temporary file). A command the signal reaches
after it finished exits 0 with a complete summary. Slow: each command starts pandas (2-3 s)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from audit_tables import table  # tests/audit_tables.py
from interrupt_helpers import restore_sigint

FAIRLTR = str(Path(sys.executable).with_name("fairltr"))
FILES = {"bias_audit.json", "bias_audit.csv", "bias_audit.html"}


def _audit(data: Path, out: Path) -> subprocess.Popen:
    env = dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.Popen([FAIRLTR, "audit", "--data", str(data), "--score-column", "score", "--group", "sex",
                             "--group", "race", "--unknown-value", "", "--unknown-value", "Decline to state",
                             "--ci", "0.95", "--n-boot", "2000", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=restore_sigint)


@pytest.mark.slow  # about 25 s: four console-script runs
def test_ctrl_c_mid_audit_leaves_the_earlier_summary(tmp_path):
    small = table(5, n_queries=8)
    small.to_csv(tmp_path / "small.csv", index=False)
    pd.concat([table(s, n_queries=4000) for s in range(4)]).assign(
        qid=lambda d: range(len(d))).assign(qid=lambda d: d["qid"] // 25).to_csv(tmp_path / "big.csv", index=False)
    out = tmp_path / "out"
    proc = _audit(tmp_path / "small.csv", out)
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    before = (out / "bias_audit.json").read_bytes()
    outcomes = []
    for delay in (1.5, 3.0, 4.5):
        proc = _audit(tmp_path / "big.csv", out)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
        assert set(os.listdir(out)) == FILES, os.listdir(out)
        summary = (out / "bias_audit.json").read_bytes()
        json.loads(summary)  # complete
        if proc.returncode == 130:
            assert stderr.strip().splitlines() == ["interrupted"], stderr[-2000:]
            assert summary == before  # untouched
        else:
            assert proc.returncode == 0, stderr[-2000:]
            assert json.loads(summary)["n_individuals"] == 400_000
        outcomes.append(proc.returncode)
    assert 130 in outcomes, outcomes  # at least one signal came mid-audit
