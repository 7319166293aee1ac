"""Our layout in zarr v3 (design §5): read on demand, chunk-aware.

Scalars and offsets load into RAM when the store opens; ``values`` stay on disk
and a request reads each chunk it touches once (see :mod:`._gather`). In a local
directory store, chunks are decoded straight into the result (see
:mod:`._zarrchunks`); other stores go through zarr-python.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import zarr

from ..errors import FormatError
from ._layout import check_group_arrays, parse_layout
from ._ondisk import DiskGroup, OnDiskDataset
from ._zarrchunks import ChunkDecoder

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

    Attributes
    ----------
    io_stats : IOStats
        ``chunks_read`` counts the ``values`` chunks read; ``per_chunk`` can track
        reads per chunk (``io_stats.track_chunks()``); ``hook`` is called per read.
    """

    def __init__(self, path, *, max_run_chunks: int = 32) -> None:
        self._reopen = ((path,), {"max_run_chunks": max_run_chunks})
        name = str(path)
        try:
            root = zarr.open_group(path, mode="r", zarr_format=3)
        except (FileNotFoundError, ValueError, TypeError) as exc:
            raise FormatError(f"cannot open as a zarr v3 group ({exc})", file=name) from None
        layout = parse_layout(root.attrs.asdict(), file=name)
        n = layout["n_rows"]
        scalars = {}
        for var, key in layout["scalars"].items():
            col = np.asarray(root[key][:])
            if col.shape != (n,):
                raise FormatError(f"scalar has shape {col.shape}, expected ({n},)",
                                  file=name, variable=var)
            scalars[var] = col
        groups = {g: self._disk_group(root, g, spec, n, name, max_run_chunks)
                  for g, spec in layout["groups"].items()}
        self._max_run_chunks = max_run_chunks
        self._setup(n, scalars, groups, (name,))

    def _disk_group(self, root, group: str, spec: dict, n: int, name: str,
                    max_run_chunks: int) -> DiskGroup:
        sub = root[spec["key"]]
        offsets = np.asarray(sub["offsets"][:]).astype(np.int64, copy=False)
        values = sub["values"]
        width = len(spec["names"])
        check_group_arrays(group, offsets, values, width, n, file=name)
        direct = ChunkDecoder.for_array(values)
        return DiskGroup(names=spec["names"], starts=offsets[:-1], ends=offsets[1:],
                         n_values=int(values.shape[0]), chunk_len=int(values.chunks[0]),
                         read=(lambda lo, hi: values[lo:hi]) if direct is None else direct.read,
                         dtype=values.dtype, key=f"{group}/values",
                         read_into=None if direct is None else direct.read_into)


def read_zarr(path, **options) -> ZarrDataset:
    """Open our zarr v3 layout at ``path`` (see :class:`ZarrDataset`)."""
    return ZarrDataset(path, **options)
