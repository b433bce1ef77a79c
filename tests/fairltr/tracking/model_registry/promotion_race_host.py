"""One racing host of the two-host promotion race (``test_promotion_race_hosts.py``), run inside a
network namespace: ``python promotion_race_host.py WORKDIR NAME``. Imports fairltr, MLflow and
torch once (``promotion_race_worker``), then for round r = 0, 1, ... waits for
``WORKDIR/round-r-NAME.json`` (a list of ``[argv, env, out_path]`` jobs), forks one process per
job at once (each runs ``fairltr promote`` through ``promote_process``), and writes their exit
codes to ``WORKDIR/round-r-NAME.done``. ``WORKDIR/stop`` ends it. Not a test module."""

import json
import multiprocessing
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from promotion_race_worker import promote_process  # noqa: E402

workdir, name = Path(sys.argv[1]), sys.argv[2]
ctx = multiprocessing.get_context("fork")
(workdir / f"ready-{name}").touch()
r = 0
while not (workdir / "stop").exists():
    jobs_file = workdir / f"round-{r}-{name}.json"
    if not jobs_file.exists():
        time.sleep(0.01)
        continue
    jobs = json.loads(jobs_file.read_text())
    procs = [ctx.Process(target=promote_process, args=(argv, env, out)) for argv, env, out in jobs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
    tmp = workdir / f"round-{r}-{name}.tmp"
    tmp.write_text(json.dumps([p.exitcode for p in procs]))
    tmp.rename(workdir / f"round-{r}-{name}.done")
    r += 1
