"""The fitted-state contract the rankers share (fairltr.fitted.FittedRanker): the messages word for word."""

import pytest

from fairltr.deltr import DELTR
from fairltr.errors import NotFittedError
from fairltr.gbdt import LambdaMART
from fairltr.plrank import PLRank


@pytest.mark.parametrize("cls", [DELTR, PLRank, LambdaMART])
@pytest.mark.parametrize("view", ["check_fitted", "history", "query_", "judgment_"])
def test_an_unfitted_ranker_names_its_class(cls, view):
    model = cls(gamma=1.0) if cls is DELTR else cls()
    name = cls.__name__
    with pytest.raises(NotFittedError) as exc:
        attr = getattr(model, view)
        attr() if callable(attr) else None
    assert str(exc.value) == f"this {name} model is not fitted yet: call fit() or {name}.load()"
    assert not model.__sklearn_is_fitted__()
