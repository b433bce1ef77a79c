"""Issue 30, item 2: training keeps refusing a missing group category, and its one-line message
points to the audit option that counts such rows as `unknown`."""
import numpy as np
import pandas as pd
import pytest

from fairltr.data import check_group_column
from fairltr.errors import DataError


def test_missing_category_in_training_points_to_the_audit_option():
    df = pd.DataFrame({"qid": [1, 1, 2], "sex": ["f", np.nan, "m"]})
    with pytest.raises(DataError) as err:
        check_group_column(df, "sex", query="qid", source="train.csv")
    msg = str(err.value)
    assert "\n" not in msg and "missing group category" in msg and "sex" in msg
    assert "fairltr audit --unknown-value" in msg
