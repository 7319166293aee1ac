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
layout, write
    Our on-disk layout (shared by readers and writers) and the atomic writers.
schema, column_groups
    Declared input columns (:class:`Schema`) and the forming of ragged groups.
ondisk, coalesced_reads, zarr_chunks, zarr_v2, byte_blocks
    Plumbing: datasets whose values stay on disk, chunk-coalescing range reads,
    zarr v3 chunk decoding, a minimal zarr v2 reader, decompressed byte blocks.

A new input format is one module here, registered in :mod:`lstm_data.io.dispatch`.
"""
from lstm_data.io.dispatch import detect_format, expand_paths, open
from lstm_data.io.schema import Schema
from lstm_data.io.write import write_hdf5, write_zarr

__all__ = ["open", "detect_format", "expand_paths", "Schema", "write_zarr", "write_hdf5"]
