"""The Ctrl-C tests pass however the suite is started (slow: it runs them all again).

README's test command, started in the background by a non-interactive shell (``nohup``, ``cmd &``
in a script), starts with SIGINT ignored, which every child inherits; a test that sends SIGINT to
such a child would find it finished (exit 0). Each Ctrl-C test therefore restores SIGINT's
default handling in the process it interrupts (:mod:`interrupt_helpers`). This test runs every
test module that sends or raises an interrupt (found as ``grep -rln "SIGINT\\|send_signal\\|KeyboardInterrupt"
tests`` finds them) in a pytest started with SIGINT ignored, on a host kept busy by 4 CPU-bound
processes meanwhile.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parent
BUSY = 4
_WORDS = re.compile(r"SIGINT|send_signal|KeyboardInterrupt")


def interrupt_test_modules() -> list[Path]:
    """Every test module under tests/ that sends SIGINT or raises KeyboardInterrupt (this one and
    the helpers aside)."""
    return sorted(p for p in TESTS.rglob("test_*.py")
                  if p.name != Path(__file__).name and _WORDS.search(p.read_text(encoding="utf-8")))


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_the_modules_are_the_ones_grep_finds():
    names = {p.relative_to(TESTS).as_posix() for p in interrupt_test_modules()}
    assert {"fairltr/cli/test_startup.py", "lightning_modules/test_interrupt.py", "fairltr/cli/test_ctrl_c_register.py",
            "fairltr/test_interrupts.py"} <= names, names


def test_ctrl_c_tests_pass_with_sigint_ignored_on_a_busy_host(tmp_path):
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=_ignore_sigint) for _ in range(BUSY)]
    try:
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
             *map(str, interrupt_test_modules())],
            cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=3000, preexec_fn=_ignore_sigint)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    tail = (proc.stdout + proc.stderr)[-4000:]
    assert proc.returncode == 0, tail
    print(tail.strip().splitlines()[-1])
