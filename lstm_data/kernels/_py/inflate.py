"""Pure-Python twin of ``lstm_data.kernels._ext.inflate``: a chunk's baskets inflated in one call.

ROOT compresses a basket as a run of blocks, each behind a 9-byte header: the
algorithm (``ZL`` for zlib), a method byte, then the block's compressed and
uncompressed sizes (3 bytes each, little-endian). :func:`inflate_baskets` walks
those headers for each basket of a table and inflates every zlib block into its
own slice of ``out``, checking each declared size against the basket's bounds and
size before it is used. The compiled kernel calls libdeflate (through the function
addresses it is given) without the GIL; this twin inflates with :mod:`zlib`, one
byte beyond the declared size at most, and gives the same bytes and results.
"""
from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from lstm_data.kernels._inflate_args import (BLOCK_HEADER, BODY_CUT, HEADER_CUT, INFLATED, NOT_ZLIB, OUTSIDE,
                                             OVER, STREAM, UNDER, check_inflate)

__all__ = ["inflate_baskets"]


def inflate_baskets(raw: Any, table: Any, out: np.ndarray, functions: tuple[int, int, int]) -> tuple[int, int, int]:
    """Inflate each basket of ``table`` from ``raw`` into ``out``.

    Parameters
    ----------
    raw : bytes-like
        The compressed bytes of the baskets (read from the file in one piece, or joined).
    table : array of int64, shape ``(n, 4)``
        Per basket: offset in ``raw`` of its first block header (after the key), its
        bytes there, its uncompressed size (the key's, checked by the caller), and the
        offset in ``out`` it is inflated to. A basket whose bytes equal its size is
        stored as it is (copied).
    out : ndarray of uint8
        Writeable, 1-D, C-contiguous.
    functions : tuple of int
        The addresses of libdeflate's ``libdeflate_alloc_decompressor``,
        ``libdeflate_zlib_decompress`` and ``libdeflate_free_decompressor`` (the compiled
        kernel calls them; this twin checks them and inflates with ``zlib``).

    Returns
    -------
    tuple of int
        ``(status, basket, block)``: :data:`~lstm_data.kernels._inflate_args.INFLATED`
        with ``basket == n`` when every basket is inflated; otherwise the status of
        ``_inflate_args`` saying what is wrong with block ``block`` of basket ``basket``
        (``NOT_ZLIB``: that block is of another algorithm, the caller inflates the basket;
        the baskets before it are inflated). No block is inflated before its declared
        sizes are checked: the blocks' running total against the basket's size, its
        compressed bytes against the basket's end.

    Raises
    ------
    TypeError, ValueError
        As :func:`~lstm_data.kernels._inflate_args.check_inflate`.
    """
    view, rows, out, _ = check_inflate(raw, table, out, functions)
    for b, (src, nsrc, size, dst) in enumerate(rows.tolist()):
        if min(src, nsrc, size, dst) < 0 or src + nsrc > len(view) or dst + size > len(out):
            return OUTSIDE, b, 0
        if nsrc == size:  # stored as it is
            out[dst:dst + size] = np.frombuffer(view, dtype=np.uint8, count=size, offset=src)
            continue
        pos, end, filled, k = src, src + nsrc, 0, 0
        while pos < end:
            if end - pos < BLOCK_HEADER:
                return HEADER_CUT, b, k
            head = view[pos:pos + BLOCK_HEADER]
            if bytes(head[:2]) != b"ZL":
                return NOT_ZLIB, b, k
            csize = head[3] | head[4] << 8 | head[5] << 16
            usize = head[6] | head[7] << 8 | head[8] << 16
            if filled + usize > size:
                return OVER, b, k
            if csize > end - pos - BLOCK_HEADER:
                return BODY_CUT, b, k
            inflater = zlib.decompressobj()
            try:
                got = inflater.decompress(view[pos + BLOCK_HEADER:pos + BLOCK_HEADER + csize], usize + 1)
            except zlib.error:
                return STREAM, b, k
            if len(got) != usize or not inflater.eof:
                return STREAM, b, k
            out[dst + filled:dst + filled + usize] = np.frombuffer(got, dtype=np.uint8)
            filled += usize
            pos += BLOCK_HEADER + csize
            k += 1
        if filled != size:
            return UNDER, b, k
    return INFLATED, len(rows), 0
