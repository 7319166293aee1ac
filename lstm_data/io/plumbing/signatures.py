"""The first bytes that more than the format table looks at.

Each format's magic bytes are in its row of :data:`lstm_data.io.formats.FORMATS`,
from which ``open`` detects it (:mod:`lstm_data.io.dispatch`, and
:mod:`lstm_data.io.plumbing.remote` for a URL). The bytes here are those other
modules look at too: byte blocks find a compression
(:mod:`lstm_data.io.plumbing.byte_blocks`), and output checks tell our files from others
(:mod:`lstm_data.io.ours.ownership`).
"""
from __future__ import annotations

__all__ = ["HDF5_SIGNATURE", "PARQUET_MAGIC", "ROOT_MAGIC", "COMPRESSION_MAGIC", "COMPRESSED_PREFIXES"]

#: the first 8 bytes of an HDF5 file (or of the part after its user block)
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
#: the first (and last) 4 bytes of a Parquet file
PARQUET_MAGIC = b"PAR1"
#: the first 4 bytes of a ROOT file
ROOT_MAGIC = b"root"
#: (magic bytes, compression) of the compressed text lstm_data reads
COMPRESSION_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\xfd7zXZ\x00", "xz"), (b"BZh", "bzip2"))
#: the magic bytes of :data:`COMPRESSION_MAGIC`, for ``bytes.startswith``
COMPRESSED_PREFIXES = tuple(magic for magic, _ in COMPRESSION_MAGIC)
