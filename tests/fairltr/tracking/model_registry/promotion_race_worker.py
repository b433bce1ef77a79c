"""Child process of the promotion race test (``test_promotion_race.py``): runs ``fairltr promote``
through the CLI entry point in a process forked from a forkserver that imported fairltr, MLflow
and torch once, so each of the many racing processes starts in milliseconds instead of seconds.
Not a test module (no ``test_`` prefix): it is imported by the forkserver by name."""

from __future__ import annotations

import os
import sys
import time

import mlflow  # noqa: F401  (preloaded in the forkserver: the children fork with it imported)
import torch

import fairltr.tracking.model_registry  # noqa: F401
import fairltr.tracking.models.verify  # noqa: F401
from fairltr.cli import cli

torch.set_num_threads(1)


def promote_process(argv: list[str], env: dict[str, str], out_path: str) -> None:
    """Run ``fairltr <argv>`` with ``env`` set, output to ``out_path``; exit with its status."""
    started = time.monotonic()
    os.environ.update(env)
    code = 1
    with open(out_path, "w") as fh:
        sys.stdout = sys.stderr = fh
        try:
            cli.main(args=argv, prog_name="fairltr", standalone_mode=True)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # a crash: report it like the console script would
            import traceback

            traceback.print_exc(file=fh)
            code = 2
        fh.write(f"\n[worker] exit {code} after {time.monotonic() - started:.2f} s\n")
        fh.flush()
    os._exit(code)
