"""Datasets out to Arrow tables and Parquet files: scalars as columns, prong variables as lists.

Every variable of a ragged group becomes a ``list<float>`` column (``large_list`` when
asked for, or when the offsets do not fit int32); the group's variables share one
offsets buffer. The groups are recorded in the schema metadata (key ``lstm_data``) so
that :func:`~lstm_data.io.parquet.from_arrow` and the Parquet reader give back the same
groups even when variable names do not start with their group's name. NaN stays NaN
(no nulls are written), so a round trip is bitwise.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import numpy as np

from lstm_data._util.safe_output import (
    check_not_input,
    remove_path,
    remove_stale_temporaries,
    temp_path,
)
from lstm_data._util.exclusive import output_lock
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.io.ours.ownership import check_target, put_in_place
from lstm_data.io.parquet.columns import arrow_metadata, import_pyarrow

__all__ = ["to_arrow", "write_parquet", "ROW_GROUP_BYTES"]

#: uncompressed bytes per row group that :func:`write_parquet` aims at
ROW_GROUP_BYTES = 64 << 20
_INT32_MAX = 2 ** 31 - 1


def _columns_of(dataset: Any, a: int, b: int) -> tuple[dict[str, np.ndarray],
                                                      dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Scalars and ``(values, offsets)`` of rows ``a:b`` (views for an in-RAM dataset)."""
    if isinstance(dataset, InMemoryDataset):
        scalars = {s: dataset.scalar(s)[a:b] for s in dataset.scalar_names}
        groups: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for g in dataset.groups:
            values, offsets = dataset.ragged(g)
            lo, hi = int(offsets[a]), int(offsets[b])
            groups[g] = (values[lo:hi], offsets[a:b + 1] - lo)
        return scalars, groups
    rows = np.arange(a, b, dtype=np.intp)
    return ({s: dataset.scalar(s, rows) for s in dataset.scalar_names},
            {g: dataset.ragged(g, rows) for g in dataset.groups})


def _table(pa: Any, names: dict[str, list[str]], scalars: dict[str, np.ndarray],
           groups: dict[str, tuple[np.ndarray, np.ndarray]], large_list: bool | None) -> Any:
    columns, fields = [], []
    for s, col in scalars.items():
        columns.append(pa.array(np.ascontiguousarray(col)))
        fields.append(pa.field(s, columns[-1].type))
    for g, (values, offsets) in groups.items():
        large = large_list if large_list is not None else int(offsets[-1]) > _INT32_MAX
        kind = pa.LargeListArray if large else pa.ListArray
        off = pa.array(offsets.astype(np.int64 if large else np.int32))
        per_variable = np.ascontiguousarray(values.T)  # one transposing copy for the whole group
        for j, v in enumerate(names[g]):
            columns.append(kind.from_arrays(off, pa.array(per_variable[j])))
            fields.append(pa.field(v, columns[-1].type))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=arrow_metadata(names)))


def to_arrow(dataset: Any, *, large_list: bool | None = None) -> Any:
    """``dataset`` as a ``pyarrow.Table``: scalars as columns, each prong variable a list column.

    Parameters
    ----------
    dataset
        Any :class:`~lstm_data.data.dataset.Dataset` (an on-disk one is read whole).
    large_list
        ``True``: ``large_list`` columns (int64 offsets); ``False``: ``list`` (int32);
        ``None`` (default): ``list`` unless a group holds more than 2**31 - 1 values.

    Returns
    -------
    pyarrow.Table
        Scalars first, then every group's variables in order; the groups are recorded in
        the schema metadata. :func:`~lstm_data.io.parquet.from_arrow` gives the dataset back,
        bitwise.
    """
    pa = import_pyarrow()
    scalars, groups = _columns_of(dataset, 0, len(dataset))
    return _table(pa, dataset.groups, scalars, groups, large_list)


def _row_group_rows(dataset: Any) -> int:
    """Rows per row group so that one holds about :data:`ROW_GROUP_BYTES` uncompressed."""
    n = max(1, len(dataset))
    none = np.zeros(0, dtype=np.intp)
    row_bytes = sum(dataset.scalar(s, none).dtype.itemsize for s in dataset.scalar_names)
    for g, names in dataset.groups.items():
        itemsize = dataset.ragged(g, none)[0].dtype.itemsize
        row_bytes += 4 + len(names) * (4 + itemsize) * int(dataset.offsets(g)[-1]) / n
    return int(min(1 << 20, max(1024, ROW_GROUP_BYTES // max(1, int(row_bytes)))))


def write_parquet(dataset: Any, path: str | os.PathLike[str], *, row_group_size: int | None = None,
                  compression: str = "zstd", large_list: bool | None = None, overwrite: bool = False,
                  progress: Callable[[int, int], None] | None = None) -> None:
    """Write ``dataset`` to one Parquet file, atomically, row group by row group.

    Parameters
    ----------
    dataset
        Any :class:`~lstm_data.data.dataset.Dataset`; rows stream one row group at a time,
        so an on-disk dataset never sits in RAM whole.
    path
        The ``.parquet`` file. It is written under a temporary name and renamed into
        place when complete.
    row_group_size
        Rows per row group (default: about 64 MiB of uncompressed values each: random
        access on disk reads whole row groups, and a big file still pipelines).
    compression
        Any codec pyarrow writes (``"zstd"``, ``"snappy"``, ``"lz4"``, ``"none"``...).
    large_list
        As for :func:`to_arrow` (decided for the whole dataset when ``None``).
    overwrite
        Replace an existing ``path`` (only once the new file is complete).
    progress
        Called as ``progress(rows_done, rows_total)`` after each row group.

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is false.
    ValueError
        ``path`` is (or holds, or lies in) one of the dataset's sources.
    """
    pa = import_pyarrow()
    target = Path(path)
    check_not_input(target, getattr(dataset, "source", ()))
    with output_lock(target):  # a second writer of the same output fails here, at once
        check_target(target, overwrite)  # only an output of ours is replaced
        _write(pa, dataset, target, row_group_size, large_list, compression, progress, overwrite)


def _write(pa: Any, dataset: Any, target: Path, row_group_size: int | None, large_list: bool | None,
           compression: str, progress: Any, overwrite: bool) -> None:
    """Write ``dataset`` to a temporary name beside ``target``, then rename it into place."""
    remove_stale_temporaries(target)
    n = len(dataset)
    step = int(row_group_size) if row_group_size is not None else _row_group_rows(dataset)
    if step < 1:
        raise ValueError(f"row_group_size must be at least 1, got {row_group_size}")
    names = dataset.groups
    if large_list is None:  # one schema for every row group
        large_list = any(int(dataset.offsets(g)[-1]) > _INT32_MAX for g in names)
    tmp = temp_path(target)
    try:
        writer = None
        try:
            for a in range(0, max(n, 1), step):
                b = min(n, a + step)
                table = _table(pa, names, *_columns_of(dataset, a, b), large_list)
                if writer is None:
                    writer = pa.parquet.ParquetWriter(tmp, table.schema, compression=compression,
                                                      write_page_checksum=True)
                writer.write_table(table, row_group_size=step)
                if progress is not None:
                    progress(b, n)
        finally:
            if writer is not None:
                writer.close()
        put_in_place(tmp, target, overwrite)
    except BaseException:
        remove_path(tmp)
        raise
