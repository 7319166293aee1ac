"""Our layout in zarr v3: read on demand, chunk-aware.

Scalars and offsets load into RAM when the store opens and are checked (see
:mod:`._layout`); ``values`` stay on disk and a request reads each chunk it
touches once (see :mod:`._gather`). In a local directory store, chunks are
decoded straight into the result (see :mod:`._zarrchunks`); other stores go
through zarr-python. A ``dtype`` option casts scalars at open and values as they
are read (then chunks are decoded to a scratch array and cast, not decoded in place).

Damage is a :class:`~lstm_data.errors.FormatError` naming the store, the array and
the chunk, on every read path:

* a missing chunk, in a store that records that every chunk was written
  (:data:`~lstm_data.io.ours.layout.EVERY_CHUNK_ATTR`): our decoder is strict
  (``fill_missing=False``) and zarr-python reads through
  :class:`~lstm_data.io.ours.checked_store.CheckedStore`, which refuses to hand out
  "no such chunk" (zarr would fill it);
* a chunk moved, swapped or copied from another position, array or store, and
  edited or damaged metadata (``zarr.json``), in a store with a manifest
  (:mod:`lstm_data.io.ours.manifest`): every metadata file is checked before zarr
  parses it, every chunk as it is read;
* a chunk whose CRC-32C checksum fails, or that does not decode: our decoder
  checks it; a zarr-python read that fails is retried chunk by chunk
  (:func:`read_rows`) to name the bad one.

Stores written before every chunk was stored, or before manifests, keep opening;
:attr:`ZarrDataset.notes` says what is not detected there.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import zarr

from lstm_data._util.redact import redact
from lstm_data.errors import FormatError, RemoteError
from lstm_data.io.ours.checked_store import confine_node, open_checked, records_every_chunk
from lstm_data.io.ours.layout import (
    LAYOUT_ATTR,
    OLD_ZARR_NOTE,
    check_group_arrays,
    parse_layout,
    scalar_column,
    stored_array,
    value_dtype,
)
from lstm_data.io.ours.manifest import UNCHECKED_NOTE, Manifest, check_requires
from lstm_data.io.ours.ondisk import DiskGroup, OnDiskDataset
from lstm_data.io.plumbing.remote_errors import RemoteSettings
from lstm_data.io.ours.zarr_chunks import ChunkDecoder

if TYPE_CHECKING:
    from zarr.storage import StoreLike

__all__ = ["ZarrDataset", "read_zarr", "is_zarr_v3", "read_rows"]

#: what a store without a checksum codec in its chunks cannot detect
_NO_CHECKSUM_NOTE = ("its chunks carry no CRC-32C checksum: a damaged chunk file that still "
                     "decodes reads as other numbers; re-convert it to have damage detected")


def _chunk_file(array: zarr.Array[Any], index: int, name: str) -> str:
    key = array.metadata.encode_chunk_key((index,) + (0,) * (array.ndim - 1))
    return f"{name}/{array.path}/{key}" if name else f"{array.path}/{key}"


def read_rows(array: zarr.Array[Any], lo: int, hi: int, *, file: str) -> np.ndarray:
    """``array[lo:hi]`` through zarr-python; a chunk that does not read is a ``FormatError``.

    A failing read (a checksum that does not match, a frame the codec rejects) is
    retried one row chunk at a time to find and name the damaged chunk; if every
    chunk then reads, the original error is raised (it was not damage). A chunk
    that would decode to more than one chunk's bytes is refused before it is
    decoded (:mod:`lstm_data.io.ours.store_bounds`), so no read is retried after
    inflating one; a read that runs out of memory is not retried either.

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
        return np.asarray(array[lo:hi])
    except (FormatError, RemoteError):  # damage found by our checks, or a server's failure: said as such
        raise
    except MemoryError:  # never asked again: a retry would inflate the same chunks once more
        raise FormatError(f"rows {lo}:{hi} of array {array.path!r} do not fit in memory once decoded: "
                          "a chunk is damaged or not this array's", file=file) from None
    except Exception as exc:  # codecs raise ValueError, RuntimeError, ...
        c = int(array.chunks[0]) if array.ndim else 1
        for i in range(lo // c, -(-hi // c)):
            try:
                array[i * c:(i + 1) * c]
            except (FormatError, RemoteError):
                raise
            except Exception:  # noqa: BLE001 - the damaged chunk
                raise FormatError(f"cannot read chunk {i} of array {array.path!r} "
                                  f"({type(exc).__name__}: {exc}): the chunk is damaged",
                                  file=_chunk_file(array, i, file)) from exc
        raise


def is_zarr_v3(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a directory holding a zarr v3 root (``zarr.json``)."""
    return (Path(path) / "zarr.json").is_file()


class ZarrDataset(OnDiskDataset):
    """A dataset in our zarr v3 layout, values read per request.

    Parameters
    ----------
    path
        Store directory (``*.zarr``), or any zarr ``StoreLike`` (e.g. a wrapped store
        that counts reads).
    max_run_chunks, dtype
        As for :class:`~lstm_data.io.read_options.ReadOptions` (default: the stored
        dtypes; scalars are cast at open, values as they are read).
    remote
        Timeouts and retries of the reads of a store at a URL.

    Raises
    ------
    FormatError
        Not our layout, a store whose layout requires its manifest without one
        (deleted), or a stored array of the wrong dtype or shape, or offsets
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

    def __init__(self, path: StoreLike | os.PathLike[str], *, max_run_chunks: int = 32, dtype: Any = None,
                 remote: RemoteSettings | None = None) -> None:
        self._reopen = ((path,), {"max_run_chunks": max_run_chunks, "dtype": dtype, "remote": remote})
        name = redact(path)
        dt = value_dtype(dtype, file=name)
        try:
            root, manifest = open_checked(path, name, remote)
        except (FileNotFoundError, ValueError, TypeError) as exc:
            if isinstance(exc, FormatError):
                raise
            raise FormatError(f"cannot open as a zarr v3 group ({redact(exc)})", file=name) from None
        layout = parse_layout(root.attrs.asdict(), file=name)
        check_requires(layout.get("requires"), has_manifest=manifest is not None, name=name,
                       attribute=LAYOUT_ATTR, redo="Re-convert it (lstm-data convert) from its source")
        n = layout["n_rows"]
        scalars: dict[str, np.ndarray] = {}
        opened: list[zarr.Array[Any]] = []
        for var, key in layout["scalars"].items():
            opened.append(_node(root, key, name, var))
            scalars[var] = scalar_column(var, key, _whole(opened[-1], name), n, dt, file=name)
        groups = {g: self._disk_group(root, g, spec, n, name, dt, opened, manifest)
                  for g, spec in layout["groups"].items()}
        self._max_run_chunks = max_run_chunks
        self.notes = _notes(records_every_chunk(root), manifest is not None, opened, name)
        self._setup(n, scalars, groups, (name,))

    def _disk_group(self, root: zarr.Group, group: str, spec: dict[str, Any], n: int, name: str,
                    dt: np.dtype[Any] | None, opened: list[zarr.Array[Any]], manifest: Manifest | None) -> DiskGroup:
        key = spec["key"]
        root.get(key)  # its metadata is checked (a damaged one is an error), though not used
        values = _node(root, f"{key}/values", name, group)
        offsets_array = _node(root, f"{key}/offsets", name, group)
        opened += [values, offsets_array]
        stored = _whole(offsets_array, name)
        width = len(spec["names"])
        offsets = check_group_arrays(group, stored, values, width, n, file=name, key=key)
        stored_dtype = np.dtype(values.dtype)
        direct = ChunkDecoder.for_array(values, fill_missing=not records_every_chunk(root),
                                        manifest=manifest)
        def via_zarr(lo: int, hi: int) -> np.ndarray:
            return read_rows(values, lo, hi, file=name)

        read: Callable[[int, int], np.ndarray]
        read_into: Callable[[int, int, np.ndarray], None] | None
        if dt is not None and dt != stored_dtype:  # decode, then cast: no decoding into `out`
            raw = via_zarr if direct is None else direct.read
            cast_to = dt

            def read(lo: int, hi: int) -> np.ndarray:
                return raw(lo, hi).astype(cast_to)

            read_into = None
        else:
            read = via_zarr if direct is None else direct.read
            read_into = None if direct is None else direct.read_into
        return DiskGroup(names=spec["names"], starts=offsets[:-1], ends=offsets[1:],
                         n_values=int(values.shape[0]), chunk_len=int(values.chunks[0]),
                         read=read, dtype=stored_dtype if dt is None else dt,
                         key=f"{group}/values", read_into=read_into)


def _whole(array: zarr.Array[Any], name: str) -> np.ndarray:
    """All of a (small) array: a scalar column or offsets."""
    return np.asarray(read_rows(array, 0, array.shape[0], file=name))


def _notes(strict: bool, placed: bool, arrays: list[zarr.Array[Any]], name: str) -> tuple[str, ...]:
    """What the store at ``name``, of which ``arrays`` were opened, cannot detect (``strict``:
    every chunk recorded as written; ``placed``: it has a manifest)."""
    from zarr.codecs import Crc32cCodec
    from zarr.core.metadata import ArrayV3Metadata

    rewrite = "re-convert it (lstm-data convert OLD.zarr NEW.zarr) to have damage detected"
    if not strict:
        return (f"{name}: {OLD_ZARR_NOTE}; {rewrite}"),
    notes = [] if placed else [f"{name}: {UNCHECKED_NOTE}; {rewrite}"]
    if not all(isinstance(a.metadata, ArrayV3Metadata) and isinstance(a.metadata.codecs[-1], Crc32cCodec)
               for a in arrays):
        notes.append(f"{name}: {_NO_CHECKSUM_NOTE}")
    return tuple(notes)


def _node(root: zarr.Group, key: str, name: str, variable: str) -> zarr.Array[Any]:
    """Array ``key`` of the store (see :func:`._layout.stored_array`); metadata that zarr
    cannot make sense of is a ``FormatError`` naming its file."""
    confine_node(root, key, file=name, attr="lstm_data_layout")
    try:
        node: zarr.Array[Any] | zarr.Group | None = root[key]
    except KeyError:
        node = None
    except (FormatError, RemoteError):
        raise
    except Exception as exc:  # noqa: BLE001 - zarr's parse of a damaged zarr.json
        raise FormatError(f"metadata file '{key}/zarr.json' is damaged ({type(exc).__name__}: "
                          f"{exc})", file=f"{name}/{key}/zarr.json", variable=variable) from None
    return stored_array(node, zarr.Array, key, file=name, variable=variable)


def read_zarr(path: StoreLike | os.PathLike[str], **options: Any) -> ZarrDataset:
    """Open our zarr v3 layout at ``path`` (see :class:`ZarrDataset`)."""
    return ZarrDataset(path, **options)
