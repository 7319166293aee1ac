"""Decode row ranges of a zarr v3 array chunk by chunk, straight into the caller's buffer.

zarr-python's ``array[lo:hi]`` costs about a millisecond per call and copies every
decoded chunk once more into its result. For the arrays our writer makes (chunked
along rows only, ``bytes`` + one Blosc or Zstd codec, optionally followed by
``crc32c``, in a local directory store)
we can do better with the same codecs: read each chunk file once, decode whole
chunks directly into the output slice, and decode only the partial first and last
chunks through a scratch buffer. Anything else (sharding, transposes, remote or
wrapped stores) is left to zarr-python: :meth:`ChunkDecoder.for_array` then
returns ``None``.

A damaged chunk never reads as numbers. A chunk file that does not decode to
exactly one full chunk (``chunk_len`` records: zarr v3 stores edge chunks at full
size), e.g. a chunk copied from a store with other chunking or a truncated file,
that fails its CRC-32C checksum (verified before decoding, as zarr's ``crc32c``
codec does), or that the codec rejects, raises
:class:`~lstm_data.errors.FormatError` naming the chunk file and the array. The
size is checked against the frame headers *before* decoding
(:func:`~lstm_data.io.plumbing.frames.check_decoded_size`), because numcodecs'
``decode(out=)`` accepts a frame shorter than ``out`` and leaves the rest of
``out`` as it was, and a Zstd frame that declares no size would otherwise be
inflated whole, however large, before it could be counted. A decoder verifies a chunk file's checksum the first time it
reads it and again whenever the file changes (inode, size, modification or
change time); re-reads of the unchanged file skip it, so random batches, which
read each chunk many times per epoch, pay for the checksum once per chunk. In a
store with a manifest (:mod:`lstm_data.io.ours.manifest`), that first read also checks
that the chunk is the one recorded at its place (its size and the 4-byte CRC-32C
it ends with): a chunk moved to another position or array is an error.

A chunk file is looked at before it is read
(:func:`~lstm_data.io.ours.store_files.read_store_file`): a FIFO, a device or a socket
in its place (a symbolic link to ``/dev/zero``) is an error and never opened, and a
file whose size is not the manifest's record (without a manifest: larger than any
encoding of one chunk) is refused unread, a sparse file of gigabytes too.

A missing chunk file reads as the fill value, as in zarr: zarr-python (by default
``write_empty_chunks=False``) does not store chunks equal to the fill value, so
absence alone proves nothing. Our writer stores every chunk and says so (see
:mod:`lstm_data.io.ours.layout`); for its stores the reader passes
``fill_missing=False``, which makes a missing chunk an error.
"""
from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from lstm_data._util import forksafe
from lstm_data.errors import FormatError
from lstm_data.io.ours.store_bounds import stored_bound
from lstm_data.io.ours.store_files import read_store_file
from lstm_data.io.plumbing.frames import FrameError, check_decoded_size

if TYPE_CHECKING:
    import zarr

    from lstm_data.io.ours.manifest import Manifest

__all__ = ["ChunkDecoder"]

#: ranges of at least this many chunks are decoded on two threads
PARALLEL_MIN_CHUNKS = 4
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


class _Damaged(FrameError):
    """A chunk frame that cannot hold one chunk; the message completes "chunk i of array a"."""


def _forget_pool() -> None:
    """In a forked child: the pool's thread is gone, so a new pool is made at first use."""
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


forksafe.on_fork_in_child(_forget_pool)


