"""Scoring: run a trained model over data and write the scores beside the inputs.

:func:`predict` scores every selected row once, in input order (file, entry), and
writes per input file an output aligned with it (Parquet, ROOT friend tree, HDF5,
CSV or zarr) holding the keys, the scores and chosen observer columns;
:class:`PredictOptions` holds its settings. See the docs page "Scoring and writing back".
"""
from __future__ import annotations

import sys
import types
from typing import Any

from lstm_data.predict.options import PredictOptions
from lstm_data.predict.run import predict

__all__ = ["predict", "PredictOptions"]


class _CallableModule(types.ModuleType):
    """This package, callable as :func:`predict`: importing ``lstm_data.predict`` (which makes the
    package an attribute of ``lstm_data``) keeps ``lstm_data.predict(...)`` a call of the function."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return predict(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
