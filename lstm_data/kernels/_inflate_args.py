"""Results and argument checks of ``inflate_baskets``, shared by the compiled kernel and its twin.

Both backends return the same ``(status, basket, block)`` for the same input (the
values are fixed: the compiled code has them as C constants too), and raise the
same exception types from :func:`check_inflate`.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["INFLATED", "NOT_ZLIB", "HEADER_CUT", "OVER", "BODY_CUT", "STREAM", "UNDER", "OUTSIDE",
           "NO_MEMORY", "BLOCK_HEADER", "check_inflate", "inflate_message"]

#: every basket inflated
INFLATED = 0
#: a block compressed by another algorithm than zlib (or an unknown one): the caller inflates the basket
NOT_ZLIB = 1
#: a block's 9-byte header is cut short by the basket's end
HEADER_CUT = 2
#: the blocks' headers declare more uncompressed bytes than the basket's size (not inflated)
OVER = 3
#: a block's compressed bytes run past the basket's end
BODY_CUT = 4
#: a zlib block is damaged or does not inflate to exactly the size its header declares
STREAM = 5
#: the blocks inflate to fewer bytes than the basket's size
UNDER = 6
#: a row of the table lies outside ``raw`` or ``out``
OUTSIDE = 7
#: libdeflate could not allocate a decompressor
NO_MEMORY = 8

#: bytes of a compressed block's header: algorithm (2), method (1), compressed and uncompressed size (3 + 3)
BLOCK_HEADER = 9


def check_inflate(raw: Any, table: Any, out: Any, functions: Any) -> tuple[memoryview, np.ndarray, np.ndarray,
                                                                          tuple[int, int, int]]:
    """``raw`` as bytes, ``table`` as a C-contiguous ``(n, 4)`` int64 array, ``out`` and ``functions``, checked.

    Raises
    ------
    TypeError
        ``raw`` is not a buffer, ``out`` not a writeable 1-D C-contiguous uint8 array,
        ``functions`` not three integers.
    ValueError
        ``table`` is not ``(n, 4)``; a function address is not positive.
    """
    try:
        view = memoryview(raw).cast("B")
    except TypeError as exc:
        raise TypeError(f"raw must be a contiguous buffer of bytes, got {type(raw).__name__}") from exc
    rows = np.ascontiguousarray(table, dtype=np.int64)
    if rows.ndim != 2 or rows.shape[1] != 4:
        raise ValueError(f"table must be (n, 4): source offset, source bytes, size, destination offset; "
                         f"got shape {rows.shape}")
    if not isinstance(out, np.ndarray) or out.dtype != np.uint8 or out.ndim != 1 \
            or not out.flags.c_contiguous or not out.flags.writeable:
        raise TypeError("out must be a writeable 1-D C-contiguous uint8 array")
    if not isinstance(functions, (tuple, list)) or len(functions) != 3 \
            or not all(isinstance(f, int) and not isinstance(f, bool) for f in functions):
        raise TypeError("functions must be libdeflate's three function addresses (alloc, zlib_decompress, free)")
    if min(functions) <= 0:
        raise ValueError("a libdeflate function address is not positive")
    return view, rows, out, (int(functions[0]), int(functions[1]), int(functions[2]))


def inflate_message(status: int, block: int, size: int) -> str:
    """What a result of ``inflate_baskets`` says of a basket, in words for an error message.

    Parameters
    ----------
    status
        The result's status, other than :data:`INFLATED` and :data:`NOT_ZLIB`.
    block
        The result's block: which of the basket's compressed blocks is wrong.
    size
        The basket's uncompressed size (its key's).

    Returns
    -------
    str
        The words, such as ``"compressed block 2 is cut short"``.
    """
    return {
        HEADER_CUT: f"the header of compressed block {block} is cut short",
        OVER: f"its blocks 0 to {block} declare more uncompressed bytes than the {size:,} its key says; "
              "not inflated",
        BODY_CUT: f"compressed block {block} is cut short",
        STREAM: f"zlib block {block} is damaged or does not inflate to the size its header declares",
        UNDER: f"its blocks inflate to fewer bytes than the {size:,} its key says",
        OUTSIDE: "it lies outside the bytes read",
        NO_MEMORY: "libdeflate could not allocate a decompressor",
    }.get(status, f"inflating it failed (status {status})")
