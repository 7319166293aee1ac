"""Scoring: run a trained model over data and write the scores beside the inputs.

:func:`predict` scores every selected row once, in input order (file, entry), and
writes per input file an output aligned with it (Parquet, ROOT friend tree, HDF5,
CSV or zarr) holding the keys, the scores and chosen observer columns;
:class:`PredictOptions` holds its settings. See the docs page "Scoring and writing back".
"""
from __future__ import annotations

from lstm_data.scoring.options import PredictOptions
from lstm_data.scoring.run import predict

__all__ = ["predict", "PredictOptions"]
