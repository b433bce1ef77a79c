"""Start-up of the ``fairltr`` console script: ``--help`` of every command, option errors and
``fair mtable`` load neither torch nor MLflow (nor Lightning, Optuna, transformers); ``import
fairltr`` loads none of them; a Ctrl-C at any moment of start-up prints one line and exits 130.

Each check runs in a fresh interpreter, since an import of this test session would hide one."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from interrupt_helpers import restore_sigint

HEAVY = ("torch", "mlflow", "lightning", "pytorch_lightning", "optuna", "transformers", "pandas", "sklearn",
         "scipy.stats")  # scipy.stats: 1.5 s of import; the mtable uses the ufuncs it calls (scipy.special)
REPO = Path(__file__).resolve().parents[3]

# runs fairltr's main like the console script, then prints the heavy modules it loaded
PROBE = """
import json, sys
from fairltr.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in {heavy!r} if m in sys.modules)
print(json.dumps({{"code": code, "heavy": heavy}}), file=sys.stderr)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def _loaded(*argv: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv], capture_output=True, text=True,
                          env=_env(), timeout=120)
    return json.loads(proc.stderr.strip().splitlines()[-1])


def _command_paths() -> list[list[str]]:
    import click

    from fairltr.cli import cli

    paths: list[list[str]] = [[]]

    def walk(group: click.Group, prefix: list[str]) -> None:
        for name, command in group.commands.items():
            paths.append([*prefix, name])
            if isinstance(command, click.Group):
                walk(command, [*prefix, name])

    walk(cli, [])
    return paths


def test_import_fairltr_loads_no_heavy_library():
    code = f"import sys, fairltr, fairltr.workflows, fairltr.losses, fairltr.fair; " \
           f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120)
    assert out.stdout.strip() == "[]", out.stderr


def test_the_lazy_exports_still_work():
    code = ("import sys, fairltr; from fairltr import DELTR, to_batch, evaluate_ranking; "
            "from fairltr.workflows import quickstart, train_ranker; from fairltr.fair import mtable, rerank; "
            "from fairltr.losses import lakda_kl, get_loss; import fairltr.workflows.quickstart; "
            "assert callable(fairltr.workflows.quickstart) and callable(fairltr.fair.mtable); "
            "assert set(fairltr.__all__) <= set(dir(fairltr)); print('torch' in sys.modules, DELTR.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120)
    assert out.stdout.split() == ["True", "DELTR"], out.stderr


def test_help_of_every_command_loads_neither_torch_nor_mlflow():
    paths = _command_paths()
    assert len(paths) > 15 and ["train", "dpr"] in paths and ["fair", "mtable"] in paths
    for path in paths:
        got = _loaded(*path, "--help")
        assert got == {"code": 0, "heavy": []}, (path, got)


@pytest.mark.parametrize("argv", [
    ["train", "deltr", "--train", "x.csv", "--gamma", "abc"],
    ["train", "dpr", "--data", "x", "--out", "y", "--fairness-loss", "exposure_hinge"],
    ["evaluate-retrieval", "--data", "x", "--k", "many"],
    ["sweep", "--method", "nope"],
    ["no-such-command"],
], ids=["deltr-gamma", "dpr-loss", "retrieval-k", "sweep-method", "unknown-command"])
def test_an_option_error_loads_neither_torch_nor_mlflow(argv):
    assert _loaded(*argv) == {"code": 2, "heavy": []}


def test_fair_mtable_loads_neither_torch_nor_pandas_nor_scipy_stats():
    assert _loaded("fair", "mtable", "--k", "10", "--p", "0.5") == {"code": 0, "heavy": []}


def _console_script() -> str:
    script = shutil.which("fairltr", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("the fairltr console script is not installed next to this interpreter (pip install -e .)")
    return script


def test_ctrl_c_at_random_moments_of_start_up_prints_one_line_and_exits_130(tmp_path):
    """SIGINT at a random moment, 0 to 1.5 s after fairltr's first code ran (the marker file
    ``fairltr.startup`` touches), in a command whose start-up imports click, the command modules,
    then torch and pandas: every exit is 130 with the one line ``interrupted``. (Earlier, the
    interpreter itself is starting: see fairltr.startup.)"""
    script = _console_script()
    rng = random.Random(20)
    for i in range(8):
        marker = tmp_path / f"started-{i}"
        proc = subprocess.Popen([script, "quickstart", "--no-track", "--out", str(tmp_path / f"qs{i}")],
                                env={**_env(), "FAIRLTR_STARTUP_MARKER": str(marker)},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=restore_sigint)  # even when this process ignores SIGINT
        deadline = time.monotonic() + 60
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert marker.exists(), proc.communicate(timeout=60)
        time.sleep(rng.uniform(0.0, 1.5))
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        lines = [line for line in err.splitlines() if line.strip()]
        assert proc.returncode == 130 and "Traceback" not in err and lines == ["interrupted"], (proc.returncode, err)
