"""The dtypes ragged values may have, in the order of the compiled kernels' source kinds.

The one list of them: :mod:`lstm_data.kernels._args` checks values against it on both
backends, and ``setup.py`` reads this file (without importing the package) to generate
the compiled core's dispatch over them from ``kernels/_ext/srckinds.pxi.in``. A new
source dtype is one more name here. Booleans are read as uint8 (0 or 1).
"""
from __future__ import annotations

__all__ = ["SOURCE_DTYPES"]

#: NumPy names of the source dtypes; a kind is an index into this tuple
SOURCE_DTYPES: tuple[str, ...] = ("float32", "float64", "int8", "int16", "int32", "int64",
                                  "uint8", "uint16", "uint32", "uint64")
