"""Write any :class:`~lstm_data.data.dataset.Dataset` in our layout (design §5), atomically.

Rows stream in blocks, so a big on-disk dataset never sits in RAM whole. Output
goes to a temporary sibling name that is renamed into place only when complete;
on error the temporary output is removed, and temporaries of earlier writers
that were killed are removed by the next write to the same output (see
:mod:`lstm_data._util.safe_output`). The layout attribute is written last, so
even an interrupted temporary store never opens as a complete one.

Damage reads as an error, never as numbers: zarr stores write every chunk (zarr
would leave out chunks equal to the fill value, so a lost chunk would read as
zeros) and record it (:data:`~lstm_data.io.layout.EVERY_CHUNK_ATTR`), and each
chunk ends with a CRC-32C checksum of its compressed bytes (zarr's ``crc32c``
codec); HDF5 datasets carry HDF5's ``fletcher32`` checksum filter.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable

import numpy as np

from lstm_data._util.safe_output import (
    check_not_input,
    remove_stale_temporaries,
    temp_path,
)
from lstm_data.io.layout import (
    CHUNK_BYTES,
    EVERY_CHUNK_ATTR,
    layout_attrs,
    make_layout,
    node_keys,
)

__all__ = ["write_zarr", "write_hdf5", "Progress"]

#: ``progress(bytes_done, bytes_total)``, in uncompressed column bytes
Progress = Callable[[int, int], None]

_BLOCK_BYTES = 64 << 20


class _AlignedAppender:
    """Append row blocks to a fixed-shape array, writing whole chunks only (no rewrites)."""

    def __init__(self, array, chunk_len: int) -> None:
        self._array = array
        self._chunk_len = chunk_len
        self._pending: list[np.ndarray] = []
        self._pending_len = 0
        self._cursor = 0

    def append(self, block: np.ndarray) -> None:
        self._pending.append(block)
        self._pending_len += len(block)
        if self._pending_len >= self._chunk_len:
            joined = np.concatenate(self._pending) if len(self._pending) > 1 else self._pending[0]
            cut = (len(joined) // self._chunk_len) * self._chunk_len
            self._write(joined[:cut])
            self._pending = [joined[cut:]]
            self._pending_len = len(joined) - cut

    def close(self) -> None:
        if self._pending_len:
            self._write(np.concatenate(self._pending))
        self._pending, self._pending_len = [], 0

    def _write(self, data: np.ndarray) -> None:
        if len(data):
            self._array[self._cursor:self._cursor + len(data)] = data
            self._cursor += len(data)


def _chunk_len(row_bytes: int, chunk_bytes: int) -> int:
    return max(1, chunk_bytes // max(1, row_bytes))


def _check_permutation(permutation, n: int) -> np.ndarray | None:
    if permutation is None:
        return None
    perm = np.asarray(permutation, dtype=np.intp)
    if perm.shape != (n,) or (n and not np.array_equal(np.bincount(perm, minlength=n),
                                                        np.ones(n, np.int64))):
        raise ValueError(f"permutation must reorder all {n} rows exactly once")
    return perm


def _plan(dataset, perm, chunk_bytes):
    """Dtypes, shapes, chunking and new offsets of every output column."""
    n = len(dataset)
    none = np.zeros(0, dtype=np.intp)
    scalar_dtypes = {s: dataset.scalar(s, none).dtype for s in dataset.scalar_names}
    groups = {}
    for g, names in dataset.groups.items():
        lengths = np.diff(dataset.offsets(g))
        if perm is not None:
            lengths = lengths[perm]
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        dtype = dataset.ragged(g, none)[0].dtype
        groups[g] = {"names": names, "offsets": offsets, "dtype": dtype,
                     "chunk": _chunk_len(len(names) * dtype.itemsize, chunk_bytes)}
    return scalar_dtypes, groups


def _stream(dataset, sink, *, permutation=None, progress: Progress | None = None,
            chunk_bytes: int = CHUNK_BYTES, block_bytes: int = _BLOCK_BYTES) -> None:
    """Copy ``dataset`` (optionally row-permuted) into ``sink`` block by block."""
    n = len(dataset)
    perm = _check_permutation(permutation, n)
    scalar_dtypes, groups = _plan(dataset, perm, chunk_bytes)
    scalar_keys, group_keys = node_keys(list(scalar_dtypes), {g: v["names"] for g, v in groups.items()})
    appenders = {}
    for s, dt in scalar_dtypes.items():
        chunk = _chunk_len(dt.itemsize, chunk_bytes)
        appenders[("s", s)] = _AlignedAppender(sink.array(scalar_keys[s], (n,), dt, (chunk,)), chunk)
    for g, spec in groups.items():
        key = group_keys[g]
        sink.group(key, {"names": spec["names"]})
        sink.array(f"{key}/offsets", (n + 1,), np.dtype(np.int64),
                   (_chunk_len(8, chunk_bytes),))[:] = spec["offsets"]
        shape = (int(spec["offsets"][-1]), len(spec["names"]))
        values = sink.array(f"{key}/values", shape, spec["dtype"], (spec["chunk"], shape[1]))
        appenders[("g", g)] = _AlignedAppender(values, spec["chunk"])
    row_bytes = sum(dt.itemsize for dt in scalar_dtypes.values()) + sum(
        spec["offsets"][-1] * len(spec["names"]) * spec["dtype"].itemsize / max(n, 1)
        for spec in groups.values())
    total_bytes = int(row_bytes * n)
    block = max(1, int(block_bytes // max(row_bytes, 1)))
    for a in range(0, n, block):
        b = min(n, a + block)
        rows = perm[a:b] if perm is not None else np.arange(a, b, dtype=np.intp)
        for s in scalar_dtypes:
            appenders[("s", s)].append(np.asarray(dataset.scalar(s, rows), dtype=scalar_dtypes[s]))
        for g, spec in groups.items():
            appenders[("g", g)].append(np.asarray(dataset.ragged(g, rows)[0], dtype=spec["dtype"]))
        if progress is not None:
            progress(int(row_bytes * b), total_bytes)
    for app in appenders.values():
        app.close()
    layout = make_layout(n, scalar_keys, group_keys, {g: v["names"] for g, v in groups.items()})
    sink.finish(layout)


class _ZarrSink:
    def __init__(self, path: Path, clevel: int, cname: str, checksum: bool) -> None:
        import zarr
        from zarr.codecs import BloscCodec, Crc32cCodec

        self._root = zarr.open_group(str(path), mode="w", zarr_format=3)
        blosc = BloscCodec(cname=cname, clevel=clevel, shuffle="shuffle")
        self._codecs = (blosc, Crc32cCodec()) if checksum else (blosc,)

    def group(self, key: str, attrs: dict) -> None:
        self._root.create_group(key, attributes=attrs)

    def array(self, key: str, shape, dtype, chunks):
        # every chunk is written, all-zero ones too: a missing chunk is then damage
        return self._root.create_array(key, shape=shape, dtype=dtype, chunks=chunks,
                                       compressors=self._codecs, fill_value=0,
                                       config={"write_empty_chunks": True})

    def finish(self, layout: dict) -> None:
        self._root.attrs.update({EVERY_CHUNK_ATTR: True, **layout_attrs(layout, as_json=False)})

    def close(self) -> None:
        pass


class _HDF5Sink:
    def __init__(self, path: Path, compression: str | None, level: int | None) -> None:
        import h5py

        self._file = h5py.File(path, "w")
        # fletcher32 checksums every chunk as stored (after compression), so a damaged
        # chunk is a read error whatever the filter; lzf alone would decode it to numbers
        self._filters: dict = {"fletcher32": True}
        if compression is not None:
            self._filters.update(compression=compression, shuffle=True)
        if compression == "gzip":
            self._filters["compression_opts"] = 4 if level is None else level

    def group(self, key: str, attrs: dict) -> None:
        grp = self._file.create_group(key)
        grp.attrs["names"] = list(attrs["names"])

    def array(self, key: str, shape, dtype, chunks):
        chunks = tuple(max(1, min(c, s)) for c, s in zip(chunks, shape))
        filters = self._filters if all(shape) else {}
        return self._file.create_dataset(key, shape=shape, dtype=dtype,
                                         chunks=chunks if all(shape) else None, **filters)

    def finish(self, layout: dict) -> None:
        self._file.attrs.update(layout_attrs(layout, as_json=True))

    def close(self) -> None:
        self._file.close()


def _atomic(path, make_sink, dataset, overwrite: bool, **stream_options) -> None:
    target = Path(path)
    check_not_input(target, getattr(dataset, "source", ()))
    if target.exists() and not overwrite:
        raise FileExistsError(f"{target} exists; pass overwrite=True (or --force) to replace it")
    remove_stale_temporaries(target)
    tmp = temp_path(target)
    try:
        sink = make_sink(tmp)
        try:
            _stream(dataset, sink, **stream_options)
        finally:
            sink.close()
        if target.exists():
            trash = temp_path(target, "old")
            os.replace(target, trash)
            os.replace(tmp, target)
            _remove(trash)
        else:
            os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists():
        path.unlink()


def write_zarr(dataset, path, *, permutation=None, progress: Progress | None = None,
               overwrite: bool = False, chunk_bytes: int = CHUNK_BYTES, clevel: int = 5,
               cname: str = "lz4", block_bytes: int = _BLOCK_BYTES, checksum: bool = True) -> None:
    """Write ``dataset`` to a zarr v3 store in our layout, atomically.

    Parameters
    ----------
    dataset
        Any :class:`~lstm_data.data.dataset.Dataset` (on-disk ones stream block by block).
    path
        Target directory (``*.zarr``).
    permutation
        Optional order of rows to write (a permutation of ``range(len(dataset))``),
        e.g. ``numpy.random.default_rng(seed).permutation(n)`` for pre-shuffled files.
    progress
        Called as ``progress(bytes_done, bytes_total)`` after each row block.
    overwrite
        Replace an existing ``path`` (only after the new store is complete).
    chunk_bytes
        Uncompressed size of one chunk (about 1 MiB).
    clevel, cname
        Blosc compression level and codec, always with byte shuffle. The default,
        lz4 at level 5, decodes float columns at several GB/s per core (zstd decodes
        at under 1 GB/s), so reading a chunk costs little more than copying it;
        ``cname="zstd"`` gives smaller stores for archives that are read rarely.
    block_bytes
        Uncompressed bytes per row block held in RAM while writing.
    checksum
        End every chunk with a CRC-32C of its compressed bytes (zarr's ``crc32c``
        codec), so a damaged chunk file is an error when read. Every chunk is
        written either way, so a lost one is an error too.
    """
    _atomic(path, lambda tmp: _ZarrSink(tmp, clevel, cname, checksum), dataset, overwrite,
            permutation=permutation, progress=progress, chunk_bytes=chunk_bytes,
            block_bytes=block_bytes)


def write_hdf5(dataset, path, *, permutation=None, progress: Progress | None = None,
               overwrite: bool = False, chunk_bytes: int = CHUNK_BYTES,
               compression: str | None = "gzip", level: int | None = None,
               block_bytes: int = _BLOCK_BYTES) -> None:
    """Write ``dataset`` to an HDF5 file in our layout, atomically.

    Parameters are those of :func:`write_zarr`, except the filters: ``compression``
    is ``"gzip"`` (``level`` 0-9, default 4) or ``"lzf"``, with byte shuffle, or
    ``None`` (uncompressed). Every chunked dataset carries HDF5's ``fletcher32``
    checksum, so a damaged chunk is an error when read, never other numbers.
    """
    if compression not in ("gzip", "lzf", None):
        raise ValueError(f"compression must be 'gzip', 'lzf' or None, got {compression!r}")
    _atomic(path, lambda tmp: _HDF5Sink(tmp, compression, level), dataset, overwrite,
            permutation=permutation, progress=progress, chunk_bytes=chunk_bytes,
            block_bytes=block_bytes)
