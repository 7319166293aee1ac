"""CSV files (plain, ``.gz``, ``.xz``, ``.bz2``) into an in-RAM dataset.

``head`` reads the header (located once) and the sample after it, and parses
the sample once to decide the plan; ``reader`` streams decompressed blocks into
the compiled :class:`~lstm_data.kernels.CsvBlockParser` (a file the sample holds
whole is not parsed again); ``parallel`` parses pieces of the
text on several threads and stitches them in order; ``plan`` decides which
column is a scalar, a ragged (prong) column or skipped, and how ragged columns
group.
"""
from lstm_data.io.csv.reader import read_csv

__all__ = ["read_csv"]
