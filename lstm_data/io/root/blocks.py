"""A basket's compressed blocks inflated, never to more bytes than its key declares.

ROOT compresses a basket as a run of blocks, each behind a 9-byte header: the algorithm
(``ZL``, ``XZ``, ``L4``, ``ZS``), a method byte, then the block's compressed and
uncompressed sizes (3 bytes each, little-endian). The key declares the basket's object
length. A damaged or forged basket can declare blocks that inflate far beyond it (a
few megabytes of zlib blocks declaring gigabytes), or a block that inflates beyond its
own header's size. So, before each block is inflated, the running total of the sizes
its headers declare is checked against the object length, and every inflater writes
into the block's own slice of the basket's buffer, failing when the stream holds more:
memory never holds more than the object length, which the caller has bounded.
"""
from __future__ import annotations

import importlib
import lzma
from typing import Any, Callable

import numpy as np

__all__ = ["inflate_blocks", "BLOCK_HEADER", "InflateInto"]

#: ``into(raw, pos, csize, out, filled, usize)``: the zlib block ``raw[pos:pos + csize]``
#: inflated into ``out[filled:filled + usize]`` (a uint8 array), raising ValueError unless it
#: fills it exactly
InflateInto = Callable[[bytes, int, int, np.ndarray, int, int], None]

#: bytes of a compressed block's header
BLOCK_HEADER = 9


def inflate_blocks(raw: bytes, start: int, stop: int, size: int,
                   inflate: Callable[[Any, int], bytes | bytearray], out: np.ndarray | None = None,
                   into: InflateInto | None = None) -> bytes | bytearray | np.ndarray:
    """The ``size`` uncompressed bytes of ``raw[start:stop]``: stored as they are, or ROOT blocks.

    ``inflate(data, n)`` inflates one zlib block of ``n`` bytes, raising when it holds more.
    ``out``: a uint8 array of ``size`` bytes the blocks are inflated into (returned), by
    ``into`` when given (no copy of each block), else by ``inflate`` and a copy.

    Raises
    ------
    ValueError
        A header is cut short or names an unknown algorithm; the blocks declare more
        (before the first block over is inflated) or fewer bytes than ``size``; a block
        inflates to other than the size its header declares.
    """
    if stop - start == size:
        return raw[start:stop]
    view = memoryview(raw)  # slices of it are not copies
    buffer: bytearray | np.ndarray = bytearray(size) if out is None else out
    pos, filled, k = start, 0, 0
    while pos < stop:
        head = raw[pos:pos + BLOCK_HEADER]
        if len(head) < BLOCK_HEADER:
            raise ValueError("a compressed block header is cut short")
        algo = bytes(head[:2])
        csize = head[3] | head[4] << 8 | head[5] << 16
        usize = head[6] | head[7] << 8 | head[8] << 16
        if filled + usize > size:
            raise ValueError(f"its blocks 0 to {k} declare {filled + usize:,} uncompressed bytes, more than "
                             f"the {size:,} its key says; not inflated")
        body = view[pos + BLOCK_HEADER:pos + BLOCK_HEADER + csize]
        if len(body) != csize:
            raise ValueError("a compressed block is cut short")
        target = memoryview(buffer)[filled:filled + usize]  # type: ignore[arg-type]
        if algo == b"ZL" and into is not None and out is not None:
            into(raw, pos + BLOCK_HEADER, csize, out, filled, usize)
        elif algo == b"ZL":
            block = inflate(body, usize)
            if len(block) != usize:
                raise ValueError(f"block {k} inflated to {len(block):,} bytes, its header says {usize:,}")
            target[:] = block
        else:
            _other_codec(algo, body, target, k)
        filled += usize
        pos += BLOCK_HEADER + csize
        k += 1
    if filled != size:
        raise ValueError(f"its blocks inflate to {filled:,} bytes, its key says {size:,}")
    return buffer


def _other_codec(algo: bytes, body: memoryview, target: memoryview, k: int) -> None:
    """Inflate block ``k`` (LZMA, LZ4 or ZSTD) into ``target``, which it must fill exactly."""
    cramjam = importlib.import_module("cramjam")  # uproot's codecs; no type information
    usize = len(target)
    if algo == b"XZ":
        xz = getattr(cramjam, "xz", None)
        if xz is None:  # an older cramjam: the standard library's, bounded the same way
            got = _lzma_bounded(bytes(body), usize)
            target[:len(got)] = got
            n = len(got)
        else:
            n = _into(xz, body, target)
    elif algo == b"L4":  # an 8-byte xxhash checksum, then the LZ4 block (fails when it holds more)
        got = cramjam.lz4.decompress_block(bytes(body[8:]), output_len=usize)
        n = len(got)
        if n == usize:
            target[:] = memoryview(got)
    elif algo == b"ZS":
        n = _into(cramjam.zstd, body, target)
    else:
        raise ValueError(f"compression {algo!r} is not one this reader knows (ZL, XZ, L4, ZS)")
    if n != usize:
        raise ValueError(f"block {k} ({algo.decode('latin-1')}) inflated to {n:,} bytes, its header says "
                         f"{usize:,}")


def _into(codec: Any, body: memoryview, target: memoryview) -> int:
    """Bytes ``codec`` inflated ``body`` to in ``target``; a stream that holds more fails."""
    try:
        n: int = codec.decompress_into(body, target)
    except Exception as exc:  # cramjam's DecompressionError: damaged, or more than the target holds
        raise ValueError(f"it does not inflate to its declared {len(target):,} bytes ({exc})") from exc
    return n


def _lzma_bounded(data: bytes, size: int) -> bytes:
    """An xz stream's bytes, failing once it holds more than ``size``."""
    d = lzma.LZMADecompressor()
    got = d.decompress(data, max_length=size + 1)
    if len(got) > size or not d.eof:
        raise ValueError(f"it does not inflate to its declared {size:,} bytes")
    return got
