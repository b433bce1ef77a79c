"""Issue 29 item 7: a category literally written ``NA`` stays a category when the file says so
(``--na-values ''``), and without it the command refuses in one line naming the file, row and fix."""

from __future__ import annotations

import numpy as np
import pandas as pd
from click.testing import CliRunner

from fairltr.cli import cli
from fairltr.deltr import DELTR


def test_a_category_named_na_is_kept_with_na_values(tmp_path):
    rng = np.random.default_rng(1)
    n = 120
    df = pd.DataFrame({"query_id": np.repeat(np.arange(6), 20), "candidate_id": np.arange(n),
                       "race": rng.choice(["NA", "White"], n), "x1": rng.normal(size=n),
                       "judgment": rng.integers(0, 3, n)})
    df.to_csv(tmp_path / "d.csv", index=False)
    DELTR(gamma=0.0, max_iter=3).fit(df.assign(protected=0), features=["x1"], item="candidate_id").save(
        tmp_path / "m.json")
    args = ["evaluate", "--model", str(tmp_path / "m.json"), "--data", str(tmp_path / "d.csv"),
            "--item", "candidate_id", "--group", "race", "--audit", str(tmp_path / "audit.csv")]
    refused = CliRunner().invoke(cli, args)
    errors = [ln for ln in refused.output.splitlines() if ln.startswith("Error:")]
    assert refused.exit_code != 0 and "Traceback" not in refused.output, refused.output
    assert len(errors) == 1 and "'NA'" in errors[0] and "--na-values" in errors[0] and "d.csv" in errors[0], errors
    kept = CliRunner().invoke(cli, [*args, "--na-values", ""])
    assert kept.exit_code == 0, kept.output
    table = pd.read_csv(tmp_path / "audit.csv", keep_default_na=False, na_values=[""])
    counts = table.loc[table["attribute"] == "race"].set_index("category")["n_candidates"].to_dict()
    assert counts == {"NA": int((df["race"] == "NA").sum()), "White": int((df["race"] == "White").sum())}
