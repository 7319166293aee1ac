"""Blocks of (decompressed) bytes from a file, read ahead in a background thread.

The compression is found from the first bytes (gzip ``1f 8b``, xz ``fd 37 7a 58
5a 00``, bzip2 ``BZh``), not from the extension. zlib, liblzma and libbz2
release the GIL while they work, so decompressing the next block overlaps the
parsing of this one. A gzip member's CRC32 is computed by the reader of the
text, not by the inflating thread (:mod:`lstm_data.io.plumbing.gzip_raw`). With ``threads > 1``, the blocks of a multi-block ``.xz``
(``xz -T0``) decompress on that many threads (:mod:`lstm_data.io.plumbing.xz_blocks`).
A truncated or damaged stream raises :class:`~lstm_data.FormatError` naming
the file. A named pipe or ``-`` (standard input) is read the same way, once: its
compression is found from the first bytes read (:mod:`lstm_data.io.plumbing.special`).
"""
from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import os
import queue
import threading
import zlib
from types import TracebackType
from typing import BinaryIO, Callable, Generator, Iterator

from lstm_data.errors import FormatError
from lstm_data.io.plumbing.gzip_raw import Check, RawReader, Trailer, gzip_chunks
from lstm_data.io.plumbing.special import is_stream, open_stream
from lstm_data.io.plumbing.signatures import COMPRESSION_MAGIC
from lstm_data.io.plumbing.xz_blocks import decode_blocks, xz_blocks

__all__ = ["compression_of", "BlockReader", "DEFAULT_BLOCK_SIZE"]

#: bytes of decompressed text per block
DEFAULT_BLOCK_SIZE = 4 << 20
_DAMAGE = (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile, OSError, ValueError)


def compression_of(path: str | os.PathLike[str]) -> str | None:
    """``"gzip"``, ``"xz"``, ``"bzip2"`` or ``None`` (plain), from the magic bytes.

    ``None`` for a stream (a pipe, ``-``), which is not read here: a
    :class:`BlockReader` finds its compression as it reads it.
    """
    if is_stream(path):
        return None
    with open(path, "rb") as fh:
        head = fh.read(6)
    return _compression(head)


def _compression(head: bytes) -> str | None:
    for magic, name in COMPRESSION_MAGIC:
        if head.startswith(magic):
            return name
    return None


_DECOMPRESSORS: dict[str, Callable[[], lzma.LZMADecompressor | bz2.BZ2Decompressor]] = {
    "xz": lzma.LZMADecompressor,
    "bzip2": bz2.BZ2Decompressor,
}
#: compressed bytes read from disk at a time
RAW_CHUNK = 1 << 20
#: ... and at least this many (a tiny ``block_size`` is for tests)
MIN_RAW_CHUNK = 64


def decompressed_chunks(raw: RawReader, kind: str, raw_chunk: int = RAW_CHUNK,
                        out_chunk: int = DEFAULT_BLOCK_SIZE) -> Iterator[bytes]:
    """Decompress ``raw`` (xz or bzip2) chunk by chunk, across concatenated streams, in
    pieces of at most ``out_chunk`` bytes: however far a chunk expands, no more than that
    is decompressed before the consumer takes it.

    Raises
    ------
    EOFError
        The data ends inside a stream (a truncated file).
    """
    decompressor = _DECOMPRESSORS[kind]()
    while True:
        chunk = raw.read(raw_chunk)
        if not chunk:
            break
        while chunk:
            out = decompressor.decompress(chunk, out_chunk)
            if out:
                yield out
            while not decompressor.eof and not decompressor.needs_input:  # more of it waits
                out = decompressor.decompress(b"", out_chunk)
                if out:
                    yield out
            chunk = b""
            if decompressor.eof:
                chunk = decompressor.unused_data
                if chunk.strip(b"\0"):
                    decompressor = _DECOMPRESSORS[kind]()
                else:
                    chunk = b""
    if not decompressor.eof:
        raise EOFError("compressed file ended before the end-of-stream marker was reached")


