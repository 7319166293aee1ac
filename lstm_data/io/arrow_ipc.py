"""Arrow IPC files (Feather v2): ``.arrow``, ``.feather``, ``.ipc`` (needs the ``parquet`` extra).

A file is told by its magic bytes ``ARROW1``, whatever its name. Only the columns
chosen are read (``columns``/``exclude``, or the columns a spec needs), through
``pyarrow.ipc``; compressed files (LZ4, ZSTD) are decompressed by pyarrow. The table
then becomes a dataset as an Arrow table in memory does
(:func:`lstm_data.io.parquet.from_arrow`): the same groups, the same values bitwise,
the same columns skipped. The dataset is in RAM.

The Arrow IPC *stream* format (no footer, no magic bytes) is not read: write the
file format (``pyarrow.ipc.new_file``, ``pyarrow.feather.write_feather``).
"""
from __future__ import annotations

import importlib
import os
from typing import Any, Sequence

from lstm_data.data.dataset import InMemoryDataset
from lstm_data.errors import FormatError
from lstm_data.io.parquet import planned_table
from lstm_data.io.parquet.columns import import_pyarrow
from lstm_data.io.parquet.plan import plan_columns

__all__ = ["read_arrow_ipc"]


def read_arrow_ipc(path: str | os.PathLike[str], *, schema: Any = None, dtype: Any = None,
                   columns: Sequence[str] | str | None = None, exclude: Sequence[str] | str | None = None,
                   threads: int | None = None) -> InMemoryDataset:
    """Open an Arrow IPC file (Feather v2) into RAM.

    Parameters
    ----------
    path
        The file.
    schema, dtype, columns, exclude
        As for :func:`~lstm_data.io.parquet.from_arrow`; only the chosen columns are read.
    threads
        ``1``: decompress on the calling thread alone; ``None`` (default): pyarrow's threads.

    Returns
    -------
    InMemoryDataset
        Its ``skipped`` attribute maps the columns that are not numbers to their types.

    Raises
    ------
    FormatError
        Not an Arrow IPC file, or damaged (names the file); nothing numeric to read.
    SchemaError
        Columns of one group differ in length (names the file, row and column); a
        declared or selected name that is not a column.
    """
    pa = import_pyarrow()
    ipc = importlib.import_module("pyarrow.ipc")
    where = os.fspath(path)
    try:
        with pa.OSFile(where, "rb") as source:
            file_schema = ipc.open_file(source).schema
            plan = plan_columns(file_schema, schema, dtype, file=where, columns=columns, exclude=exclude)
            fields = sorted(file_schema.get_field_index(name) for name in plan.columns)
            options = ipc.IpcReadOptions(included_fields=fields, use_threads=threads is None or threads > 1)
            table = ipc.open_file(source, options=options).read_all()
    except (pa.ArrowInvalid, pa.ArrowMemoryError, pa.ArrowNotImplementedError) as exc:
        raise FormatError(f"cannot read this Arrow IPC file, damaged or incomplete? "
                          f"({type(exc).__name__}: {exc})", file=where) from None
    return planned_table(table, plan, file=where)
