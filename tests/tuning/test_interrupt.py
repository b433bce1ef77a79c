"""Ctrl-C at random moments of a sweep (slow): every interruption ends the process within 5 s,
leaves no Optuna trial and no MLflow run RUNNING, and rerunning the same command finishes the
study with exactly N complete trials and the parent run FINISHED. The 30 moments are shared out
between two studies interrupted side by side (two sweeps on the host at once, as a user running
two searches has), which halves the wall time."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from fairltr.synthetic import make_biased_rankings
from interrupt_helpers import restore_sigint
from mlflow_fixtures import running_runs

N_INTERRUPTS = int(os.environ.get("FAIRLTR_TEST_N_INTERRUPTS", "30"))


def _command(files: Path, trials: int) -> list[str]:
    code = "import sys; from fairltr.cli import main; main(sys.argv[1:])"
    return [sys.executable, "-c", code, "sweep", "--method", "deltr", "--train", str(files / "train.csv"),
            "--test", str(files / "test.csv"), "--trials", str(trials), "--study", "ctrl-c", "--out",
            str(files / "out"), "--storage", f"sqlite:///{files / 'optuna.db'}", "--tracking-uri",
            f"sqlite:///{files / 'mlflow.db'}", "--experiment", "interrupt", "--max-iter", "200", "--no-progress",
            "--heartbeat-interval", "1", "--grace-period", "3"]


_restore_sigint = restore_sigint  # a child of a non-interactive parent may inherit SIGINT ignored


def _trial_states(files: Path) -> list[TrialState]:
    try:
        study = optuna.load_study(study_name="ctrl-c", storage=f"sqlite:///{files / 'optuna.db'}")
    except KeyError:
        return []
    return [t.state for t in study.get_trials(deepcopy=False)]


CHAINS = 2  # independent studies interrupted side by side: the same moments, half the wall time


def _interrupt_chain(files: Path, delays: list[float], env: dict[str, str]) -> list[tuple]:
    """Start the sweep on ``files``' study, Ctrl-C it after each delay in turn, check every
    interruption (exit within 5 s, no trial or run left RUNNING), then resume it to the end.
    Raises AssertionError naming the interruption and its log."""
    outcomes = []
    for i, delay in enumerate(delays):
        log = files / f"run{i}.log"
        proc = subprocess.Popen(_command(files, 100_000), stdout=log.open("w"), stderr=subprocess.STDOUT, env=env,
                                preexec_fn=_restore_sigint)
        time.sleep(delay)
        if proc.poll() is not None:
            raise AssertionError(f"{files.name}: the sweep ended before the signal:\n{log.read_text()}")
        proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError(f"{files.name} interrupt {i}: still running 5 s after Ctrl-C:\n{log.read_text()}")
        elapsed = time.monotonic() - t0
        text = log.read_text()
        # 130 = fairltr's interrupted exit; -SIGINT only while Python itself is still importing
        assert code in (130, -signal.SIGINT), f"{files.name} interrupt {i}: exit {code}\n{text}"
        assert TrialState.RUNNING not in _trial_states(files), f"{files.name} interrupt {i}: a trial left RUNNING\n{text}"
        assert running_runs(files / "mlflow.db") == 0, f"{files.name} interrupt {i}: an MLflow run left RUNNING\n{text}"
        outcomes.append((code, round(delay, 1), round(elapsed, 2), _trial_states(files).count(TrialState.COMPLETE)))
    # resume: the same command (a small total) finishes the study
    target = max(o[-1] for o in outcomes) + 3
    done = subprocess.run(_command(files, target), capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    states = _trial_states(files)
    assert states.count(TrialState.COMPLETE) == target and TrialState.RUNNING not in states, (files.name, states)
    with sqlite3.connect(files / "mlflow.db") as con:
        rows = con.execute("SELECT status FROM runs r JOIN tags t ON r.run_uuid = t.run_uuid "
                           "WHERE t.key = 'fairltr.sweep.role' AND t.value = 'study'").fetchall()
    assert rows == [("FINISHED",)], (files.name, rows)
    return outcomes


@pytest.mark.slow
def test_sigint_at_random_moments_never_hangs_or_leaks(tmp_path):
    """N_INTERRUPTS moments spread over start-up (imports, study and MLflow set-up) and the
    trials, dealt in random order to CHAINS studies that are interrupted side by side (each chain
    sequential: every interruption lands on the state the previous one left)."""
    from concurrent.futures import ThreadPoolExecutor

    train, test = make_biased_rankings(40, 30, 0.3, seed=5)  # a trial takes a few tenths of a second
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("MLFLOW_TRACKING_URI", None)
    rng = random.Random(7)
    delays = [2.0 + 20.0 * (i + rng.random()) / N_INTERRUPTS for i in range(N_INTERRUPTS)]
    rng.shuffle(delays)
    chains = []
    for c in range(CHAINS):
        files = tmp_path / f"chain{c}"
        files.mkdir()
        train.to_csv(files / "train.csv", index=False)
        test.to_csv(files / "test.csv", index=False)
        chains.append((files, delays[c::CHAINS]))
    with ThreadPoolExecutor(CHAINS) as pool:  # .result() re-raises a chain's AssertionError here
        outcomes = [o for future in [pool.submit(_interrupt_chain, f, d, env) for f, d in chains]
                    for o in future.result()]
    assert len(outcomes) == N_INTERRUPTS
    assert sum(o[0] == 130 for o in outcomes) >= N_INTERRUPTS - 3, outcomes
    assert max(o[-1] for o in outcomes) > 0, outcomes  # the interruptions landed during trials too, not only at start-up
