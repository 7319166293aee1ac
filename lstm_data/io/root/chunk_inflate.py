"""A chunk's baskets read and inflated in one compiled call (no Python work per block).

A read on demand decodes a chunk's baskets of a group's variables together
(:mod:`~lstm_data.io.root.group_chunk`). Walking each basket's compressed blocks and
calling the inflater from Python costs as much per basket as a small basket's
inflating. Here the chunk's baskets are read with one ``os.preadv`` per run of
adjacent baskets into one buffer, each key is parsed and its declared size checked
(:func:`~lstm_data.io.root.baskets.parse_key`, as one basket's read checks it), and
:func:`~lstm_data.kernels.inflate_baskets` then walks the block headers and inflates
every zlib block with libdeflate into the thread's arena, without the GIL, checking
every declared size against the basket's bounds and size before it is used. A failure
is the same ``FormatError``, naming the file, tree, branch, basket and its entries,
as a basket read alone raises; a block of another algorithm (LZ4, ZSTD, LZMA) is
inflated by the basket path (:func:`~lstm_data.io.root.blocks.inflate_blocks`).
"""
from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import numpy as np

from lstm_data.io.root.baskets import BasketTask, basket_error, inflater_name, parse_key
from lstm_data.io.root.blocks import inflate_blocks
from lstm_data.io.root.inflate_into import libdeflate_functions, libdeflate_into
from lstm_data.kernels import INFLATED, NOT_ZLIB, inflate_baskets, inflate_message

__all__ = ["inflate_chunk"]

_ALIGN = 64


def inflate_chunk(tasks: Sequence[BasketTask], fd: int, file: str, tree: str,
                  take: Callable[[int], np.ndarray]) -> list[tuple[Any, int, int]] | None:
    """Each task's basket as :func:`~lstm_data.io.root.baskets.basket_bytes` gives it (its
    uncompressed bytes, where its data end, its key's length), inflated into ``take(n)``;
    ``None`` when libdeflate is not the zlib inflater in use (the caller reads basket by basket).

    Raises
    ------
    FormatError
        As :func:`~lstm_data.io.root.baskets.basket_bytes`.
    """
    functions = libdeflate_functions()
    if functions is None or inflater_name() != "libdeflate" or not tasks:
        return None
    raw, at = _read(tasks, fd, file, tree)
    rows = np.empty((len(tasks), 4), dtype=np.int64)
    keys = []
    dst = 0
    for row, t, a in zip(rows, tasks, at):
        try:
            objlen, keylen, border = parse_key(raw, a, t.plan, t.i, (t.hi - t.lo) * t.plan.dtype.itemsize)
        except Exception as exc:
            raise basket_error(t.plan, t.i, file, tree, exc) from exc
        row[:] = (a + keylen, t.plan.sizes[t.i] - keylen, objlen, dst)
        keys.append((border, keylen))
        dst = -(-(dst + objlen) // _ALIGN) * _ALIGN
    out = take(max(dst, 1))
    first = 0
    while first < len(tasks):
        status, b, block = inflate_baskets(raw, rows[first:], out, functions)
        b += first
        if status == INFLATED:
            break
        t = tasks[b]
        src, nsrc, size, start = rows[b].tolist()
        if status != NOT_ZLIB:
            raise basket_error(t.plan, t.i, file, tree, ValueError(inflate_message(status, block, size)))
        try:  # LZ4, ZSTD, LZMA (or an unknown algorithm): the basket path's codecs and errors
            inflate_blocks(bytes(raw[src:src + nsrc]), 0, nsrc, size, _libdeflate, out=out[start:start + size],
                           into=libdeflate_into())
        except Exception as exc:
            raise basket_error(t.plan, t.i, file, tree, exc) from exc
        first = b + 1
    return [(out[r[3]:r[3] + r[2]], border, keylen) for r, (border, keylen) in zip(rows.tolist(), keys)]


def _libdeflate(data: Any, size: int) -> bytearray:
    """The ``deflate`` package's own zlib inflater (a fallback basket's zlib blocks go through
    :func:`~lstm_data.io.root.inflate_into.libdeflate_into` instead)."""
    import deflate

    got: bytearray = deflate.zlib_decompress(data, size)
    return got


def _read(tasks: Sequence[BasketTask], fd: int, file: str, tree: str) -> tuple[bytearray, list[int]]:
    """The tasks' baskets in one buffer (one ``os.preadv`` per run of adjacent baskets), and
    where each starts in it."""
    spans = sorted((t.plan.seeks[t.i], t.plan.sizes[t.i], k) for k, t in enumerate(tasks))
    end = os.fstat(fd).st_size  # the sizes the tree declares, checked before the buffer is made
    for seek, size, k in spans:
        if seek < 0 or seek + size > end:
            t = tasks[k]
            missing = min(size, seek + size - end)
            raise basket_error(t.plan, t.i, file, tree, ValueError(f"the file ends {missing} bytes into it"))
    raw = bytearray(sum(size for _, size, _ in spans))
    view = memoryview(raw)
    at = [0] * len(tasks)
    pos = 0
    run = 0  # first span of the current run of adjacent baskets
    for j, (seek, size, k) in enumerate(spans):
        at[k] = pos
        pos += size
        if j + 1 == len(spans) or spans[j + 1][0] != seek + size:
            start = at[spans[run][2]]
            got = os.preadv(fd, [view[start:pos]], spans[run][0])
            if got != pos - start:  # the file ends inside a basket: name the first one cut
                for s, z, m in spans[run:j + 1]:
                    if s + z > spans[run][0] + got:
                        t = tasks[m]
                        missing = min(z, s + z - spans[run][0] - got)
                        raise basket_error(t.plan, t.i, file, tree, ValueError(
                            f"the file ends {missing} bytes into it"))
            run = j + 1
    return raw, at
