"""The independent blocks of an ``.xz`` file, decompressed on several threads.

``xz -T0`` (any ``-T`` other than 1) writes each stream as blocks of three times
the dictionary size (24 MiB at ``-6``) compressed on their own, and its index, at
the end of the stream, records every block's compressed and uncompressed size.
The standard library's :mod:`lzma` has no block-level API, but a block decodes
by itself when its stream's 12-byte header comes first: an
``LZMADecompressor`` given ``header + block`` returns exactly the block's text,
having checked the block's own check (CRC32, CRC64 or SHA-256) at its end, and
it releases the GIL, so several blocks decode at once. The output length is
checked against the index; the index and the stream header and footer are
checked against their CRC32s. A file whose layout does not read this way (a
truncated file, one block) is decompressed as one stream, as before.

Memory: up to ``threads + 2`` decoded blocks are held at once, of at most
:data:`MAX_BLOCK` bytes each (a file of larger blocks is decompressed as one stream).
"""
from __future__ import annotations

import lzma
import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO, Callable, Iterator, NamedTuple

__all__ = ["XzBlock", "xz_blocks", "decode_blocks", "MAX_BLOCK"]

_MAGIC = b"\xfd7zXZ\x00"
#: the largest block decoded whole, on its own thread: ``xz -T0 -7`` writes 48 MiB blocks
MAX_BLOCK = 64 << 20


class XzBlock(NamedTuple):
    """One block: its stream's header, where it is, and its sizes."""

    header: bytes
    offset: int  # of the block in the file
    size: int  # compressed bytes, padding included
    usize: int  # uncompressed bytes


def _read(fh: BinaryIO, offset: int, n: int) -> bytes:
    fh.seek(offset)
    data = fh.read(n)
    if len(data) != n:
        raise ValueError("short read")
    return data


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = 0
    for i in range(9):
        byte = buf[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return value, pos + i + 1
    raise ValueError("bad varint")


def _crc_ok(data: bytes, crc: bytes) -> bool:
    return zlib.crc32(data) == int.from_bytes(crc, "little")


def _stream_blocks(fh: BinaryIO, end: int) -> tuple[list[XzBlock], int]:
    """The blocks of the stream that ends at ``end``, and where that stream starts."""
    footer = _read(fh, end - 12, 12)
    if footer[10:] != b"YZ" or not _crc_ok(footer[4:10], footer[:4]):
        raise ValueError("no stream footer")
    index_size = (int.from_bytes(footer[4:8], "little") + 1) * 4
    index_start = end - 12 - index_size
    index = _read(fh, index_start, index_size)
    if index[0] != 0 or not _crc_ok(index[:-4], index[-4:]):
        raise ValueError("bad index")
    count, pos = _varint(index, 1)
    records = []
    for _ in range(count):
        unpadded, pos = _varint(index, pos)
        usize, pos = _varint(index, pos)
        records.append(((unpadded + 3) & ~3, usize))
    start = index_start - sum(size for size, _ in records) - 12
    header = _read(fh, start, 12) if start >= 0 else b""
    if not header.startswith(_MAGIC) or header[6:8] != footer[8:10] or not _crc_ok(
            header[6:8], header[8:]):
        raise ValueError("no stream header")
    blocks, offset = [], start + 12
    for size, usize in records:
        blocks.append(XzBlock(header, offset, size, usize))
        offset += size
    return blocks, start


def xz_blocks(fh: BinaryIO) -> list[XzBlock] | None:
    """Every block of every stream of the xz file ``fh``, in order, read from the indexes.

    Returns None when the file does not read as complete streams with indexes, or its
    index declares a block of more than :data:`MAX_BLOCK` bytes (it is then decompressed
    as one stream, in bounded pieces, which reports any damage).
    """
    try:
        end = fh.seek(0, os.SEEK_END)
        blocks: list[XzBlock] = []
        while end > 0:
            while end >= 4 and _read(fh, end - 4, 4) == b"\0\0\0\0":
                end -= 4  # stream padding
            stream, end = _stream_blocks(fh, end)
            blocks[:0] = stream
        return blocks if all(b.usize <= MAX_BLOCK for b in blocks) else None
    except (ValueError, IndexError, OSError):
        return None
    finally:
        fh.seek(0)


def _decode(fd: int, block: XzBlock) -> bytes:
    decompressor = lzma.LZMADecompressor(lzma.FORMAT_XZ)
    decompressor.decompress(block.header)
    # never more than one byte beyond what the index declares
    out = decompressor.decompress(os.pread(fd, block.size, block.offset), block.usize + 1)
    if len(out) != block.usize:
        raise lzma.LZMAError(f"block at byte {block.offset} gave {len(out)} bytes, "
                             f"its index says {block.usize}")
    return out


def decode_blocks(fd: int, blocks: list[XzBlock], threads: int,
                  stop: Callable[[], bool] = lambda: False) -> Iterator[tuple[bytes, int]]:
    """Yield ``(text of block, file offset after it)`` in order, decoding ``threads`` blocks at once.

    ``stop()`` true ends the iteration early; decodes not started are dropped.
    """
    pool = ThreadPoolExecutor(threads, thread_name_prefix="lstm_data-xz")
    try:
        ahead = [pool.submit(_decode, fd, block) for block in blocks[:threads]]
        for k, block in enumerate(blocks):
            out = ahead.pop(0).result()
            if k + threads < len(blocks):
                ahead.append(pool.submit(_decode, fd, blocks[k + threads]))
            if stop():
                return
            yield out, block.offset + block.size
            del out
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # the running ones read ``fd``
