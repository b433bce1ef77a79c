"""The fitted-state half of the rankers' estimator contract, shared by :class:`~fairltr.DELTR`,
:class:`~fairltr.PLRank` and :class:`~fairltr.LambdaMART`.

A subclass names itself in ``_FILE_KIND`` (its model files' format marker, its messages) and says
what "fitted" means in ``__sklearn_is_fitted__``; it sets ``columns_`` and ``history_`` when fitted.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairltr.data import frame_source, numeric_matrix
from fairltr.errors import DataError, NotFittedError

__all__ = ["FittedRanker"]


class FittedRanker:
    """``check_fitted`` and the fitted contract's read-only views (``query_``, ``judgment_``, ``history``)."""

    _FILE_KIND = "ranker"
    """The class's name in model files and messages (set by each subclass)."""

    def __sklearn_is_fitted__(self) -> bool:
        raise NotImplementedError

    def check_fitted(self) -> None:
        """Raise :class:`NotFittedError` unless the model was fitted or loaded:
        "this <kind> model is not fitted yet: call fit() or <kind>.load()"."""
        if not self.__sklearn_is_fitted__():
            raise NotFittedError(f"this {self._FILE_KIND} model is not fitted yet: call fit() or "
                                 f"{self._FILE_KIND}.load()")

    @property
    def history(self) -> list[dict[str, float]]:
        """Read-only alias of ``history_`` (one record per iteration)."""
        self.check_fitted()
        return self.history_  # type: ignore[attr-defined]

    @property
    def query_(self) -> str:
        """The query column of the fitted contract (``columns_.query``)."""
        self.check_fitted()
        return self.columns_.query  # type: ignore[attr-defined]

    @property
    def judgment_(self) -> str:
        """The judgment column of the fitted contract (``columns_.judgment``)."""
        self.check_fitted()
        return self.columns_.judgment  # type: ignore[attr-defined]

    def _design(self, df: pd.DataFrame) -> np.ndarray:
        """The model's feature columns (``feature_names_``) of ``df`` as finite float64; a missing
        column, or a cell that is no finite number, is a DataError naming file, line, column,
        query and value."""
        names = self.feature_names_  # type: ignore[attr-defined]
        missing = [f for f in names if f not in df.columns]
        if missing:
            where = frame_source(df)
            raise DataError(f"{where + ': ' if where else ''}missing feature column(s) {missing}; "
                            f"the model was trained on {names}")
        query = self.query_ if self.query_ in df.columns else None
        return numeric_matrix(df, names, query=query)
