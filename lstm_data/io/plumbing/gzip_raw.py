"""gzip members inflated as raw deflate, their CRC32 left to the reader of the text.

A ``gzip -dc`` computes the CRC32 of the text on the thread that inflates it;
here the inflating thread does nothing else: :func:`gzip_chunks` parses each
member's header itself, inflates the raw deflate data and, at the member's end,
yields a :class:`Trailer` with the CRC32 and size the file records. The
consumer folds each chunk into a :class:`Check` (``zlib.crc32`` releases the
GIL) and compares at each trailer, so a damaged file still raises, on the
thread that reads the text, before that member's end has been used.
"""
from __future__ import annotations

import gzip
import zlib
from typing import Iterator, NamedTuple, Protocol

__all__ = ["RawReader", "Trailer", "Check", "gzip_chunks"]

_FEXTRA, _FNAME, _FCOMMENT, _FHCRC = 4, 8, 16, 2


class RawReader(Protocol):
    """A binary stream read from the start, chunk by chunk (a file, or a pipe whose first bytes were peeked)."""

    def read(self, n: int = -1, /) -> bytes: ...

    def tell(self) -> int: ...


class Trailer(NamedTuple):
    """The end of one gzip member: the CRC32 and size (mod 2**32) of its text."""

    crc: int
    size: int


class Check:
    """Running CRC32 and size of one member's text, compared with its :class:`Trailer`."""

    def __init__(self) -> None:
        self.crc = 0
        self.size = 0

    def add(self, chunk: bytes) -> None:
        self.crc = zlib.crc32(chunk, self.crc)
        self.size += len(chunk)

    def end(self, trailer: Trailer) -> None:
        """Compare with ``trailer`` and start the next member.

        Raises
        ------
        gzip.BadGzipFile
            The CRC32 or the size differs.
        """
        crc, size = self.crc, self.size & 0xFFFFFFFF
        self.crc = self.size = 0
        if (crc, size) != tuple(trailer):
            raise gzip.BadGzipFile(f"CRC32 or length check failed ({crc:#010x}, {size} bytes "
                                   f"read; the file records {trailer.crc:#010x}, {trailer.size})")


def _header_size(buf: bytes) -> int | None:
    """Bytes of the member header at the start of ``buf``; None if ``buf`` ends inside it."""
    if len(buf) < 10:
        return None
    if buf[:3] != b"\x1f\x8b\x08":
        raise gzip.BadGzipFile("not a gzip member (bad magic or method)")
    flags, pos = buf[3], 10
    if flags & _FEXTRA:
        if len(buf) < pos + 2:
            return None
        pos += 2 + int.from_bytes(buf[pos:pos + 2], "little")
    for flag in (_FNAME, _FCOMMENT):
        if flags & flag:
            zero = buf.find(b"\0", pos)
            if zero < 0:
                return None
            pos = zero + 1
    if flags & _FHCRC:
        pos += 2
    return pos if len(buf) >= pos else None


def gzip_chunks(raw: RawReader, raw_chunk: int, out_chunk: int = 4 << 20) -> Iterator[bytes | Trailer]:
    """Inflate every member of a gzip file: its text in chunks of at most ``out_chunk`` bytes,
    then its :class:`Trailer`.

    However far a few compressed bytes inflate (deflate reaches 1032 to 1), at most
    ``out_chunk`` bytes are inflated before the consumer takes them. Zero bytes after the
    last member are ignored, as ``gzip`` does.

    Raises
    ------
    EOFError
        The file ends inside a member.
    gzip.BadGzipFile, zlib.error
        A damaged header or deflate stream.
    """
    pending, inflater = b"", None
    while True:
        chunk = raw.read(raw_chunk)
        if not chunk:
            break
        pending = pending + chunk if pending else chunk
        while pending:
            if inflater is None:  # a header, or trailing zeros
                if not pending.strip(b"\0"):
                    pending = b""
                    break
                size = _header_size(pending)
                if size is None:
                    break
                inflater, pending = zlib.decompressobj(-zlib.MAX_WBITS), pending[size:]
            if not inflater.eof:
                yield from _inflated(inflater, pending, out_chunk)
                pending = inflater.unused_data if inflater.eof else b""
                if not inflater.eof:
                    break
            if len(pending) < 8:
                break
            yield Trailer(int.from_bytes(pending[:4], "little"), int.from_bytes(pending[4:8], "little"))
            inflater, pending = None, pending[8:]
    if inflater is not None or pending.strip(b"\0"):
        raise EOFError("compressed file ended before the end-of-stream marker was reached")


def _inflated(inflater: zlib._Decompress, data: bytes, out_chunk: int) -> Iterator[bytes]:
    """All ``inflater`` makes of ``data``, ``out_chunk`` bytes at a time (none held beyond)."""
    while True:
        out = inflater.decompress(data, out_chunk)
        if out:
            yield out
        if inflater.eof:
            return
        data = inflater.unconsumed_tail
        if not data and len(out) < out_chunk:  # all taken, and nothing was left waiting
            return
