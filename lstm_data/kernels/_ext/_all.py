"""Every compiled kernel under one namespace (imported by :mod:`lstm_data.kernels`)."""
from lstm_data.kernels._ext.csvblock import CsvBlockParser
from lstm_data.kernels._ext.gather import BatchGather
from lstm_data.kernels._ext.inflate import inflate_baskets
from lstm_data.kernels._ext.interleave import interleave_columns
from lstm_data.kernels._ext.pad import pad_ragged
from lstm_data.kernels._ext.parse import parse_float_lists

__all__ = ["parse_float_lists", "pad_ragged", "BatchGather", "CsvBlockParser", "interleave_columns",
           "inflate_baskets"]
