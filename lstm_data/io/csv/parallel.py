"""Parse one file's CSV text on several threads and stitch the columns in file order.

How the text is cut
-------------------
The text after the header is cut into *pieces* that end just after a newline
(the last piece ends where the text ends). A piece is cut without knowing
whether that newline is inside a quoted cell, so each worker parses its piece
*speculatively*: with its own :class:`~lstm_data.kernels.CsvBlockParser`, from
line 0, as if a record started there. The pieces are then settled one by one in
file order on the calling thread, into the one parser that the one-thread
reader would use (``dest``):

* if everything before the piece has been consumed (the piece really starts at
  a record), its parse is exactly what ``dest`` would have done, and its rows
  are appended with :meth:`CsvBlockParser.extend` (a copy without the GIL); a
  piece whose last record is incomplete (it ends inside a multi-line quoted
  cell) leaves that record's bytes for the next piece;
* otherwise (the piece starts inside a record that the previous piece left
  unfinished), or when its speculative parse failed, the piece is fed to
  ``dest`` on the calling thread, after what was left over.

So the result is bitwise the one-thread result, multi-line quoted cells
included (a cut inside such a cell costs one piece parsed twice), and every
error is raised by ``dest`` itself, in file order, with the line, row and column
the one-thread reader gives: an error in a later piece that a worker met first
is never reported before an earlier one.
"""
from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, Callable, Generic, Iterable, Iterator, Protocol, TypeVar

import numpy as np

from lstm_data import kernels
from lstm_data._util.cores import available_cores
from lstm_data.io.csv.plan import long_line

__all__ = ["PIECE", "MIN_PIECE", "resolve_threads", "Parser", "PieceText", "ParallelFeed", "LongLine",
           "Region", "Chunks", "region_pieces", "chunk_pieces"]

#: the plain-file path cuts pieces of PIECE bytes, fewer when a file is small (but
#: not under MIN_PIECE): every thread gets several, and the last ones end together
PIECE = 2 << 20
MIN_PIECE = 256 << 10

P = TypeVar("P")


class Parser(Protocol):
    """What the readers feed: a :class:`~lstm_data.kernels.CsvBlockParser`, or one that wraps it."""

    @property
    def line(self) -> int: ...

    @line.setter
    def line(self, value: int) -> None: ...

    @property
    def rows(self) -> int: ...

    def feed(self, data: bytes | bytearray | memoryview, final: bool = False) -> int: ...

    def extend(self, other: kernels.CsvBlockParser) -> None: ...

    def column_flags(self) -> np.ndarray: ...

    def inexact_ints(self) -> dict[str, tuple[int, str, int]]: ...

    def finish(self) -> tuple[dict[str, np.ndarray], dict[str, tuple[np.ndarray, np.ndarray]]]: ...


class PieceText(Protocol[P]):
    """What a piece of text is (:class:`Region` or :class:`Chunks`): how to view, measure, cut and join it."""

    def view(self, piece: P) -> memoryview: ...

    def size(self, piece: P) -> int: ...

    def rest(self, piece: P, used: int) -> P: ...

    def join(self, carry: P | None, piece: P) -> P: ...


def resolve_threads(threads: Any) -> int:
    """``threads`` of :func:`~lstm_data.io.csv.reader.read_csv` as a count (None: all cores)."""
    if threads is None:
        return available_cores()
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer or None, got {threads!r}")
    return threads


class Region:
    """Pieces that are ``(start, end)`` ranges of one buffer (a memory-mapped file).

    Contiguous ranges join without a copy, and every view is made and released
    where it is used, so the map can be closed as soon as the parse ends.
    """

    def __init__(self, buffer: memoryview) -> None:
        self.buffer = buffer

    def view(self, piece: tuple[int, int]) -> memoryview:
        return self.buffer[piece[0]:piece[1]]

    @staticmethod
    def size(piece: tuple[int, int]) -> int:
        return piece[1] - piece[0]

    @staticmethod
    def rest(piece: tuple[int, int], used: int) -> tuple[int, int]:
        return piece[0] + used, piece[1]

    @staticmethod
    def join(carry: tuple[int, int] | None, piece: tuple[int, int]) -> tuple[int, int]:
        return piece if carry is None else (carry[0], piece[1])


class Chunks:
    """Pieces that are byte strings of their own (decompressed text)."""

    @staticmethod
    def view(piece: bytes | memoryview) -> memoryview:
        return memoryview(piece)

    @staticmethod
    def size(piece: bytes | memoryview) -> int:
        return len(piece)

    @staticmethod
    def rest(piece: bytes | memoryview, used: int) -> bytes:
        return bytes(piece[used:])

    @staticmethod
    def join(carry: bytes | memoryview | None, piece: bytes | memoryview) -> bytes | memoryview:
        return piece if not carry else bytes(carry) + bytes(piece)


class LongLine(Exception):
    """No line ends within ``max_line`` bytes (raised by :func:`region_pieces` and :func:`chunk_pieces`).

    Attributes
    ----------
    at : int or None
        An offset inside that line (:func:`region_pieces`), or ``None`` (:func:`chunk_pieces`:
        the line starts where the text handed out so far ends).
    """

    def __init__(self, at: int | None = None) -> None:
        super().__init__(at)
        self.at = at


