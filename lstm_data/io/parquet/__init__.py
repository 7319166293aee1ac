"""Parquet files and Arrow tables with ``list<float>`` prong columns (needs the ``parquet`` extra).

Layout read and written
-----------------------
* a scalar column per event variable: float, integer or bool (``calE``, ``nHit``);
* a ``list<float32|float64>`` or ``large_list`` column per prong variable
  (``png.calE``, ``png.nhit``); integer lists are read too, converted to the group's
  float dtype when every value converts exactly (else a ``FormatError``);
* list columns of one prefix whose lengths are equal in every row form one group named
  by their common prefix (``part_px``, ``part_py``, ``part_deta`` form ``part``;
  ``png.calE`` and ``png.nhit`` form ``png``), the rule of every reader
  (:mod:`lstm_data.io.columns.groups`; how a file's lengths are compared:
  :mod:`lstm_data.io.parquet.grouping`), unless a schema declares the groups or the
  file records them (files written by :func:`write_parquet`); a ``list<struct>`` is
  one group. The variables of a group must have the same length in every row: a
  mismatch is a ``SchemaError`` naming the file, the row and the column.

Missing values
--------------
A null scalar is NaN (an integer or bool column with nulls becomes float64); a null
list is an empty list; a null inside a list is NaN.

How it is fast
--------------
:func:`from_arrow` uses Arrow's offsets and values buffers as they are (sliced tables
and several chunks included: no concatenation) and writes each group's ``(total, V)``
block in one compiled pass (:func:`~lstm_data.kernels.interleave_columns`).
:func:`read_parquet` does the same while the next part of the file is being read on a
background thread (see :mod:`lstm_data.io.parquet.read`), or keeps the values on disk
and reads whole row groups on demand (:class:`~lstm_data.io.parquet.disk.ParquetDataset`).
"""
from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, Sequence

from numpy.typing import DTypeLike

from lstm_data._util.deprecation import refuses_renamed
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.io.columns.build import build_group
from lstm_data.io.parquet.columns import import_pyarrow, list_column, scalar_column
from lstm_data.io.parquet.disk import ParquetDataset
from lstm_data.io.parquet.grouping import settle_plan
from lstm_data.io.parquet.plan import ColumnPlan, describe_skipped, plan_columns
from lstm_data.io.parquet.read import (
    decoded_bytes,
    open_sources,
    parquet_files,
    read_in_ram,
)
from lstm_data.io.parquet.write import to_arrow, write_parquet
from lstm_data.io.plumbing.remote_errors import RemoteSettings
from lstm_data.io.schema import SchemaLike

if TYPE_CHECKING:
    import pyarrow as pa

_log = logging.getLogger("lstm_data")
#: how errors and messages name an Arrow table given in memory
_ARROW = "arrow table"

__all__ = ["read_parquet", "from_arrow", "planned_table", "to_arrow", "write_parquet", "ParquetDataset",
           "RAM_FRACTION", "parquet_decoded_bytes"]

#: with ``in_ram=None``, data up to this fraction of the memory left is read into RAM
RAM_FRACTION = 0.25


def from_arrow(table: pa.Table | pa.RecordBatch, *, schema: SchemaLike = None, dtype: DTypeLike | None = None,
               columns: Sequence[str] | str | None = None,
               exclude: Sequence[str] | str | None = None) -> InMemoryDataset:
    """An in-RAM dataset from a ``pyarrow.Table`` (or ``RecordBatch``) of scalar and list columns.

    Parameters
    ----------
    table
        Scalar columns (float, integer, bool) and ``list``/``large_list`` columns of float
        or integer numbers; any chunking, sliced or not. Objects that export the Arrow
        stream interface (``__arrow_c_stream__``) are accepted too.
    schema
        Declared groups, scalars and dtype (:class:`~lstm_data.io.schema.Schema`, a TOML
        path or a mapping); default: groups by name prefix, every column.
    dtype
        float32 or float64 for every scalar and value (default: keep the table's; a
        group's block is float32 when all its columns are, else float64).
    columns, exclude
        Column names or globs to read / never to read (see
        :mod:`lstm_data.io.parquet.plan`).

    Returns
    -------
    InMemoryDataset
        Scalars without nulls, kept at their dtype and in one chunk, are read-only views
        of the table's buffers; each group's values are one new ``(total, V)`` block.
        Its ``skipped`` attribute maps the columns that are not numbers to their types
        (also logged once).

    Raises
    ------
    TypeError
        ``table`` is no Arrow table.
    FormatError
        Nothing numeric to read; an integer that does not convert exactly.
    SchemaError
        Columns of one group differ in length in some row (names the row and column);
        a declared or selected name that is not a column, or is not numbers.
    """
    pa = import_pyarrow()
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    elif not isinstance(table, pa.Table):
        if not hasattr(table, "__arrow_c_stream__"):
            raise TypeError(f"from_arrow needs a pyarrow.Table or RecordBatch, got {type(table).__name__}")
        table = pa.table(table)
    plan = plan_columns(table.schema, schema, dtype, columns=columns, exclude=exclude, file=_ARROW)
    return planned_table(table, plan)


