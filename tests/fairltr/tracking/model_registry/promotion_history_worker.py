"""Child process of the decision-history race (``test_promotion_history.py``): waits for a barrier
file, then runs ``fairltr promote`` like ``promotion_race_worker.promote_process``, so all racers
start their promotion at the same moment. Not a test module: the forkserver imports it by name."""

from __future__ import annotations

import os
import time

from promotion_race_worker import promote_process


def promote_after_barrier(argv: list[str], env: dict[str, str], out_path: str, barrier: str,
                          timeout: float = 120.0) -> None:
    """Wait until ``barrier`` exists (exit 4 after ``timeout`` s), then promote."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(barrier):
        if time.monotonic() > deadline:
            os._exit(4)
        time.sleep(0.005)
    promote_process(argv, env, out_path)
