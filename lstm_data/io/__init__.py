"""Files in and out: every format's reader, our on-disk layout, the writers.

The folders say whose a module is:

``dispatch``, ``read_options``, ``schema``
    :func:`open`, one entry point for every format (file signature, extension, globs, URLs);
    :class:`ReadOptions`, the one home of every reader option; :class:`Schema`, declared columns.
``ours/``
    Our layout (``layout``) in zarr v3 (``zarr``, ``zarr_chunks``) and HDF5 (``hdf5_out``), its
    atomic, streaming writers (``write``, ``row_blocks``, ``chunk_ranges``), ``convert`` in bounded
    memory, the two-pass disk shuffle (``external_shuffle``), datasets whose values stay on disk
    (``ondisk``), manifests and checked stores (``manifest``, ``checked_store``) and what
    ``overwrite`` may replace (``ownership``).
``csv/``, ``hdf5/``, ``nova/``, ``parquet/``, ``root/``, ``awkward/``, ``l5kit/``
    Other writers' formats, one folder each: CSV (plain, gzip, xz, bzip2) through the compiled
    parser; lstm_ee's PyTables HDF5, h5py and PyTables tables; NOvA HDF5 ntuple tables; Parquet and
    Arrow; ROOT TTrees and RNTuples; awkward arrays; L5Kit zarr v2.
``columns/``
    The rules every reader follows: forming ragged groups (``groups``, ``jagged``), choosing columns
    (``select``) and integers never changed silently (``exact_ints``).
``plumbing/``
    Bytes in: decompressed blocks read ahead (``byte_blocks``, ``gzip_raw``, ``xz_blocks``),
    chunk-coalescing range reads (``coalesced_reads``), datasets read on demand by chunk
    (``chunked``), remote files and stores (``remote``), pipes and devices (``special``).

A new input format is one module (or folder) here, registered in :mod:`lstm_data.io.dispatch`.
"""
from lstm_data.io.dispatch import detect_format, expand_paths, open
from lstm_data.io.schema import Schema
from lstm_data.io.ours.write import write_hdf5, write_zarr

__all__ = ["open", "detect_format", "expand_paths", "Schema", "write_zarr", "write_hdf5"]
