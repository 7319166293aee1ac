"""Reading records of an HDF5 dataset, with a located error when HDF5 refuses.

Shared by every HDF5 reader (our layout, lstm_ee's files, NOvA tables).
"""
from __future__ import annotations

import h5py
import numpy as np

from lstm_data.errors import FormatError
from lstm_data.io.hdf5.checks import load_filter_plugins, missing_filter_error

__all__ = ["read_rows"]


def read_rows(ds: h5py.Dataset, lo: int = 0, hi: int | None = None, *, file: str,
              variable: str | None = None) -> np.ndarray:
    """Records ``lo:hi`` of the 1-D or 2-D ``ds`` (default: all); a refused read is a ``FormatError``.

    h5py reports a failed checksum or decompression as a bare ``OSError`` that
    names neither file nor dataset. A dataset compressed with a filter this HDF5
    library lacks is not damaged: the error names the filter and the package that
    provides it (``hdf5plugin`` is loaded first when installed, and the read
    retried; see :func:`~lstm_data.io.hdf5.checks.missing_filter_error`). Otherwise
    the failing range is retried chunk by chunk to find the damaged chunk; the
    error names the file, the dataset's path (``group/array``) and the chunk, and
    is chained from h5py's.

    Parameters
    ----------
    ds
        A dataset of an open file.
    lo, hi
        Records (along the first axis) to read (default: all).
    file, variable
        For the error.
    """
    hi = ds.shape[0] if hi is None else hi
    try:
        rows: np.ndarray = ds[lo:hi]
        return rows
    except OSError as exc:
        missing = missing_filter_error(ds, file=file, variable=variable)
        if missing is not None:
            if load_filter_plugins():  # hdf5plugin was installed but not imported
                return read_rows(ds, lo, hi, file=file, variable=variable)
            raise missing from exc
        key = ds.name.lstrip("/")
        c = ds.chunks[0] if ds.chunks else max(1, hi - lo)
        where = f"records {lo}:{hi}"
        for i in range(lo // c, -(-hi // c)):
            a, b = max(lo, i * c), min(hi, (i + 1) * c)
            try:
                ds[a:b]
            except OSError:
                where = f"chunk {i} (records {a}:{b})" if ds.chunks else f"records {a}:{b}"
                break
        raise FormatError(f"cannot read {where} of dataset {key!r}: damaged or unreadable (a "
                          f"checksum or decompression failure; HDF5: {exc})", file=file,
                          variable=variable) from exc
