"""Pure-Python twins of the compiled kernels in :mod:`lstm_data.kernels._ext`.

Each module here mirrors one ``_ext`` module with the same function names and
signatures. They are the readable specification: the compiled code must give
bitwise-equal results and raise the same exception types. Select them with
``LSTM_DATA_PURE_PYTHON=1``.
"""
from lstm_data.kernels._py.csvblock import CsvBlockParser
from lstm_data.kernels._py.gather import BatchGather
from lstm_data.kernels._py.inflate import inflate_baskets
from lstm_data.kernels._py.interleave import interleave_columns
from lstm_data.kernels._py.pad import pad_ragged
from lstm_data.kernels._py.parse import parse_float_lists

__all__ = ["parse_float_lists", "pad_ragged", "BatchGather", "CsvBlockParser", "interleave_columns",
           "inflate_baskets"]