class ParallelFeed(Generic[P]):
    """Parse pieces on ``threads`` workers; settle them in order into ``dest``.

    Parameters
    ----------
    dest
        The parser that ends up with every row (its ``line`` is where the text starts).
    make_parser
        Makes an empty parser with ``dest``'s layout (one per piece in flight, reused).
    threads
        Worker threads.
    text
        :class:`Region` or :class:`Chunks`: what a piece is.
    settled
        Called with a piece's ``tag`` once the piece is in ``dest`` (progress).
    max_line
        The longest record (0: no bound): an unfinished record left over longer than
        that is a ``ParseError`` naming its first line.

    Use as a context manager: leaving it waits for the workers (and drops work
    not started), also when a piece raised.
    """

    def __init__(self, dest: Parser, make_parser: Callable[[], kernels.CsvBlockParser],
                 threads: int, text: PieceText[P], settled: Callable[[int], object] | None = None,
                 max_line: int = 0) -> None:
        self.dest, self.make_parser, self.text, self.settled = dest, make_parser, text, settled
        self.max_line = max_line
        self.depth = threads + 2
        self.idle: list[kernels.CsvBlockParser] = []
        self.pending: deque[tuple[P, bool, int, kernels.CsvBlockParser, Future[int | None]]] = deque()
        self.carry: P | None = None
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="lstm_data-csv-parse")

    def __enter__(self) -> ParallelFeed[P]:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.pending.clear()

    def _speculate(self, parser: kernels.CsvBlockParser, piece: P, last: bool) -> int | None:
        """Worker: parse ``piece`` as if a record started there; None if it raised."""
        parser.line = 0
        try:
            with self.text.view(piece) as data:
                return parser.feed(data, final=last)
        except Exception:  # noqa: BLE001 - decided again in order, by dest
            return None

    def feed(self, piece: P, last: bool = False, tag: int = 0) -> None:
        """Queue ``piece`` (the last one with ``last=True``); settle pieces as the window fills."""
        parser = self.idle.pop() if self.idle else self.make_parser()
        future = self.pool.submit(self._speculate, parser, piece, last)
        self.pending.append((piece, last, tag, parser, future))
        while len(self.pending) > self.depth:
            self._settle()

    def finish(self) -> None:
        """Settle every queued piece; the text must have ended with a ``last`` piece."""
        while self.pending:
            self._settle()

    def _settle(self) -> None:
        piece, last, tag, parser, future = self.pending.popleft()
        used = future.result()
        text, dest = self.text, self.dest
        if used is not None and self.carry is None:
            dest.extend(parser)
            dest.line += parser.line
            self.idle.append(parser)
            self.carry = text.rest(piece, used) if used < text.size(piece) else None
        else:  # the piece starts inside a record, or it raised: dest decides
            data = text.join(self.carry, piece)
            with text.view(data) as view:
                used = dest.feed(view, final=last)
            self.carry = text.rest(data, used) if used < text.size(data) else None
        if self.max_line and self.carry is not None and text.size(self.carry) > self.max_line:
            raise long_line(self.max_line, dest.line, dest.rows)
        if self.settled is not None:
            self.settled(tag)


def region_pieces(size: int, start: int, step: int, find: Callable[[bytes, int], int],
                  threads: int = 1, max_line: int = 0) -> Iterator[tuple[tuple[int, int], bool]]:
    """Cut ``[start, size)`` into ``((start, end), last)`` pieces of about ``step`` bytes.

    Each piece but the last ends just after the first newline at or past its
    target size (``find(b"\\n", at)`` is the buffer's ``find``). Near the end the
    pieces shrink (to a ``2 * threads``-th of what is left, not under
    :data:`MIN_PIECE`), so the ``threads`` workers finish at about the same time.
    A line that does not end within ``max_line`` bytes of a piece's target end
    raises :class:`LongLine` (0: no bound).
    """
    pos = start
    while True:
        end = pos + max(min(step, MIN_PIECE), min(step, (size - pos) // (2 * threads)))
        if end < size:
            newline = find(b"\n", end - 1)
            if max_line and (size if newline < 0 else newline) - (end - 1) > max_line:
                raise LongLine(end - 1)
            end = size if newline < 0 else newline + 1
        end = min(end, size)
        yield (pos, end), end >= size
        if end >= size:
            return
        pos = end


def chunk_pieces(chunks: Iterable[bytes], step: int, max_line: int = 0) -> Iterator[tuple[bytes | memoryview, bool]]:
    """Cut a stream of byte chunks into ``(piece, last)`` pieces that end after a newline.

    A chunk's text up to its first newline joins the previous chunk's tail as a
    small piece of its own; the rest, up to its last newline, is cut into pieces
    of about ``step`` bytes without a copy. The last piece holds whatever
    follows the last newline (possibly nothing). A tail longer than ``max_line``
    bytes (a line that does not end) raises :class:`LongLine` (0: no bound), so
    that no more than that and a chunk are held.
    """
    tail: list[bytes] = []
    held = 0
    for chunk in chunks:
        first = chunk.find(b"\n")
        if first < 0:
            tail.append(chunk)
            held += len(chunk)
            if max_line and held > max_line:
                raise LongLine()
            continue
        if max_line and held + first > max_line:
            raise LongLine()
        view = memoryview(chunk)
        yield (b"".join(tail) + chunk[:first + 1] if tail else view[:first + 1]), False
        last = chunk.rfind(b"\n")
        pos = first + 1
        while pos <= last:
            end = pos + step
            end = last + 1 if end > last else chunk.find(b"\n", end - 1) + 1
            yield view[pos:end], False
            pos = end
        tail = [chunk[last + 1:]] if last + 1 < len(chunk) else []
        held = len(chunk) - last - 1
        if max_line and held > max_line:
            raise LongLine()
    yield b"".join(tail), True
