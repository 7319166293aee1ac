"""CSV files (plain, ``.gz``, ``.xz``, ``.bz2``) into an in-RAM dataset.

``reader`` streams decompressed blocks into the compiled
:class:`~lstm_data.kernels.CsvBlockParser`; ``parallel`` parses pieces of the
text on several threads and stitches them in order; ``plan`` decides which
column is a scalar, a ragged (prong) column or skipped, and how ragged columns
group.
"""
from lstm_data.io.csv.reader import read_csv

__all__ = ["read_csv"]
