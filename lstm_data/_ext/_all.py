"""Every compiled kernel under one namespace (imported by :mod:`lstm_data.kernels`)."""
from .pad import pad_ragged
from .gather import BatchGather
from .parse import parse_float_lists
from .csvblock import CsvBlockParser

__all__ = ["parse_float_lists", "pad_ragged", "BatchGather", "CsvBlockParser"]