def _decode_pool() -> ThreadPoolExecutor:
    """One helper thread shared by every decoder (created at first use)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lstm_data-decode")
        return _POOL


def _records(out: np.ndarray) -> str:
    """`` (n records of b bytes)``: what ``out`` holds, for messages."""
    return f" ({out.shape[0]} records of {out.nbytes // max(1, out.shape[0])} bytes)"


def _check_size(got: int, out: np.ndarray) -> None:
    """Raise :class:`_Damaged` unless ``got`` decoded bytes fill ``out`` exactly."""
    if got != out.nbytes:
        raise _Damaged(f"decodes to {got} bytes, expected {out.nbytes}{_records(out)}")


def _raw_copy(raw: bytes, out: np.ndarray) -> None:
    """``decode`` of an uncompressed chunk."""
    _check_size(len(raw), out)
    out.reshape(-1).view(np.uint8)[:] = np.frombuffer(raw, dtype=np.uint8)


def _blosc_decoder() -> Callable[[bytes, np.ndarray], None]:
    from numcodecs import Blosc

    codec = Blosc()  # every parameter is read from the chunk's own header

    def decode(raw: bytes, out: np.ndarray) -> None:
        check_decoded_size("blosc", raw, out.nbytes, _records(out))
        codec.decode(raw, out=out)
    return decode


def _zstd_decoder() -> Callable[[bytes, np.ndarray], None]:
    from numcodecs import Zstd

    codec = Zstd()

    def decode(raw: bytes, out: np.ndarray) -> None:
        if check_decoded_size("zstd", raw, out.nbytes, _records(out)):
            codec.decode(raw, out=out)  # declared sizes: numcodecs decodes into out, refusing more
            return
        data = np.frombuffer(codec.decode(raw), dtype=np.uint8)  # bounded above: then checked, copied
        _check_size(data.nbytes, out)
        out.reshape(-1).view(np.uint8)[:] = data
    return decode


class _Crc32cChecked:
    """``decode`` that verifies zarr's ``crc32c`` codec (a little-endian CRC-32C of the
    preceding bytes, appended as 4 bytes) before ``inner`` decodes the rest.

    :meth:`trusted` skips the check, for bytes already verified.
    """

    def __init__(self, inner: Callable[[Any, np.ndarray], None]) -> None:
        import google_crc32c  # zarr's own dependency, used by its crc32c codec

        self._inner = inner
        self._crc = google_crc32c.value

    def __call__(self, raw: bytes, out: np.ndarray) -> None:
        if len(raw) < 4:
            raise _Damaged(f"is {len(raw)} bytes long, shorter than its CRC-32C checksum")
        stored = int.from_bytes(raw[-4:], "little")
        computed = self._crc(np.frombuffer(raw, dtype=np.uint8)[:-4])
        if computed != stored:
            raise _Damaged(f"fails its CRC-32C checksum (stored {stored:#010x}, computed "
                           f"{computed:#010x})")
        self._inner(memoryview(raw)[:-4], out)

    def trusted(self, raw: bytes, out: np.ndarray) -> None:
        """Decode without verifying (``raw`` passed :meth:`__call__` before)."""
        self._inner(memoryview(raw)[:-4], out)


def _decoder_of(codecs: tuple[Any, ...], dtype: np.dtype[Any]) -> Callable[[bytes, np.ndarray], None] | None:
    """``decode(raw, out)`` for the codec chain ``codecs``, or ``None`` if not a plain one.

    The decoder raises :class:`_Damaged` when ``raw`` fails its checksum or does
    not decode to exactly ``out.nbytes`` bytes; codec failures propagate as the
    codec raises them.
    """
    from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, ZstdCodec

    if codecs and isinstance(codecs[-1], Crc32cCodec):
        inner = _decoder_of(codecs[:-1], dtype)
        return None if inner is None else _Crc32cChecked(inner)
    if not codecs or not isinstance(codecs[0], BytesCodec):
        return None
    endian = getattr(codecs[0], "endian", None)
    endian = getattr(endian, "value", endian)
    if dtype.itemsize > 1 and (not dtype.isnative or endian not in (None, sys.byteorder)):
        return None
    rest = codecs[1:]
    if not rest:
        return _raw_copy
    if len(rest) != 1:
        return None
    if isinstance(rest[0], BloscCodec):
        return _blosc_decoder()
    if isinstance(rest[0], ZstdCodec):
        return _zstd_decoder()
    return None


#: chunks each thread keeps, over every array and file, after decoding them for a part:
#: consecutive reads that share a chunk (batches in file order) decode it once, and the
#: memory held does not grow with the number of files open
KEPT_CHUNKS = 8


class _KeptChunks(threading.local):
    """Per thread, the last :data:`KEPT_CHUNKS` chunks decoded for a part of them, the most
    recent last: ``(decoder, chunk index, file identity, rows)``."""

    def __init__(self) -> None:
        self.entries: list[tuple[Any, int, tuple[int, int, int, int] | None, np.ndarray]] = []


_KEPT = _KeptChunks()


class ChunkDecoder:
    """Reads records ``lo:hi`` of a row-chunked zarr v3 array in a local directory store.

    Parameters
    ----------
    directory
        Directory of the array (holding its ``zarr.json``).
    chunk_key
        ``chunk_key(i)``: relative path of row chunk ``i``.
    shape, chunk_len, dtype, fill_value
        Of the array; every stored chunk holds ``chunk_len`` full rows (zarr v3
        stores edge chunks at full size).
    decode
        ``decode(raw, out)`` for one chunk (see :func:`_decoder_of`).
    name
        The array's path in its store, for error messages.
    fill_missing
        Whether a missing chunk file reads as ``fill_value`` (zarr's rule) rather
        than raising :class:`~lstm_data.errors.FormatError`.
    manifest
        The store's :class:`~lstm_data.io.ours.manifest.Manifest`, if it has one: each
        chunk file is then checked to be the one recorded at its place (once per
        file, with the checksum).

    Notes
    -----
    Thread-safe: calls share no state but the checksums passed (each thread keeps its own
    last partly read chunk), and the codecs release the GIL.
    """

    def __init__(self, directory: Path, chunk_key: Callable[[int], str], shape: tuple[int, ...],
                 chunk_len: int, dtype: np.dtype, fill_value: Any,
                 decode: Callable[[bytes, np.ndarray], None], *, name: str = "",
                 fill_missing: bool = True, manifest: Any = None) -> None:
        self.directory = Path(directory)
        self._directory = str(self.directory)
        self._files: dict[int, tuple[str, str]] = {}
        self.chunk_key = chunk_key
        self.shape = tuple(shape)
        self.chunk_len = int(chunk_len)
        self.dtype = np.dtype(dtype)
        self.fill_value = fill_value
        self.name = name or self.directory.name
        self.fill_missing = fill_missing
        self._decode = decode
        self._trusted = getattr(decode, "trusted", None)
        self._manifest = manifest
        #: chunk index -> (inode, size, mtime, ctime) of the file whose checksum passed
        self._verified: dict[int, tuple[int, int, int, int]] = {}
        self._chunk_bytes = self.chunk_len * int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize
        #: the largest chunk file an encoding we decode makes (raw, Blosc, Zstd; and a checksum)
        self._max_bytes = stored_bound(self._chunk_bytes)

    @classmethod
    def for_array(cls, array: zarr.Array[Any], *, fill_missing: bool = True,
                  manifest: Manifest | None = None) -> "ChunkDecoder | None":
        """A decoder for ``array`` (a ``zarr.Array``), or ``None`` when zarr-python must read it.

        ``fill_missing=False`` makes a missing chunk file an error: pass it only for
        arrays whose every chunk is known to be stored. ``manifest``: the store's
        manifest, to check each chunk's place. An array opened through a
        :class:`~lstm_data.io.ours.checked_store.CheckedStore` is read from its local store.
        """
        from zarr.core.chunk_grids import RegularChunkGrid
        from zarr.core.metadata import ArrayV3Metadata
        from zarr.storage import LocalStore

        from lstm_data.io.ours.checked_store import CheckedStore

        meta = array.metadata
        store = array.store.inner if isinstance(array.store, CheckedStore) else array.store
        if not isinstance(meta, ArrayV3Metadata) or not isinstance(store, LocalStore):
            return None
        if not isinstance(meta.chunk_grid, RegularChunkGrid) or array.ndim not in (1, 2):
            return None
        if tuple(array.chunks[1:]) != tuple(array.shape[1:]):  # chunked along rows only
            return None
        dtype = np.dtype(array.dtype)
        decode = _decoder_of(tuple(meta.codecs), dtype)
        if decode is None:
            return None
        width = array.shape[1:]
        return cls(Path(str(store.root)) / array.path,
                   lambda i: meta.encode_chunk_key((i,) + (0,) * len(width)),
                   array.shape, array.chunks[0], dtype, array.fill_value, decode,
                   name=array.path, fill_missing=fill_missing, manifest=manifest)

    def _file_of(self, i: int) -> tuple[str, str]:
        """Chunk ``i``'s key and file path (kept: both are asked for on every read)."""
        known = self._files.get(i)
        if known is None:
            key = self.chunk_key(i)
            known = self._files[i] = (key, os.path.join(self._directory, key))
        return known

    def _chunk(self, i: int, out: np.ndarray) -> tuple[int, int, int, int] | None:
        """Decode stored chunk ``i`` (``chunk_len`` rows) into ``out``; absent: the fill value.

        Returns the chunk file's identity (inode, size, mtime, ctime), or ``None`` when
        the chunk is absent.
        """
        key, path = self._file_of(i)
        what = f"chunk {i} of array {self.name!r}"

        def check_size(size: int) -> None:
            self._check_size(i, key, path, size)
        try:
            raw, st = read_store_file(path, what=what, check_size=check_size)
        except FormatError:
            raise
        except FileNotFoundError:  # zarr skips writing chunks that equal the fill value
            if not self.fill_missing:
                raise FormatError(f"{what} is missing (chunk key {key!r}): every chunk of "
                                  f"this array was written, so it was lost or deleted",
                                  file=str(path)) from None
            out[...] = self.fill_value
            return None
        except OSError as exc:
            raise FormatError(f"cannot read {what} ({exc})", file=str(path)) from None
        ident = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        known = self._verified.get(i) == ident
        try:
            if self._trusted is not None and known:
                self._trusted(raw, out)  # these bytes passed their checksum before
            else:
                self._decode(raw, out)
        except FrameError as exc:
            raise FormatError(f"{what} {exc}: the chunk file is damaged or belongs to "
                              f"another array", file=str(path)) from None
        except Exception as exc:  # noqa: BLE001 - any codec failure means a damaged chunk
            raise FormatError(f"cannot decode {what} ({type(exc).__name__}: {exc}): the chunk "
                              f"file is damaged", file=str(path)) from None
        if not known:
            if self._manifest is not None:  # the bytes are sound: are they this place's?
                self._manifest.check_chunk(self.name, key, raw, file=str(path), index=i,
                                           verified=True)
            self._verified[i] = ident
        return ident

    def _check_size(self, i: int, key: str, path: str, size: int) -> None:
        """Refuse chunk file ``i`` (``key`` at ``path``) of ``size`` bytes before reading it: a
        size other than the manifest's record, or (without a manifest) more than any encoding of
        one chunk takes (a sparse file of gigabytes, say)."""
        if self._manifest is not None:
            self._manifest.check_chunk_size(self.name, key, size, file=path, index=i)
        elif size > self._max_bytes:
            raise FormatError(f"chunk {i} of array {self.name!r} is {size:,} bytes on disk, more "
                              f"than any encoding of one chunk ({self._chunk_bytes:,} bytes) takes: "
                              "the chunk file is damaged or not this array's; it was not read",
                              file=path)

    def read_into(self, lo: int, hi: int, out: np.ndarray) -> None:
        """Decode records ``lo:hi`` into ``out`` (C-contiguous, shape ``(hi - lo, ...)``).

        Each chunk the range touches is read and decoded once; whole chunks go
        straight into ``out``. A range of several chunks is split between the
        calling thread and one helper (file reads and codecs release the GIL),
        so a caller waiting for its data gets it about twice as fast on 2 cores.

        Raises
        ------
        FormatError
            A touched chunk file is damaged (or missing, with ``fill_missing=False``).
        """
        if hi <= lo:
            return
        c = self.chunk_len
        first, last = lo // c, (hi - 1) // c
        if last - first + 1 < PARALLEL_MIN_CHUNKS:
            self._read_chunks(lo, hi, first, last, out, lo)
            return
        middle = (first + last + 1) // 2  # the helper takes chunks middle..last
        split = middle * c
        helper = _decode_pool().submit(self._read_chunks, split, hi, middle, last, out, lo)
        try:
            self._read_chunks(lo, split, first, middle - 1, out, lo)
        finally:
            helper.result()

    def _read_chunks(self, lo: int, hi: int, first: int, last: int, out: np.ndarray,
                     origin: int) -> None:
        """Decode records ``lo:hi`` (chunks ``first..last``) into ``out[lo - origin:]``."""
        c = self.chunk_len
        for i in range(first, last + 1):  # per chunk, never per row
            c_lo = i * c
            a, b = max(lo, c_lo), min(hi, c_lo + c)
            dest = out[a - origin:b - origin]
            if a == c_lo and b == c_lo + c and dest.flags.c_contiguous:
                self._chunk(i, dest)
                continue
            dest[...] = self._part_source(i)[a - c_lo:b - c_lo]

    def _part_source(self, i: int) -> np.ndarray:
        """Chunk ``i`` decoded, for a part of it: this thread's kept copy while its file is
        unchanged (same inode, size and times), else decoded now and kept (see :data:`KEPT_CHUNKS`)."""
        entries = _KEPT.entries
        for k, (owner, index, ident, rows) in enumerate(entries):
            if owner is self and index == i:
                del entries[k]
                if ident is not None and self._unchanged(i, ident):
                    entries.append((owner, index, ident, rows))  # the most recent last
                    return rows
                break
        shape = (self.chunk_len,) + self.shape[1:]
        buffer = None
        if len(entries) >= KEPT_CHUNKS:  # the oldest goes; its buffer is reused when it fits
            old = entries.pop(0)[3]
            if old.shape == shape and old.dtype == self.dtype:
                buffer = old
        if buffer is None:
            buffer = np.empty(shape, dtype=self.dtype)
        entries.append((self, i, self._chunk(i, buffer), buffer))
        return buffer

    def _unchanged(self, i: int, ident: tuple[int, int, int, int]) -> bool:
        try:
            st = os.stat(self._file_of(i)[1])
        except OSError:
            return False
        return ident == (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def read(self, lo: int, hi: int) -> np.ndarray:
        """Records ``lo:hi`` as a new array."""
        out = np.empty((max(0, hi - lo),) + self.shape[1:], dtype=self.dtype)
        self.read_into(lo, hi, out)
        return out