def planned_table(table: Any, plan: ColumnPlan, *, file: str | None = None) -> InMemoryDataset:
    """An in-RAM dataset of the columns of ``plan`` (:func:`~lstm_data.io.parquet.plan.plan_columns`)
    in ``table``, as :func:`from_arrow` reads them.

    Parameters
    ----------
    table
        A ``pyarrow.Table`` holding (at least) the columns of ``plan``.
    plan
        What to read, planned from the schema of ``table`` or of the file it was read from.
    file
        The file ``table`` was read from, named in messages (``None``: a table in memory).

    Returns
    -------
    InMemoryDataset
        As :func:`from_arrow`.

    Raises
    ------
    FormatError, SchemaError
        As :func:`from_arrow`, naming ``file``.
    """
    plan = settle_plan(plan, table, where="every row")
    _log_skipped(plan, file or _ARROW)
    scalars = {s: scalar_column(plan.column(table, s), s, plan.dtype, file=file, exact=plan.exact)
               for s in plan.scalars}
    groups = {}
    for g, names in plan.groups.items():
        dt = plan.group_dtypes[g]
        cols = {}
        for v in names:
            arr, steps = plan.list_source(table, v)
            cols[v] = list_column(arr, v, dt, file=file, steps=steps, exact=plan.exact)
        groups[g] = build_group(g, {v: (c.pieces, c.lengths) for v, c in cols.items()}, dtype=dt)
    out = InMemoryDataset(scalars, groups)
    out.skipped = dict(plan.skipped)
    return out


def _log_skipped(plan: ColumnPlan, where: str) -> None:
    if plan.skipped:
        _log.info("%s: skipped %d columns that are not numbers: %s", where, len(plan.skipped),
                  describe_skipped(plan.skipped))


def _memory_bytes() -> int:
    """The memory this process may still take (what is left, not the machine's total: files
    opened one after another into RAM leave less for the next)."""
    from lstm_data.io.root.memory import available_bytes

    room = available_bytes()
    if room is not None:
        return room
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX
        return 8 << 30


@refuses_renamed("read_parquet")
def read_parquet(path: str | os.PathLike[str], *, schema: Any = None, dtype: Any = None,
                 in_ram: bool | None = None, threads: int | None = None,
                 columns: Sequence[str] | str | None = None,
                 exclude: Sequence[str] | str | None = None, remote: RemoteSettings | None = None) -> Any:
    """Open a Parquet file, or a directory of them (sorted by name, as one dataset).

    Parameters
    ----------
    path
        A ``.parquet``/``.pq`` file or a directory holding them (names starting with
        ``.`` or ``_`` are skipped). The files must hold the same columns.
    schema, dtype
        As for :func:`from_arrow`.
    in_ram
        ``True``: read every row into RAM (an :class:`InMemoryDataset`; fast random
        batches). ``False``: keep values on disk (a :class:`ParquetDataset`: scalars and
        offsets in RAM, a batch reads each row group it touches once). ``None``
        (default): in RAM when the columns' uncompressed size is at most
        :data:`RAM_FRACTION` of the memory left (so of many files opened one after
        another, the later ones stay on disk once memory runs short).
    threads
        Threads pyarrow decodes columns on: ``None`` (default) every core, ``1`` the
        calling thread alone.
    columns, exclude
        Column names or globs to read / never to read (see
        :mod:`lstm_data.io.parquet.plan`); only the chosen columns are read and
        decompressed.
    remote
        Timeouts and retries of the reads of a file at a URL (default: the defaults of
        :class:`~lstm_data.io.plumbing.remote_errors.RemoteSettings`).

    Returns
    -------
    InMemoryDataset or ParquetDataset
        Its ``skipped`` attribute maps the columns that are not numbers to their
        types (also logged once).

    Raises
    ------
    FormatError
        Not Parquet, or damaged (names the file, and the row group when reading it);
        files with different columns; nothing numeric to read.
    SchemaError
        Columns of one group differ in length (names the file, row and column).
    """
    use_threads = threads is None or int(threads) > 1
    import_pyarrow()
    sources = open_sources(parquet_files(path), remote)
    plan = plan_columns(sources[0].schema, schema, dtype, file=sources[0].path, columns=columns,
                        exclude=exclude)
    _log_skipped(plan, str(path))
    if in_ram is None:
        in_ram = decoded_bytes(sources, plan) <= RAM_FRACTION * _memory_bytes()
    if not in_ram:
        return ParquetDataset(path, schema=schema, dtype=dtype, use_threads=use_threads,
                              columns=columns, exclude=exclude, remote=remote)
    out = read_in_ram(sources, plan, use_threads=use_threads)
    out.skipped = dict(plan.skipped)
    return out


def parquet_decoded_bytes(path: str | os.PathLike[str], *, schema: Any = None, dtype: Any = None,
                          columns: Sequence[str] | str | None = None,
                          exclude: Sequence[str] | str | None = None, remote: RemoteSettings | None = None,
                          **_: Any) -> int:
    """Uncompressed bytes of the chosen columns of a Parquet file or directory (from the metadata).

    Other reader options are accepted and ignored.

    Raises
    ------
    FormatError, SchemaError
        As :func:`read_parquet`.
    """
    import_pyarrow()
    sources = open_sources(parquet_files(path), remote)
    plan = plan_columns(sources[0].schema, schema, dtype, file=sources[0].path, columns=columns,
                        exclude=exclude)
    return decoded_bytes(sources, plan)
