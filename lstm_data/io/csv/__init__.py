"""CSV files (plain, ``.gz``, ``.xz``, ``.bz2``) into an in-RAM dataset.

``reader`` streams decompressed blocks into the compiled
:class:`~lstm_data.kernels.CsvBlockParser`; ``plan`` decides which column is a
scalar, a ragged (prong) column or skipped, and how ragged columns group.
"""
from lstm_data.io.csv.reader import read_csv

__all__ = ["read_csv"]
