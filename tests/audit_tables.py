"""A ranking table for the LL144 audit tests: two attributes with unknown values (empty sex cells,
"Decline to state" races), a 1% category, tied scores; shared by tests/fairltr/metrics."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairltr.columns import RankingColumns

C = RankingColumns(query="qid", group=("sex", "race"), judgment="rel")


def table(seed: int = 0, n_queries: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_queries * 25
    race = rng.choice(["White", "Black", "Hispanic", "Asian", "Pacific"], n, p=[0.4, 0.3, 0.19, 0.1, 0.01])
    race = np.where(rng.random(n) < 0.05, "Decline to state", race)
    sex = rng.choice(["Female", "Male"], n).astype(object)
    sex[rng.random(n) < 0.04] = None  # empty cells
    score = np.round(rng.normal(size=n) + 0.4 * (race == "White"), 1)  # ties, at the median too
    return pd.DataFrame({"qid": np.repeat(np.arange(n_queries), 25), "sex": sex, "race": race,
                         "rel": rng.integers(0, 3, n).astype(float), "score": score})


