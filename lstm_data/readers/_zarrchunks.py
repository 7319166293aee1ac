"""Decode row ranges of a zarr v3 array chunk by chunk, straight into the caller's buffer.

zarr-python's ``array[lo:hi]`` costs about a millisecond per call and copies every
decoded chunk once more into its result. For the arrays our writer makes (chunked
along rows only, ``bytes`` + one Blosc or Zstd codec, in a local directory store)
we can do better with the same codecs: read each chunk file once, decode whole
chunks directly into the output slice, and decode only the partial first and last
chunks through a scratch buffer. Anything else (sharding, transposes, remote or
wrapped stores) is left to zarr-python: :meth:`ChunkDecoder.for_array` then
returns ``None``.
"""
from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import numpy as np

__all__ = ["ChunkDecoder"]

#: ranges of at least this many chunks are decoded on two threads
PARALLEL_MIN_CHUNKS = 4
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _decode_pool() -> ThreadPoolExecutor:
    """One helper thread shared by every decoder (created at first use)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lstm_data-decode")
        return _POOL


def _decoder_of(codecs: tuple, dtype: np.dtype) -> Callable[[bytes, np.ndarray], None] | None:
    """``decode(raw, out)`` for the codec chain ``codecs``, or ``None`` if not a plain one."""
    from zarr.codecs import BloscCodec, BytesCodec, ZstdCodec

    if not codecs or not isinstance(codecs[0], BytesCodec):
        return None
    endian = getattr(codecs[0], "endian", None)
    endian = getattr(endian, "value", endian)
    if dtype.itemsize > 1 and (not dtype.isnative or endian not in (None, sys.byteorder)):
        return None
    rest = codecs[1:]
    if not rest:
        def raw_copy(raw: bytes, out: np.ndarray) -> None:
            out.reshape(-1).view(np.uint8)[:] = np.frombuffer(raw, dtype=np.uint8)
        return raw_copy
    if len(rest) != 1:
        return None
    if isinstance(rest[0], BloscCodec):
        from numcodecs import Blosc

        codec: Any = Blosc()  # every parameter is read from the chunk's own header
    elif isinstance(rest[0], ZstdCodec):
        from numcodecs import Zstd

        codec = Zstd()
    else:
        return None

    def decode(raw: bytes, out: np.ndarray) -> None:
        codec.decode(raw, out=out)
    return decode


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
        ``decode(raw, out)`` for one chunk.

    Notes
    -----
    Thread-safe: no state is shared between calls, and the codecs release the GIL.
    """

    def __init__(self, directory: Path, chunk_key: Callable[[int], str], shape: tuple[int, ...],
                 chunk_len: int, dtype: np.dtype, fill_value: Any,
                 decode: Callable[[bytes, np.ndarray], None]) -> None:
        self.directory = Path(directory)
        self.chunk_key = chunk_key
        self.shape = tuple(shape)
        self.chunk_len = int(chunk_len)
        self.dtype = np.dtype(dtype)
        self.fill_value = fill_value
        self._decode = decode

    @classmethod
    def for_array(cls, array) -> "ChunkDecoder | None":
        """A decoder for ``array`` (a ``zarr.Array``), or ``None`` when zarr-python must read it."""
        from zarr.core.chunk_grids import RegularChunkGrid
        from zarr.storage import LocalStore

        meta = array.metadata
        if getattr(meta, "zarr_format", None) != 3 or not isinstance(array.store, LocalStore):
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
        return cls(Path(str(array.store.root)) / array.path,
                   lambda i: meta.encode_chunk_key((i,) + (0,) * len(width)),
                   array.shape, array.chunks[0], dtype, array.fill_value, decode)

    def _chunk(self, i: int, out: np.ndarray) -> None:
        """Decode stored chunk ``i`` (``chunk_len`` rows) into ``out``; absent: the fill value."""
        try:
            raw = (self.directory / self.chunk_key(i)).read_bytes()
        except FileNotFoundError:  # zarr skips writing chunks that equal the fill value
            out[...] = self.fill_value
            return
        self._decode(raw, out)

    def read_into(self, lo: int, hi: int, out: np.ndarray) -> None:
        """Decode records ``lo:hi`` into ``out`` (C-contiguous, shape ``(hi - lo, ...)``).

        Each chunk the range touches is read and decoded once; whole chunks go
        straight into ``out``. A range of several chunks is split between the
        calling thread and one helper (file reads and codecs release the GIL),
        so a caller waiting for its data gets it about twice as fast on 2 cores.
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
        scratch = None
        for i in range(first, last + 1):  # per chunk, never per row
            c_lo = i * c
            a, b = max(lo, c_lo), min(hi, c_lo + c)
            dest = out[a - origin:b - origin]
            if a == c_lo and b == c_lo + c and dest.flags.c_contiguous:
                self._chunk(i, dest)
                continue
            if scratch is None:
                scratch = np.empty((c,) + self.shape[1:], dtype=self.dtype)
            self._chunk(i, scratch)
            dest[...] = scratch[a - c_lo:b - c_lo]

    def read(self, lo: int, hi: int) -> np.ndarray:
        """Records ``lo:hi`` as a new array."""
        out = np.empty((max(0, hi - lo),) + self.shape[1:], dtype=self.dtype)
        self.read_into(lo, hi, out)
        return out
