"""Ctrl-C during a Lightning fit: ``train deltr --engine lightning`` and ``train dpr`` exit 130
with the one line ``interrupted``, their MLflow run (train dpr opens it before the fit) KILLED (Lightning itself turns the
KeyboardInterrupt into ``sys.exit(1)`` and ignores further SIGINTs).

Each command runs in a fresh process whose training step sends the process a real SIGINT at its
second step, so the interrupt arrives inside ``Trainer.fit``, not before or after it; the process
starts with SIGINT's default handling whatever its parent ignores (:mod:`interrupt_helpers`).

``exit_when_stuck``: a Ctrl-C while the main thread is blocked in C++ (torch's TCP store waiting
for a peer, as in a multi-node rendezvous) ends the process within a second: exit 130, one line."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from interrupt_helpers import restore_sigint
from mlflow_fixtures import free_port
from tiny_models import build_tiny_bert, write_parallel_layout

REPO = Path(__file__).resolve().parents[2]

# patch one training step of ``module_class`` to SIGINT the process on its second call, then run the CLI
DRIVER = """
import os, signal, sys
import importlib
module = importlib.import_module({module!r})
cls = getattr(module, {cls!r})
step = cls.training_step
calls = []
def interrupting_step(self, *args, **kwargs):
    calls.append(1)
    if len(calls) == 2:
        os.kill(os.getpid(), signal.SIGINT)
    return step(self, *args, **kwargs)
cls.training_step = interrupting_step
from fairltr.cli import main
main(sys.argv[1:])
"""


def _run(tmp_path: Path, module: str, cls: str, argv: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]),
           "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'mlflow.db'}", "HF_HUB_OFFLINE": "1"}
    env.pop("MLFLOW_RUN_ID", None)
    return subprocess.run([sys.executable, "-c", DRIVER.format(module=module, cls=cls), *argv], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300, preexec_fn=restore_sigint)


def _statuses(db: Path) -> list[str]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as con:
        try:
            return [row[0] for row in con.execute("SELECT status FROM runs")]
        except sqlite3.OperationalError:  # the store was never created
            return []


def _assert_interrupted(proc: subprocess.CompletedProcess, db: Path, runs: list[str]) -> None:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 130, proc.stderr[-3000:]
    assert lines[-1:] == ["interrupted"] and lines.count("interrupted") == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert _statuses(db) == runs


def test_ctrl_c_during_a_lightning_deltr_fit_exits_130_and_kills_the_run(tmp_path):
    from fairltr.synthetic import make_biased_rankings

    train, _ = make_biased_rankings(20, 8, 0.3, seed=0)
    train.to_csv(tmp_path / "train.csv", index=False)
    proc = _run(tmp_path, "lightning_modules.deltr_training", "DELTRTrainingModule",
                ["train", "deltr", "--train", "train.csv", "--gamma", "10", "--engine", "lightning", "--epochs", "50",
                 "--out", "out"])
    # train deltr opens its run after training (the model is on disk first): no run to end
    _assert_interrupted(proc, tmp_path / "mlflow.db", [])
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_ctrl_c_during_a_dpr_fit_exits_130_and_kills_the_run(tmp_path):
    model = build_tiny_bert(tmp_path / "bert")
    write_parallel_layout(tmp_path / "data")
    proc = _run(tmp_path, "lightning_modules.biencoder", "BiEncoderModule",
                ["train", "dpr", "--data", "data", "--model", str(model), "--steps", "30", "--batch-size", "4",
                 "--eval-split", "", "--out", "out"])
    _assert_interrupted(proc, tmp_path / "mlflow.db", ["KILLED"])


def test_fit_restores_the_sigint_handler_lightning_replaced(tmp_path):
    """In-process: the KeyboardInterrupt comes back and Ctrl-C works again afterwards."""
    import lightning.pytorch as pl
    import torch

    from lightning_modules.interrupt import fit

    class Interrupting(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def training_step(self, batch, batch_idx):
            if batch_idx == 1:
                raise KeyboardInterrupt
            return (self.w - 1).pow(2).sum()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    loader = torch.utils.data.DataLoader(torch.zeros(8, 1), batch_size=2)
    trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, accelerator="cpu", default_root_dir=tmp_path)
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        fit(trainer, Interrupting(), loader)
    assert trainer.interrupted and signal.getsignal(signal.SIGINT) is before


# a TCP store master that waits for a second worker that never comes: torch blocks in C++ for
# the whole timeout, and Python runs no signal handler meanwhile
STUCK = """
import datetime, sys
from contextlib import nullcontext
import torch.distributed as dist
from lightning_modules.interrupt import exit_when_stuck
guard = sys.argv[2] == "guarded"
with exit_when_stuck() if guard else nullcontext():
    print("waiting", file=sys.stderr, flush=True)
    try:
        dist.TCPStore("127.0.0.1", int(sys.argv[1]), 2, True, datetime.timedelta(seconds=20), wait_for_workers=True)
    except Exception:
        print("timed out", file=sys.stderr, flush=True)
        sys.exit(3)
"""


def _stuck_process(guarded: bool) -> tuple[int, float, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "TORCH_CPP_LOG_LEVEL": "FATAL"}
    proc = subprocess.Popen([sys.executable, "-c", STUCK, str(free_port()), "guarded" if guarded else "plain"],
                            env=env, stderr=subprocess.PIPE, text=True, preexec_fn=restore_sigint)
    assert proc.stderr.readline().strip() == "waiting"
    time.sleep(0.5)  # inside the store's C++ wait
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        rest = proc.stderr.read()
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return code, time.monotonic() - t0, rest


def test_ctrl_c_while_blocked_in_cpp_ends_the_process_within_a_second():
    code, took, err = _stuck_process(guarded=True)
    assert code == 130 and err.strip().splitlines() == ["interrupted"], (code, err)
    assert took < 2.0, took


@pytest.mark.slow  # waits out the store's 20 s timeout
def test_without_the_guard_a_blocked_main_thread_ignores_ctrl_c():
    code, took, err = _stuck_process(guarded=False)
    assert took > 10 and code != 130, (code, took, err)  # the default: Ctrl-C waits for torch's timeout
