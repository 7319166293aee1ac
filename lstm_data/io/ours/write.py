"""Write any :class:`~lstm_data.data.dataset.Dataset` in our layout, atomically.

Rows stream in blocks, so a big on-disk dataset never sits in RAM whole. Output
goes to a temporary sibling name that is renamed into place only when complete;
on error the temporary output is removed, and temporaries of earlier writers
that were killed are removed by the next write to the same output (see
:mod:`lstm_data._util.safe_output`). The layout attribute is written last, so
even an interrupted temporary store never opens as a complete one.

Damage reads as an error, never as numbers: zarr stores write every chunk (zarr
would leave out chunks equal to the fill value, so a lost chunk would read as
zeros) and record it (:data:`~lstm_data.io.ours.layout.EVERY_CHUNK_ATTR`), each
chunk ends with a CRC-32C checksum of its compressed bytes (zarr's ``crc32c``
codec), and a manifest written last records every file's place and digest
(:mod:`lstm_data.io.ours.manifest`); HDF5 datasets carry HDF5's ``fletcher32``
checksum filter.
"""
from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Protocol

import numpy as np

from lstm_data._util.exclusive import output_lock
from lstm_data._util.safe_output import (
    check_not_input,
    remove_path,
    remove_stale_temporaries,
    temp_path,
)
from lstm_data.io.ours.hdf5_out import HDF5Sink
from lstm_data.io.ours.layout import (
    CHUNK_BYTES,
    EVERY_CHUNK_ATTR,
    layout_attrs,
    make_layout,
    node_keys,
)
from lstm_data.io.ours.manifest import MANIFEST_ATTR, REQUIRES, write_manifest
from lstm_data.io.ours.ownership import check_target, put_in_place
from lstm_data.io.ours.row_blocks import (
    BLOCK_BYTES,
    RestartStream,
    RowBlocks,
    dataset_blocks,
)

if TYPE_CHECKING:
    import zarr

    from lstm_data.data.dataset import Dataset

__all__ = ["write_zarr", "write_hdf5", "Progress", "ZarrOutput", "OutputArrays", "OutArray", "Sink", "BloscName"]

#: ``progress(bytes_done, bytes_total)``, in uncompressed column bytes
Progress = Callable[[int, int], None]

#: the Blosc codecs a zarr output may use
BloscName = Literal["lz4", "lz4hc", "blosclz", "snappy", "zlib", "zstd"]

_BLOCK_BYTES = BLOCK_BYTES
#: errors of a device that cannot take the output (named as the output's, not a chunk file's)
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS)


