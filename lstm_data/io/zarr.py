"""Our layout in zarr v3 (design §5): read on demand, chunk-aware.

Scalars and offsets load into RAM when the store opens and are checked (see
:mod:`._layout`); ``values`` stay on disk and a request reads each chunk it
touches once (see :mod:`._gather`). In a local directory store, chunks are
decoded straight into the result (see :mod:`._zarrchunks`); other stores go
through zarr-python. A ``dtype`` option casts scalars at open and values as they
are read (then chunks are decoded to a scratch array and cast, not decoded in place).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from lstm_data.errors import FormatError
from lstm_data.io.layout import (
    check_group_arrays,
    parse_layout,
    scalar_column,
    stored_array,
    value_dtype,
)
from lstm_data.io.ondisk import DiskGroup, OnDiskDataset
from lstm_data.io.zarr_chunks import ChunkDecoder

__all__ = ["ZarrDataset", "read_zarr", "is_zarr_v3"]


def is_zarr_v3(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a directory holding a zarr v3 root (``zarr.json``)."""
    return (Path(path) / "zarr.json").is_file()


class ZarrDataset(OnDiskDataset):
    """A dataset in our zarr v3 layout, values read per request.

    Parameters
    ----------
    path
        Store directory (``*.zarr``), or any zarr ``StoreLike`` (e.g. a wrapped store
        that counts reads).
    max_run_chunks
        Longest single read, in chunks.
    dtype
        ``float32`` or ``float64``: scalars are cast at open and values as they are
        read. Default: the stored dtypes.

    Raises
    ------
    FormatError
        Not our layout, or a stored array of the wrong dtype or shape, or offsets
        that do not start at 0, decrease or do not end at ``len(values)`` (named
        with file, variable or group, array and row; see :mod:`._layout`).
    ValueError
        ``dtype`` is not float32 or float64.

    Attributes
    ----------
    io_stats : IOStats
        ``chunks_read`` counts the ``values`` chunks read; ``per_chunk`` can track
        reads per chunk (``io_stats.track_chunks()``); ``hook`` is called per read.
    """

    def __init__(self, path, *, max_run_chunks: int = 32, dtype: Any = None) -> None:
        self._reopen = ((path,), {"max_run_chunks": max_run_chunks, "dtype": dtype})
        name = str(path)
        dt = value_dtype(dtype, file=name)
        try:
            root = zarr.open_group(path, mode="r", zarr_format=3)
        except (FileNotFoundError, ValueError, TypeError) as exc:
            raise FormatError(f"cannot open as a zarr v3 group ({exc})", file=name) from None
        layout = parse_layout(root.attrs.asdict(), file=name)
        n = layout["n_rows"]
        scalars = {var: scalar_column(var, key, _node(root, key, name, var), n, dt, file=name)
                   for var, key in layout["scalars"].items()}
        groups = {g: self._disk_group(root, g, spec, n, name, dt)
                  for g, spec in layout["groups"].items()}
        self._max_run_chunks = max_run_chunks
        self._setup(n, scalars, groups, (name,))

    def _disk_group(self, root, group: str, spec: dict, n: int, name: str,
                    dt: np.dtype | None) -> DiskGroup:
        key = spec["key"]
        values = _node(root, f"{key}/values", name, group)
        stored = np.asarray(_node(root, f"{key}/offsets", name, group)[...])
        width = len(spec["names"])
        offsets = check_group_arrays(group, stored, values, width, n, file=name, key=key)
        stored_dtype = np.dtype(values.dtype)
        direct = ChunkDecoder.for_array(values)
        if dt is not None and dt != stored_dtype:  # decode, then cast: no decoding into `out`
            raw = (lambda lo, hi: values[lo:hi]) if direct is None else direct.read
            read, read_into = (lambda lo, hi: raw(lo, hi).astype(dt)), None
        else:
            read = (lambda lo, hi: values[lo:hi]) if direct is None else direct.read
            read_into = None if direct is None else direct.read_into
        return DiskGroup(names=spec["names"], starts=offsets[:-1], ends=offsets[1:],
                         n_values=int(values.shape[0]), chunk_len=int(values.chunks[0]),
                         read=read, dtype=stored_dtype if dt is None else dt,
                         key=f"{group}/values", read_into=read_into)


def _node(root, key: str, name: str, variable: str) -> zarr.Array:
    """Array ``key`` of the store (see :func:`._layout.stored_array`)."""
    try:
        node = root[key]
    except KeyError:
        node = None
    return stored_array(node, isinstance(node, zarr.Array), key, file=name, variable=variable)


def read_zarr(path, **options) -> ZarrDataset:
    """Open our zarr v3 layout at ``path`` (see :class:`ZarrDataset`)."""
    return ZarrDataset(path, **options)
