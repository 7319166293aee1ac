"""Column kinds decided across all the CSV files of one dataset.

Each file alone shows what it holds: a prong variable whose cells hold at most
one number in one file (or a file with a header and no rows) reads there as a
scalar, while the other files show it as a list. Files of one dataset share their
columns, so the kinds are decided across them: a column that is ragged in any file
is ragged in all of them, in the group of the first file that shows it (a group
by name prefix stays a group). Files whose own inference differs are read with
those groups declared.

Two entry points:

* :func:`unify_kinds` takes files already read into RAM (``lstm_data.open`` of a
  list or a pattern) and reads again only the files that differ;
* :func:`common_schema` decides from the first MiB of each file, before a stream
  reads any of them (a multi-file ``convert``).
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable, Sequence

from lstm_data.data.dataset import Dataset
from lstm_data.io.csv import head
from lstm_data.io.csv.plan import dtype_of
from lstm_data.io.schema import Schema
from lstm_data.io.plumbing.special import is_stream

__all__ = ["unify_kinds", "common_schema", "union_groups"]

_log = logging.getLogger("lstm_data")

FileColumns = tuple[list[str], dict[str, list[str]]]  # (scalar names, {group: variables})


def union_groups(file_columns: Sequence[FileColumns]) -> dict[str, list[str]]:
    """Every group of ``file_columns``: the first file that shows a group names it; a column in
    a group already taken is not grouped again."""
    out: dict[str, list[str]] = {}
    taken: set[str] = set()
    for _, groups in file_columns:
        for name, members in groups.items():
            free = [m for m in members if m not in taken]
            if not free or name in out:
                continue
            out[name] = free
            taken.update(free)
    return out


def _target(found: FileColumns, groups: dict[str, list[str]]) -> FileColumns:
    """The scalars and groups a file of the columns ``found`` has with ``groups`` declared."""
    scalars, own = found
    columns = set(scalars) | {m for ms in own.values() for m in ms}
    declared = {g: ms for g, ms in groups.items() if set(ms) <= columns}
    grouped = {m for ms in declared.values() for m in ms}
    return [s for s in scalars if s not in grouped], declared


def _with_groups(schema: Schema | None, groups: dict[str, list[str]]) -> Schema:
    if schema is None:
        return Schema(groups=groups)
    return dataclasses.replace(schema, groups={**schema.groups, **groups})


def _differs(found: FileColumns, groups: dict[str, list[str]]) -> bool:
    scalars, own = found
    want_scalars, want = _target(found, groups)
    return sorted(own.items()) != sorted(want.items()) or sorted(scalars) != sorted(want_scalars)


def unify_kinds(datasets: list[Dataset], paths: Sequence[str], reopen: Callable[[str, Schema], Dataset],
                schema: Any = None, is_csv: Callable[[str], bool] = lambda p: True) -> list[Dataset]:
    """``datasets`` (read from ``paths``), with the CSV ones whose column kinds differ from
    the others' read again by ``reopen(path, schema)`` with the groups of the whole set declared.

    Only CSV files (``is_csv(path)``) take part; a file that agrees is kept as read.
    """
    csv_at = [i for i, p in enumerate(paths) if is_csv(p)]  # a stream takes part, but is not read again
    if len(csv_at) < 2:
        return datasets
    file_columns = {i: (list(datasets[i].scalar_names), {g: list(v) for g, v in datasets[i].groups.items()})
               for i in csv_at}
    groups = union_groups([file_columns[i] for i in csv_at])
    odd = [i for i in csv_at if _differs(file_columns[i], groups) and not is_stream(paths[i])]
    if not odd:
        return datasets
    declared = _with_groups(Schema.coerce(schema), groups)
    out = list(datasets)
    for i in odd:
        _log.info("%s: ragged groups %s as the other CSV files of the dataset show them",
                  paths[i], sorted(_target(file_columns[i], groups)[1]))
        out[i] = reopen(paths[i], declared)
    return out


def _sample_columns(path: str, schema: Schema | None, sep: str | None, list_sep: str | None,
                    dtype: Any, threads: int | None) -> FileColumns:
    """The columns the first MiB of ``path`` shows (as :func:`reader.read_csv` infers them)."""
    first = head.first_plan(path, schema, dtype_of(dtype, schema), sep, list_sep)
    names, plan = first.names, first.plan
    if plan.general:  # the sample did not parse: the file's own read reports it
        return [], {}
    groups = {g: [names[c] for c in cols] for g, cols in plan.groups.items()}
    grouped = {m for ms in groups.values() for m in ms}
    scalars = [n for n, k in zip(names, plan.kinds) if k == "scalar" and n not in grouped]
    return scalars, groups


def common_schema(paths: Sequence[str], schema: Any = None, *, sep: str | None = None,
                  list_sep: str | None = None, dtype: Any = None, threads: int | None = None,
                  **_: Any) -> Schema | None:
    """The schema to read every CSV file of ``paths`` with, so that their column kinds agree.

    ``schema`` itself (coerced) when the first MiB of every file shows the same
    columns; else ``schema`` plus the groups of all of them declared.
    """
    given = Schema.coerce(schema)
    if len(paths) < 2:
        return given
    file_columns: list[FileColumns] = [([], {}) if is_stream(p) else
                                       _sample_columns(p, given, sep, list_sep, dtype, threads)
                                       for p in paths]  # a stream is read once, by its reader
    groups = union_groups(file_columns)
    if not any(_differs(found, groups) for found in file_columns if found != ([], {})):
        return given
    _log.info("CSV inputs: column kinds decided across %d files: groups %s", len(paths), sorted(groups))
    return _with_groups(given, groups)
