"""Files in and out: every format's reader, our on-disk layout, the writers.

Modules
-------
dispatch
    :func:`open`: one entry point for every format (file signature, extension, globs).
csv
    CSV files (plain, gzip, xz, bzip2) through the compiled block parser.
hdf5, zarr, l5kit
    lstm_ee's PyTables HDF5 and our HDF5 layout; our zarr v3 layout; L5Kit zarr v2.
nova_hdf5 (package nova)
    NOvA HDF5 ntuple tables (a group per table, keyed by slice) read into slices.
parquet, root, awkward
    Parquet files and Arrow tables, ROOT TTrees through uproot, awkward arrays
    (extras ``parquet``, ``root``, ``awkward``); ``jagged_groups`` groups their jagged columns.
remote
    zarr stores at fsspec URLs (http, s3, gs).
layout, write
    Our on-disk layout (shared by readers and writers) and the atomic, streaming writers.
row_blocks, convert, external_shuffle, chunk_ranges
    Streaming: tables as blocks of rows, ``convert`` in bounded memory, the two-pass
    disk shuffle, whole-chunk writes of element ranges by several processes.
schema, column_groups
    Declared input columns (:class:`Schema`) and the forming of ragged groups.
ondisk, coalesced_reads, zarr_chunks, zarr_v2, byte_blocks, xz_blocks, gzip_raw
    Plumbing: datasets whose values stay on disk, chunk-coalescing range reads,
    zarr v3 chunk decoding, a minimal zarr v2 reader, decompressed byte blocks.

A new input format is one module (or package) here, registered in :mod:`lstm_data.io.dispatch`.
"""
from lstm_data.io.dispatch import detect_format, expand_paths, open
from lstm_data.io.schema import Schema
from lstm_data.io.write import write_hdf5, write_zarr

__all__ = ["open", "detect_format", "expand_paths", "Schema", "write_zarr", "write_hdf5"]
