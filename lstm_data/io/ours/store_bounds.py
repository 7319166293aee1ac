"""How large a file of a zarr v3 store may be, read or decoded, before anything trusts it.

* A metadata file (``zarr.json``, the manifest) is at most the size its manifest
  records, or :data:`META_MAX_BYTES` (no metadata file our writers make comes near):
  a larger one is a :class:`~lstm_data.errors.FormatError` naming the file and its
  size, refused before it is read (its size looked at on disk, a ranged read of one
  byte more over HTTP).
* A chunk file is at most what its manifest records, or what any encoding of one
  chunk takes (:func:`stored_bound`); and before zarr decodes it, its Blosc or Zstd
  frame must declare (or be bounded by) exactly one chunk's bytes
  (:func:`~lstm_data.io.plumbing.frames.check_decoded_size`), so a chunk replaced by
  a compression bomb is refused before a byte of it is inflated.

:func:`chunk_form` reads what a chunk must hold from an array's ``zarr.json``;
:func:`read_meta_file` reads a metadata file to its bound.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from lstm_data.errors import FormatError
from lstm_data.io.ours.store_files import read_store_file
from lstm_data.io.plumbing.frames import FrameError, check_decoded_size

__all__ = ["META_MAX_BYTES", "ChunkForm", "chunk_form", "stored_bound", "too_large", "read_meta_file"]

#: the largest metadata file read when no manifest records its size
META_MAX_BYTES = 64 << 20
#: the codecs whose frames are checked before decoding (``""``: none, the bytes as they are)
_COMPRESSORS = ("zstd", "blosc", "")


def stored_bound(nbytes: int) -> int:
    """The most bytes any encoding we decode (raw, Blosc, Zstd, and a checksum) takes for a chunk of
    ``nbytes`` bytes."""
    return nbytes + nbytes // 64 + 4096


def too_large(what: str, size: str, limit: int, file: str, why: str) -> FormatError:
    """The error for a file of ``size`` (in words), more than ``limit`` bytes (``why``: where that
    limit comes from)."""
    return FormatError(f"{what} is {size}, more than {why} ({limit:,} bytes): refused before it was "
                       "read (damaged, or not this store's)", file=file)


@dataclass(frozen=True)
class ChunkForm:
    """What every chunk of an array must be: ``nbytes`` decoded, encoded by ``codec`` (``"zstd"``,
    ``"blosc"`` or ``""``), with a CRC-32C ``trailer`` or not."""

    nbytes: int
    codec: str
    trailer: bool

    def check(self, raw: Any, what: str, file: str) -> None:
        """Raise :class:`FormatError` (naming ``what`` and ``file``) unless the chunk ``raw``'s frame
        decodes to one chunk, as its headers tell (nothing is decoded)."""
        frame = memoryview(raw)[:-4] if self.trailer else memoryview(raw)
        try:
            if self.codec:
                check_decoded_size(self.codec, frame, self.nbytes)
            elif len(frame) != self.nbytes:
                raise FrameError(f"is {len(frame)} bytes, expected {self.nbytes} (stored uncompressed)")
        except FrameError as exc:
            raise FormatError(f"{what} {exc}: the chunk file is damaged or belongs to another array",
                              file=file) from None


def _name(codec: Any) -> str | None:
    if isinstance(codec, str):
        return codec
    return codec.get("name") if isinstance(codec, Mapping) and isinstance(codec.get("name"), str) else None


def chunk_form(meta: Any) -> ChunkForm | None:
    """The :class:`ChunkForm` of an array from its parsed ``zarr.json`` (``None``: not an array, or
    chunks of a kind not checked here: sharded, transposed, other codecs)."""
    try:
        if meta.get("node_type") != "array" or meta["chunk_grid"]["name"] != "regular":
            return None
        shape = [int(n) for n in meta["chunk_grid"]["configuration"]["chunk_shape"]]
        itemsize = np.dtype(meta["data_type"]).itemsize
        names = [_name(c) for c in meta["codecs"]]
    except (AttributeError, KeyError, TypeError, ValueError):
        return None  # zarr says what is wrong with such metadata
    trailer = bool(names) and names[-1] == "crc32c"
    inner = names[:-1] if trailer else names
    if not inner or inner[0] != "bytes" or len(inner) > 2 or any(n is None for n in inner):
        return None
    codec = inner[1] if len(inner) == 2 else ""
    if codec not in _COMPRESSORS or min(shape, default=1) < 0:
        return None
    return ChunkForm(int(np.prod(shape, dtype=np.int64)) * itemsize, str(codec), trailer)


def read_meta_file(base: Any, key: str, name: str) -> bytes | None:
    """The bytes of metadata file ``key`` of the zarr store ``base`` (a local one's looked at first,
    see :func:`~lstm_data.io.ours.store_files.read_store_file`), or ``None`` when there is none; one
    larger than :data:`META_MAX_BYTES` is refused unread (``name``: the store, in errors)."""
    from zarr.abc.store import RangeByteRequest
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync
    from zarr.storage import LocalStore

    where = f"{name}/{key}"

    def check(size: int, more: bool = False) -> None:
        if size > META_MAX_BYTES:
            raise too_large(f"store file {key!r}", f"more than {META_MAX_BYTES:,} bytes" if more else
                            f"{size:,} bytes", META_MAX_BYTES, where, "any metadata file of a store may be")
    if isinstance(base, LocalStore):
        try:
            return read_store_file(os.path.join(str(base.root), key), what=f"store file {key!r}",
                                   file=where, check_size=check)[0]
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
    data = sync(base.get(key, default_buffer_prototype(), RangeByteRequest(0, META_MAX_BYTES + 1)))
    if data is None:
        return None
    check(len(data), more=True)
    return bytes(data.to_bytes())
