"""Write an element range of a chunked array so that every chunk is written once, whole.

Several processes can fill one zarr array at once when each takes a run of
consecutive elements (rows): a :class:`RangeWriter` writes the chunks that lie
wholly inside its run, as they fill, and keeps the elements of the (at most
two) chunks it shares with the neighbouring runs as *pieces*; the caller then
writes each shared chunk once from the pieces of all runs
(:func:`write_shared_chunks`). No chunk is written twice or partly, so the
bytes are those of one writer appending the whole array in order, and a run
that is written again (a retried task) writes the same bytes again. Used by the
distributed convert (:mod:`lstm_data.scale.convert`) and precompute
(:mod:`lstm_data.store.ranges`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["RangeWriter", "write_shared_chunks", "Piece"]

#: a piece of a shared chunk: (first element, values)
Piece = tuple[int, np.ndarray]


class RangeWriter:
    """Writes the whole chunks inside elements ``[start, stop)``; keeps the shared edges as pieces.

    Elements before the first chunk boundary (the head) and after the last one
    (the tail; none when ``stop`` ends the array) belong to chunks shared with the
    neighbouring runs; everything between is written as whole chunks, as they fill.
    """

    def __init__(self, array: Any, start: int, stop: int, chunk: int) -> None:
        self.array, self.chunk, self.start = array, chunk, start
        self.head_end = min(-(-start // chunk) * chunk, stop)
        self.tail_start = max(self.head_end, stop if stop == int(array.shape[0]) else stop // chunk * chunk)
        self.pos = start
        self.head: list[np.ndarray] = []
        self.tail: list[np.ndarray] = []
        self.pending: list[np.ndarray] = []

    def append(self, values: np.ndarray) -> None:
        self.pending.append(values)
        buf = np.concatenate(self.pending) if len(self.pending) > 1 else values
        used = 0
        if self.pos < self.head_end:
            used = min(self.head_end - self.pos, len(buf))
            self.head.append(buf[:used].copy())
            self.pos += used
        if self.head_end <= self.pos < self.tail_start:  # chunk-aligned here
            end = min(self.tail_start, self.pos + len(buf) - used)
            if end < self.tail_start:
                end = self.pos + (end - self.pos) // self.chunk * self.chunk
            if end > self.pos:
                self.array[self.pos:end] = buf[used:used + end - self.pos]
                used += end - self.pos
                self.pos = end
        if self.pos >= self.tail_start and used < len(buf):
            self.tail.append(buf[used:].copy())
            self.pos += len(buf) - used
            used = len(buf)
        self.pending = [buf[used:]] if used < len(buf) else []

    def close(self, stop: int) -> list[Piece]:
        if self.pending or self.pos != stop:
            raise RuntimeError(f"range writer ended at element {self.pos}, planned {stop}")
        pieces = []
        if self.head:
            pieces.append((self.start, np.concatenate(self.head)))
        if self.tail:
            pieces.append((self.tail_start, np.concatenate(self.tail)))
        return pieces


def write_shared_chunks(array: Any, chunk: int, pieces: list[Piece]) -> None:
    """Write each chunk that several runs share, whole, from the runs' pieces."""
    by_chunk: dict[int, list[Piece]] = {}
    for start, values in pieces:
        by_chunk.setdefault(start // chunk, []).append((start, values))
    total = int(array.shape[0])
    for c, parts in sorted(by_chunk.items()):
        lo, hi = c * chunk, min(total, (c + 1) * chunk)
        buf = np.empty((hi - lo,) + tuple(array.shape[1:]), dtype=array.dtype)
        covered = 0
        for start, values in parts:
            buf[start - lo:start - lo + len(values)] = values
            covered += len(values)
        if covered != hi - lo:
            raise RuntimeError(f"chunk {c} of {array.path!r}: pieces cover {covered} of {hi - lo} values")
        array[lo:hi] = buf