class BlockReader:
    """Iterate over blocks of a file's decompressed bytes, read by a helper thread.

    Parameters
    ----------
    path
        The file to read.
    block_size
        Bytes per block of a plain file. A compressed file's blocks are what each
        ``step = min(max(block_size, MIN_RAW_CHUNK), RAW_CHUNK)`` compressed bytes expand to,
        in pieces of at most ``max(block_size, 4 * step)`` bytes (a small ``block_size``
        keeps a peek at the start of a compressed file cheap; a stream that expands a
        thousandfold is never decompressed further than the reader has taken).
    depth
        Blocks read ahead; memory in flight is about ``(depth + 1) * block_size``.
    threads
        Threads that decompress the blocks of a multi-block ``.xz`` at once (then
        each block of text is one xz block, and about ``threads + 2`` of them are
        in memory).

    Attributes
    ----------
    compression : str or None
    size : int
        Bytes of the file on disk.
    position : int
        Bytes of the file on disk consumed so far (for progress).

    Use as a context manager so the thread stops when parsing fails.
    """

    def __init__(self, path: str | os.PathLike[str], block_size: int = DEFAULT_BLOCK_SIZE,
                 depth: int = 2, threads: int = 1) -> None:
        if block_size < 1:
            raise ValueError(f"block_size must be positive, got {block_size}")
        self.path = os.fspath(path)
        self.block_size = int(block_size)
        self.threads = max(1, int(threads))
        self._stream: _Prefixed | None = None
        if is_stream(self.path):  # read once: the first bytes tell the compression
            self._stream = _Prefixed(open_stream(self.path))
            self.compression = _compression(self._stream.head(6))
            self.size = 0
        else:
            self.compression = compression_of(self.path)
            self.size = os.path.getsize(self.path)
        self.position = 0
        self._replay: list[bytes] = []  # peeked blocks, yielded again by iteration
        self._check = Check() if self.compression == "gzip" else None
        self._ended = False
        self._queue: queue.Queue[bytes | Trailer | BaseException | None] = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lstm_data-csv-read", daemon=True)
        self._thread.start()

    def _put(self, item: bytes | Trailer | BaseException | None) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            stream: _Prefixed | BinaryIO = self._stream or open(self.path, "rb", buffering=0)
            with stream as raw:
                if self.compression is None:
                    while not self._stop.is_set():
                        block = raw.read(self.block_size)
                        self.position = raw.tell()
                        if not block or not self._put(block):
                            break
                else:
                    # closed before ``raw``: threads decoding xz blocks read its descriptor
                    with contextlib.closing(self._decompressed(raw, self.compression)) as chunks:
                        for item, position in chunks:
                            self.position = position
                            if not self._put(item):
                                return
            self._put(None)
        except _DAMAGE as exc:
            if self.compression is None:
                self._put(exc)
            else:
                self._put(FormatError(f"damaged or truncated {self.compression} stream: {exc}",
                                      file=self.path))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            self._put(exc)

    def _decompressed(self, raw: _Prefixed | BinaryIO,
                      kind: str) -> Generator[tuple[bytes | Trailer, int], None, None]:
        """``(block of text, compressed bytes consumed)`` of a ``kind`` stream (gzip: also its
        trailers), on threads for a multi-block .xz."""
        if kind == "xz" and self.threads > 1 and hasattr(os, "pread") and not isinstance(raw, _Prefixed):
            blocks = xz_blocks(raw)
            if blocks is not None and len(blocks) > 1:
                yield from decode_blocks(raw.fileno(), blocks, self.threads, self._stop.is_set)
                return
        step = min(max(self.block_size, MIN_RAW_CHUNK), RAW_CHUNK)
        out = max(self.block_size, 4 * step)  # the most text a block of it holds
        chunks = gzip_chunks(raw, step, out) if kind == "gzip" else decompressed_chunks(raw, kind, step, out)
        for block in chunks:
            yield block, raw.tell()

    def _next(self) -> bytes | None:
        if self._ended:
            return None
        item = self._queue.get()
        while isinstance(item, Trailer):
            assert self._check is not None  # trailers come from gzip streams, which are checked
            try:
                self._check.end(item)
            except gzip.BadGzipFile as exc:
                raise FormatError(f"damaged gzip stream: {exc}", file=self.path) from None
            item = self._queue.get()
        if item is None:
            self._ended = True
            return None
        if isinstance(item, BaseException):
            raise item
        if self._check is not None:
            self._check.add(item)
        return item

    def peek(self) -> bytes | None:
        """The next block (``None`` at the end), kept so that iteration yields it again."""
        block = self._next()
        if block is not None:
            self._replay.append(block)
        return block

    def __iter__(self) -> Iterator[bytes]:
        while self._replay:
            yield self._replay.pop(0)
        while True:
            block = self._next()
            if block is None:
                return
            yield block

    def close(self) -> None:
        """Stop the helper thread and drop blocks read ahead."""
        self._stop.set()
        # Free the queue so a blocked put returns; the thread then sees the stop flag
        # and exits after its current read. Not joined: waiting for an in-flight
        # decompression would add its whole latency to every early close.
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break

    def __enter__(self) -> "BlockReader":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class _Prefixed:
    """A raw stream whose first bytes were read ahead (to see its magic) and are read again."""

    def __init__(self, raw: io.FileIO) -> None:
        self.raw, self._head, self._pos = raw, b"", 0

    def head(self, n: int) -> bytes:
        """The first ``n`` bytes (fewer at the end of the stream), kept to be read again."""
        while len(self._head) < n:
            more = self.raw.read(n - len(self._head))
            if not more:
                break
            self._head += more
        return self._head[:n]

    def read(self, n: int = -1) -> bytes:
        if self._head:
            out, self._head = self._head[:n] if n >= 0 else self._head, \
                self._head[n:] if n >= 0 else b""
        else:
            out = self.raw.read(n)
        self._pos += len(out)
        return out

    def readinto(self, buffer: bytearray | memoryview) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> "_Prefixed":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
