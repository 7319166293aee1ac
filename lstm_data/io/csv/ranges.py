"""Row-aligned byte ranges of a large plain CSV file: partitions of a distributed convert.

A range starts just after a newline and ends just after one, so that it holds
whole records, and is parsed with the plan the whole file would get (decided
from the file's first MiB, as :func:`~lstm_data.io.csv.stream.csv_blocks` does),
so that its rows are exactly those of the one-process parse.

What a split needs: no newline inside a quoted cell at a range boundary. That is
checked when the ranges are made, exactly: in CSV a quote character inside a
quoted cell is doubled, so a newline lies inside quotes if and only if an odd
number of quote characters precede it. A boundary that would fall inside quotes
is a ``FormatError`` that says so (convert that file without splitting it).

Errors in a range are raised with the line and row counted from the range's
start (``line`` 1 is its first line) and the attribute ``range_start``; the
caller, which knows the ranges before, adds the lines and rows before it
(:func:`fix_location`).
"""
from __future__ import annotations

import mmap
import os
from typing import Any, Iterator

from lstm_data.data.dataset import InMemoryDataset
from lstm_data.errors import FormatError, _Located
from lstm_data.io.plumbing.byte_blocks import compression_of
from lstm_data.io.csv import head
from lstm_data.io.csv.plan import dtype_of, split_header
from lstm_data.io.csv.stream import _columns_of, _Flushing
from lstm_data.io.ours.row_blocks import BLOCK_BYTES, RestartStream, RowBlocks
from lstm_data.io.schema import Schema

__all__ = ["csv_partitions", "csv_range_blocks", "fix_location"]

#: bytes fed to the parser at a time
_FEED = 1 << 20


def csv_partitions(path: str, split_bytes: int) -> list[tuple[int, int]] | None:
    """Row-aligned byte ranges of about ``split_bytes`` covering ``path``'s records.

    ``None`` when the file is one partition: compressed, not larger than
    ``split_bytes``, or ``split_bytes <= 0``.

    Raises
    ------
    FormatError
        A boundary would fall inside a quoted cell (a newline inside quotes).
    """
    size = os.path.getsize(path)
    if split_bytes <= 0 or size <= split_bytes or compression_of(path) is not None:
        return None
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        header = split_header(mm[:head.SAMPLE_SIZE], size <= head.SAMPLE_SIZE, ",", path)
        if header is None:
            return None
        start = header[1]
        cuts = [start]
        pos = start + split_bytes
        while pos < size:
            nl = mm.find(b"\n", pos)
            if nl < 0 or nl + 1 >= size:
                break
            cuts.append(nl + 1)
            pos = nl + 1 + split_bytes
        cuts.append(size)
        quotes = 0
        for a, b in zip(cuts[:-1], cuts[1:]):
            quotes += _count(mm, b'"', a, b)
            if quotes % 2 and b < size:
                line = 1 + _count(mm, b"\n", 0, b)
                raise FormatError(f"a newline inside a quoted cell ends line {line - 1}: this file cannot be "
                                  "split into byte ranges at row boundaries; convert it as one partition "
                                  "(split_bytes=0)", file=path, offset=b - 1)
    return list(zip(cuts[:-1], cuts[1:]))


def csv_range_blocks(path: str, start: int, end: int, *, schema: Any = None, block_bytes: int = BLOCK_BYTES,
                     dtype: Any = None, sep: str | None = None, list_sep: str | None = None,
                     **_: Any) -> RowBlocks:
    """The records in bytes ``start .. end`` of the plain CSV ``path``, in blocks, with the file's plan."""
    schema = Schema.coerce(schema)
    dt = dtype_of(dtype, schema)
    first = head.first_plan(path, schema, dt, sep, list_sep)
    sample, options, plan = first.sample, first.options, first.plan
    if plan.general and first.general.general:  # the whole file decides: a stream of a range cannot
        raise RestartStream(f"{path}: its first MiB does not decide the columns")
    empty = _columns_of(plan, options)
    row_bytes = max(1.0, len(sample) / max(1, sample.count(b"\n")) * 0.6)
    rows = max(1, int(block_bytes / row_bytes))

    def blocks() -> Iterator[tuple[InMemoryDataset, int]]:
        from lstm_data import kernels

        out: list[tuple[InMemoryDataset, int]] = []
        position = [0]
        parser = _Flushing(kernels.CsvBlockParser(plan.names, plan.kinds, plan.groups, **options), rows, plan,
                           dt, out.append, position)
        parser.line = 1
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm, \
                memoryview(mm) as whole:
            pos, step = start, _FEED
            try:
                while pos < end:
                    last = pos + step >= end
                    with whole[pos:min(end, pos + step)] as chunk:
                        used = parser.feed(chunk, final=last)
                    pos = end if last else pos + used
                    step = _FEED if used else step * 2  # a record longer than a feed
                    position[0] = pos - start
                    yield from out
                    out.clear()
                parser.flush()
                yield from out
            except _Located as exc:
                row = None if exc.row is None else exc.row + parser.emitted
                located = exc.located(file=path, row=row)
                located.range_start = start  # type: ignore[attr-defined]
                raise located from None

    return RowBlocks({s: empty.scalar(s).dtype for s in empty.scalar_names},
                     {g: list(v) for g, v in empty.groups.items()},
                     {g: empty.ragged(g)[0].dtype for g in empty.groups}, blocks, end - start, (path,), None)


def _count(mm: mmap.mmap, byte: bytes, a: int, b: int, step: int = 16 << 20) -> int:
    """Occurrences of ``byte`` in ``mm[a:b]``, counted ``step`` bytes at a time (no big copy)."""
    total = 0
    with memoryview(mm) as whole:
        for lo in range(a, b, step):
            total += bytes(whole[lo:min(b, lo + step)]).count(byte)
    return total


def fix_location(exc: BaseException, path: str, start: int, rows_before: int) -> BaseException:
    """``exc`` (raised in the range at ``start``) with its line and row counted from the file's start."""
    if not isinstance(exc, _Located):
        return exc
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        lines_before = _count(mm, b"\n", 0, start)
    line = None if exc.line is None else exc.line + lines_before
    row = None if exc.row is None else exc.row + rows_before
    return exc.located(line=line, row=row)
