"""Pure-Python twins of the compiled kernels in :mod:`lstm_data._ext`.

Each module here mirrors one ``_ext`` module with the same function names and
signatures. They are the readable specification: the compiled code must give
bitwise-equal results and raise the same exception types. Select them with
``LSTM_DATA_PURE_PYTHON=1``.
"""
from .parse import parse_float_lists
from .pad import pad_ragged
from .gather import BatchGather
from .csvblock import CsvBlockParser

__all__ = ["parse_float_lists", "pad_ragged", "BatchGather", "CsvBlockParser"]
