"""What computing awrf, ndcg_awrf and iaa adds to one evaluate_ranking call (2,000 queries x 50
candidates, untied scores): the same call with and without the three declarations, alternated, 7 rounds."""
import time, statistics
import numpy as np, pandas as pd
import fairltr.metrics.evaluate as ev
from fairltr.metrics import evaluate_ranking
rng = np.random.default_rng(0)
Q, N = 2000, 50
df = pd.DataFrame({"query_id": np.repeat(np.arange(Q), N), "protected": rng.integers(0, 2, Q * N),
                   "judgment": rng.integers(0, 3, Q * N), "score": rng.random(Q * N)})
full = ev.per_query_declarations
without = lambda: [m for m in full() if m.name not in ("awrf", "ndcg_awrf", "iaa")]
times = {"with": [], "without": []}
for _ in range(7):
    for name, fn in (("without", without), ("with", full)):
        ev.per_query_declarations = fn
        t = time.perf_counter(); evaluate_ranking(df, "score"); times[name].append(time.perf_counter() - t)
for name, t in times.items():
    print(f"{name}: min {min(t):.4f} s median {statistics.median(t):.4f} s max {max(t):.4f} s")
print(f"ratio of medians with/without: {statistics.median(times['with']) / statistics.median(times['without']):.3f}")