class OutArray(Protocol):
    """An output array (zarr, or a checked h5py dataset): rows written by slice, resized as it grows."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    def resize(self, shape: tuple[int, ...]) -> None: ...

    def __setitem__(self, key: Any, value: Any) -> None: ...


class Sink(Protocol):
    """Where an output's arrays are made (a zarr store, an HDF5 file): our layout's nodes, then the layout."""

    def group(self, key: str, attrs: dict[str, Any]) -> None: ...

    def array(self, key: str, row_shape: tuple[int, ...], dtype: np.dtype[Any], chunk_len: int,
              length: int = 0) -> OutArray: ...

    def finish(self, layout: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class _GrowingAppender:
    """Append row blocks to an array that grows with them, writing whole chunks only.

    The array's length is not known while rows stream in (text is parsed as it is
    read): it grows in steps (doubling) as whole chunks are written, and takes its
    final length at :meth:`close`, when the last, partial chunk is written. Every
    chunk is written once, whole, so the store is the same whatever the block sizes.
    """

    def __init__(self, array: OutArray, chunk_len: int) -> None:
        self._array = array
        self._chunk_len = chunk_len
        self._pending: list[np.ndarray] = []
        self._pending_len = 0
        self._cursor = 0
        self._capacity = int(array.shape[0])

    def append(self, block: np.ndarray) -> None:
        self._pending.append(block)
        self._pending_len += len(block)
        if self._pending_len >= self._chunk_len:
            joined = np.concatenate(self._pending) if len(self._pending) > 1 else self._pending[0]
            cut = (len(joined) // self._chunk_len) * self._chunk_len
            self._write(joined[:cut], final=False)
            self._pending = [joined[cut:]]
            self._pending_len = len(joined) - cut

    def close(self) -> int:
        """Write what is pending, give the array its final length and return it."""
        rest = np.concatenate(self._pending) if len(self._pending) > 1 else (
            self._pending[0] if self._pending else None)
        self._pending, self._pending_len = [], 0
        final = self._cursor + (0 if rest is None else len(rest))
        self._resize(final)
        if rest is not None and len(rest):
            self._write(rest, final=True)
        return final

    def _resize(self, length: int) -> None:
        if length != self._capacity:
            self._array.resize((length,) + tuple(self._array.shape[1:]))
            self._capacity = length

    def _write(self, data: np.ndarray, final: bool) -> None:
        if not len(data):
            return
        end = self._cursor + len(data)
        if end > self._capacity and not final:
            self._resize(max(end, 2 * self._capacity))
        self._array[self._cursor:end] = data
        self._cursor = end


def _chunk_len(row_bytes: int, chunk_bytes: int) -> int:
    return max(1, chunk_bytes // max(1, row_bytes))


def _check_permutation(permutation: Any, n: int) -> np.ndarray | None:
    if permutation is None:
        return None
    perm = np.asarray(permutation, dtype=np.intp)
    if perm.shape != (n,) or (n and not np.array_equal(np.bincount(perm, minlength=n),
                                                        np.ones(n, np.int64))):
        raise ValueError(f"permutation must reorder all {n} rows exactly once")
    return perm


@dataclass
class OutputArrays:
    """The arrays of one output in our layout, keyed ``("s", scalar)``, ``("o", group)``
    (offsets) and ``("g", group)`` (values), with their chunk lengths and store keys."""

    arrays: dict[tuple[str, str], OutArray]
    chunks: dict[tuple[str, str], int]
    keys: dict[tuple[str, str], str]
    scalar_keys: dict[str, str]
    group_keys: dict[str, str]


def _create(columns: RowBlocks, sink: Sink, chunk_bytes: int, n_rows: int = 0,
            totals: Mapping[str, int] | None = None) -> OutputArrays:
    """Create every array of ``columns``' layout in ``sink``: empty (to grow) or at their final
    lengths (``n_rows`` rows, ``totals[group]`` prong records), with the same chunks either way.

    An array whose final length ``columns`` knows before reading is cut into the number of
    equal chunks whose size is nearest ``chunk_bytes`` (so between 2/3 and 3/2 of it, or the
    whole array when smaller), ending with the array: a reader never decodes a chunk that is
    mostly padding (a small file's one chunk, a last chunk).
    """
    scalar_keys, group_keys = node_keys(columns.scalar_names, columns.groups)
    out = OutputArrays({}, {}, {}, scalar_keys, group_keys)
    rows_known, totals_known = columns.n_rows, columns.group_totals  # not ``n_rows``/``totals``: a
    # store filled in parts has the chunks of the same input streamed by one process

    def add(kind: str, name: str, key: str, length: int, row_shape: tuple[int, ...], dtype: Any,
            final: int | None) -> None:
        chunk = _chunk_len(int(np.prod(row_shape, dtype=np.int64)) * np.dtype(dtype).itemsize, chunk_bytes)
        if final is not None:  # the count of equal chunks nearest the size asked, none mostly padding
            n_chunks = max(1, round(max(1, final) / chunk))
            chunk = -(-max(1, final) // n_chunks)
        out.arrays[(kind, name)] = sink.array(key, row_shape, np.dtype(dtype), chunk, length=length)
        out.chunks[(kind, name)], out.keys[(kind, name)] = chunk, key

    for s, dt in columns.scalar_dtypes.items():
        add("s", s, scalar_keys[s], n_rows, (), dt, rows_known)
    for g, names in columns.groups.items():
        key = group_keys[g]
        sink.group(key, {"names": names})
        add("o", g, f"{key}/offsets", n_rows + 1 if totals is not None else 0, (), np.int64,
            None if rows_known is None else rows_known + 1)
        add("g", g, f"{key}/values", 0 if totals is None else int(totals[g]), (len(names),),
            columns.group_dtypes[g], None if totals_known is None else int(totals_known[g]))
    return out


def _stream(source: RowBlocks, sink: Sink, *, progress: Progress | None = None,
            chunk_bytes: int = CHUNK_BYTES) -> None:
    """Write the blocks of ``source`` into ``sink`` as they come (offsets shifted by the running total)."""
    out = _create(source, sink, chunk_bytes)
    appenders = {k: _GrowingAppender(a, out.chunks[k]) for k, a in out.arrays.items()}
    totals = dict.fromkeys(source.groups, 0)
    for g in source.groups:
        appenders[("o", g)].append(np.zeros(1, dtype=np.int64))
    n = 0
    for block, done in source.blocks():
        for s, dt in source.scalar_dtypes.items():
            appenders[("s", s)].append(np.asarray(block.scalar(s), dtype=dt))
        for g in source.groups:
            values, offsets = block.ragged(g)
            start = int(offsets[0])
            appenders[("o", g)].append(offsets[1:] - start + totals[g])
            appenders[("g", g)].append(np.asarray(values[start:int(offsets[-1])],
                                                  dtype=source.group_dtypes[g]))
            totals[g] += int(offsets[-1]) - start
        n += len(block)
        if progress is not None:
            progress(done, source.total)
    for app in appenders.values():
        app.close()
    sink.finish(make_layout(n, out.scalar_keys, out.group_keys, source.groups))


class ZarrOutput:
    """An output store in our zarr layout whose arrays have their final lengths, for writers
    that fill element ranges in several processes (:mod:`lstm_data.io.ours.chunk_ranges`).

    Same arrays, chunks and codecs as :func:`write_zarr` makes, so the filled store is
    bitwise the streamed one. Call :meth:`finish` once every chunk is written: it
    records the layout (last, so an unfinished store never opens as complete).
    """

    def __init__(self, path: str | os.PathLike[str], columns: RowBlocks, n_rows: int,
                 totals: Mapping[str, int], *, chunk_bytes: int = CHUNK_BYTES, clevel: int = 5,
                 cname: BloscName = "lz4", checksum: bool = True) -> None:
        self.path = str(path)
        self._sink = _ZarrSink(Path(path), clevel, cname, checksum)
        self.columns, self.n_rows = columns, int(n_rows)
        self.arrays = _create(columns, self._sink, chunk_bytes, n_rows, totals)

    def finish(self) -> None:
        self._sink.finish(make_layout(self.n_rows, self.arrays.scalar_keys, self.arrays.group_keys,
                                      self.columns.groups))


class _ZarrSink:
    def __init__(self, path: Path, clevel: int, cname: BloscName, checksum: bool) -> None:
        import zarr
        from zarr.codecs import BloscCodec, Crc32cCodec

        from lstm_data.io.ours.checked_store import quiet_leftover_tasks

        quiet_leftover_tasks()
        self._path = Path(path)
        self._root = zarr.open_group(str(path), mode="w", zarr_format=3)
        blosc = BloscCodec(cname=cname, clevel=clevel, shuffle="shuffle")
        self._codecs = (blosc, Crc32cCodec()) if checksum else (blosc,)

    def group(self, key: str, attrs: dict[str, Any]) -> None:
        self._root.create_group(key, attributes=attrs)

    def array(self, key: str, row_shape: tuple[int, ...], dtype: np.dtype[Any], chunk_len: int,
              length: int = 0) -> zarr.Array[Any]:
        """An array of ``length`` rows of ``row_shape`` (0: to grow), chunked ``chunk_len`` rows."""
        # every chunk is written, all-zero ones too: a missing chunk is then damage
        return self._root.create_array(key, shape=(length,) + row_shape, dtype=dtype,
                                       chunks=(chunk_len,) + row_shape, compressors=self._codecs,
                                       fill_value=0, config={"write_empty_chunks": True})

    def finish(self, layout: dict[str, Any]) -> None:
        # the layout, which every reader reads first, records that the store requires its manifest
        self._root.attrs.update({EVERY_CHUNK_ATTR: True, MANIFEST_ATTR: True,
                                 **layout_attrs({**layout, "requires": list(REQUIRES)}, as_json=False)})
        write_manifest(self._path)  # last: it records every file, the root's zarr.json too

    def close(self) -> None:
        pass


def _blocks_of(data: Dataset | RowBlocks, permutation: Any, block_bytes: int) -> RowBlocks:
    """``data`` (a Dataset, or RowBlocks already) as RowBlocks."""
    if isinstance(data, RowBlocks):
        if permutation is not None:
            raise ValueError("permutation reorders a Dataset; a streamed input is shuffled by "
                             "lstm_data.io.ours.external_shuffle")
        return data
    return dataset_blocks(data, _check_permutation(permutation, len(data)), block_bytes)


def _settle_zarr() -> None:
    """Let zarr's pending writes end (imported here: importing ``lstm_data.io`` must not import zarr)."""
    import sys

    if "zarr" in sys.modules:
        from lstm_data.io.ours.checked_store import settle_zarr

        settle_zarr()


def _atomic(path: str | os.PathLike[str], make_sink: Callable[[Path], Sink],
            dataset: Dataset | RowBlocks, overwrite: bool, *, permutation: Any = None, block_bytes: int,
            **stream_options: Any) -> None:
    target = Path(path)
    source = _blocks_of(dataset, permutation, block_bytes)
    check_not_input(target, source.source)
    with output_lock(target):  # a second writer of the same output fails here, at once
        check_target(target, overwrite)
        remove_stale_temporaries(target)
        tmp = temp_path(target)
        try:
            for attempt in (1, 2):
                sink = make_sink(tmp)
                try:
                    _stream(source, sink, **stream_options)
                    break
                except RestartStream:  # the stream made its blocks wrong; it makes them right once more
                    if attempt == 2:
                        raise
                finally:
                    sink.close()
                remove_path(tmp)
            put_in_place(tmp, target, overwrite)
        except OSError as exc:
            _settle_zarr()  # zarr's sibling writes of a failed one still run: let them end first
            remove_path(tmp)
            if exc.errno in _NO_SPACE and exc.filename != str(target):
                raise OSError(exc.errno, f"cannot write {target}: {exc.strerror or exc}",
                              str(target)) from exc
            raise
        except BaseException:
            _settle_zarr()
            remove_path(tmp)
            raise


def write_zarr(dataset: Dataset | RowBlocks, path: str | os.PathLike[str], *, permutation: Any = None,
               progress: Progress | None = None, overwrite: bool = False, chunk_bytes: int = CHUNK_BYTES,
               clevel: int = 5, cname: BloscName = "lz4", block_bytes: int = _BLOCK_BYTES, checksum: bool = True) -> None:
    """Write ``dataset`` to a zarr v3 store in our layout, atomically.

    Parameters
    ----------
    dataset
        Any :class:`~lstm_data.data.dataset.Dataset` (written block by block), or a
        :class:`~lstm_data.io.ours.row_blocks.RowBlocks` stream (e.g. CSV text parsed as it is
        read): the output grows as blocks arrive, so RAM holds one block, whatever the size.
    path
        Target directory (``*.zarr``).
    permutation
        Optional order of rows to write (a permutation of ``range(len(dataset))``),
        e.g. ``numpy.random.default_rng(seed).permutation(n)`` for pre-shuffled files.
    progress
        Called as ``progress(bytes_done, bytes_total)`` after each row block.
    overwrite
        Replace an existing ``path`` (only after the new store is complete), if it is a
        store or file lstm_data wrote (:mod:`lstm_data.io.ours.ownership`); anything else is
        refused. Without it, an output that another process creates meanwhile is never
        replaced, and a second writer of the same output fails at once.
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


def write_hdf5(dataset: Dataset | RowBlocks, path: str | os.PathLike[str], *, permutation: Any = None,
               progress: Progress | None = None, overwrite: bool = False, chunk_bytes: int = CHUNK_BYTES,
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
    _atomic(path, lambda tmp: HDF5Sink(tmp, compression, level, name=str(path)), dataset, overwrite,
            permutation=permutation, progress=progress, chunk_bytes=chunk_bytes,
            block_bytes=block_bytes)
