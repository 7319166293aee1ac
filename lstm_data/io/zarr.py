"""Our layout in zarr v3 (design §5): read on demand, chunk-aware.

Scalars and offsets load into RAM when the store opens and are checked (see
:mod:`._layout`); ``values`` stay on disk and a request reads each chunk it
touches once (see :mod:`._gather`). In a local directory store, chunks are
decoded straight into the result (see :mod:`._zarrchunks`); other stores go
through zarr-python. A ``dtype`` option casts scalars at open and values as they
are read (then chunks are decoded to a scratch array and cast, not decoded in place).

Damage is a :class:`~lstm_data.errors.FormatError` naming the store, the array and
the chunk, on every read path:

* a missing chunk, in a store that records that every chunk was written
  (:data:`~lstm_data.io.layout.EVERY_CHUNK_ATTR`): our decoder is strict
  (``fill_missing=False``) and zarr-python reads through :func:`strict_group`'s
  store, which refuses to hand out "no such chunk" (zarr would fill it);
* a chunk whose CRC-32C checksum fails, or that does not decode: our decoder
  checks it; a zarr-python read that fails is retried chunk by chunk
  (:func:`read_rows`) to name the bad one.

Stores written before every chunk was stored keep opening; :attr:`ZarrDataset.notes`
says that a lost chunk there reads as zeros.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from zarr.storage import WrapperStore

from lstm_data.errors import FormatError
from lstm_data.io.layout import (
    OLD_ZARR_NOTE,
    check_group_arrays,
    every_chunk_stored,
    parse_layout,
    scalar_column,
    stored_array,
    value_dtype,
)
from lstm_data.io.ondisk import DiskGroup, OnDiskDataset
from lstm_data.io.zarr_chunks import ChunkDecoder

__all__ = ["ZarrDataset", "read_zarr", "is_zarr_v3", "strict_group", "read_rows"]

#: node metadata keys (zarr v3 and the v2 keys zarr probes for): never chunks
_META_KEYS = ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata")
#: what a store without a checksum codec in its chunks cannot detect
_NO_CHECKSUM_NOTE = ("its chunks carry no CRC-32C checksum: a damaged chunk file that still "
                     "decodes reads as other numbers; re-convert it to have damage detected")


def _split_chunk_key(key: str) -> tuple[str, str]:
    """``(array path, chunk key)`` of a store key such as ``png/values/c/3/0``."""
    if key.startswith("c/"):
        return "", key
    array, sep, rest = key.rpartition("/c/")
    if sep:
        return array, "c/" + rest
    array, _, rest = key.rpartition("/")
    return array, rest


class _EveryChunkStore(WrapperStore):
    """A store whose every chunk was written: a missing chunk is a ``FormatError``.

    zarr-python fills a chunk that its store says does not exist with the fill
    value; this store says instead that the chunk was lost, naming it.
    """

    def __init__(self, store, name: str = "") -> None:
        super().__init__(store)
        self.name = name

    def _with_store(self, store):
        return type(self)(store, self.name)

    async def get(self, key, prototype, byte_range=None):
        data = await super().get(key, prototype, byte_range)
        if data is None and key.rsplit("/", 1)[-1] not in _META_KEYS:
            array, chunk = _split_chunk_key(key)
            index = chunk[2:].split("/")[0] if chunk.startswith("c/") else chunk
            raise FormatError(f"chunk {index} of array {array!r} is missing (chunk key {chunk!r}): "
                              "every chunk of this store was written, so it was lost or deleted",
                              file=f"{self.name}/{key}" if self.name else key)
        return data


def strict_group(root: zarr.Group, name: str) -> zarr.Group:
    """``root`` reopened so that a missing chunk is an error, if its store records that
    every chunk was written (:func:`~lstm_data.io.layout.every_chunk_stored`); else ``root``.

    Parameters
    ----------
    root
        An open zarr v3 group.
    name
        The store (its path), named in errors.
    """
    if not every_chunk_stored(root.attrs.asdict()):
        return root
    return zarr.open_group(_EveryChunkStore(root.store, name), path=root.path, mode="r",
                           zarr_format=3)


def _chunk_file(array: zarr.Array, index: int, name: str) -> str:
    key = array.metadata.encode_chunk_key((index,) + (0,) * (array.ndim - 1))
    return f"{name}/{array.path}/{key}" if name else f"{array.path}/{key}"


def read_rows(array: zarr.Array, lo: int, hi: int, *, file: str) -> np.ndarray:
    """``array[lo:hi]`` through zarr-python; a chunk that does not read is a ``FormatError``.

    A failing read (a checksum that does not match, a frame the codec rejects) is
    retried one row chunk at a time to find and name the damaged chunk; if every
    chunk then reads, the original error is raised (it was not damage).

    Parameters
    ----------
    array
        A zarr array chunked along rows.
    lo, hi
        Rows to read.
    file
        The store, named in errors.
    """
    try:
        return array[lo:hi]
    except FormatError:
        raise
    except Exception as exc:  # codecs raise ValueError, RuntimeError, ...
        c = int(array.chunks[0]) if array.ndim else 1
        for i in range(lo // c, -(-hi // c)):
            try:
                array[i * c:(i + 1) * c]
            except FormatError:
                raise
            except Exception:  # noqa: BLE001 - the damaged chunk
                raise FormatError(f"cannot read chunk {i} of array {array.path!r} "
                                  f"({type(exc).__name__}: {exc}): the chunk is damaged",
                                  file=_chunk_file(array, i, file)) from exc
        raise


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
        with file, variable or group, array and row; see :mod:`._layout`). Also,
        at open or on a later read, a damaged or (in a store that records that every
        chunk was written) missing chunk, named with the store, array and chunk.
    ValueError
        ``dtype`` is not float32 or float64.

    Attributes
    ----------
    notes : tuple of str
        What this store cannot detect, for ``lstm-data inspect``: a store written
        before every chunk was stored (a lost chunk reads as zeros), chunks without
        checksums. Empty for stores written now.
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
        strict = strict_group(root, name)
        n = layout["n_rows"]
        scalars, opened = {}, []
        for var, key in layout["scalars"].items():
            opened.append(_node(strict, key, name, var))
            scalars[var] = scalar_column(var, key, _whole(opened[-1], name), n, dt, file=name)
        groups = {g: self._disk_group(root, strict, g, spec, n, name, dt, opened)
                  for g, spec in layout["groups"].items()}
        self._max_run_chunks = max_run_chunks
        self.notes = _notes(strict is not root, opened, name)
        self._setup(n, scalars, groups, (name,))

    def _disk_group(self, root, strict, group: str, spec: dict, n: int, name: str,
                    dt: np.dtype | None, opened: list) -> DiskGroup:
        key = spec["key"]
        values = _node(strict, f"{key}/values", name, group)
        offsets_array = _node(strict, f"{key}/offsets", name, group)
        opened += [values, offsets_array]
        stored = _whole(offsets_array, name)
        width = len(spec["names"])
        offsets = check_group_arrays(group, stored, values, width, n, file=name, key=key)
        stored_dtype = np.dtype(values.dtype)
        direct = ChunkDecoder.for_array(_node(root, f"{key}/values", name, group),
                                        fill_missing=strict is root)
        via_zarr = (lambda lo, hi: read_rows(values, lo, hi, file=name))
        if dt is not None and dt != stored_dtype:  # decode, then cast: no decoding into `out`
            raw = via_zarr if direct is None else direct.read
            read, read_into = (lambda lo, hi: raw(lo, hi).astype(dt)), None
        else:
            read = via_zarr if direct is None else direct.read
            read_into = None if direct is None else direct.read_into
        return DiskGroup(names=spec["names"], starts=offsets[:-1], ends=offsets[1:],
                         n_values=int(values.shape[0]), chunk_len=int(values.chunks[0]),
                         read=read, dtype=stored_dtype if dt is None else dt,
                         key=f"{group}/values", read_into=read_into)


def _whole(array: zarr.Array, name: str) -> np.ndarray:
    """All of a (small) array: a scalar column or offsets."""
    return np.asarray(read_rows(array, 0, array.shape[0], file=name))


def _notes(strict: bool, arrays: list[zarr.Array], name: str) -> tuple[str, ...]:
    """What the store at ``name``, of which ``arrays`` were opened, cannot detect."""
    from zarr.codecs import Crc32cCodec

    if not strict:
        return (f"{name}: {OLD_ZARR_NOTE}; re-convert it (lstm-data convert OLD.zarr NEW.zarr) to "
                "have damage detected"),
    if all(isinstance(a.metadata.codecs[-1], Crc32cCodec) for a in arrays):
        return ()
    return (f"{name}: {_NO_CHECKSUM_NOTE}",)


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
