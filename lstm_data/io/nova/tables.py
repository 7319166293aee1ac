"""The tables of a NOvA HDF5 file: detection, columns, and the names they get.

A table is an HDF5 group at the root holding one dataset per column, all with
the same number of rows, shape ``(n,)``, ``(n, 1)`` or ``(n, k)``; among them the
key columns :data:`KEY_COLUMNS`. Column ``c`` of table ``t`` becomes variable
``t.c``; a ``(n, k)`` column with ``k > 1`` becomes ``t.c[0]`` ... ``t.c[k-1]``.
Aliases rename tables (and with them the start of their variables' names and of
their sub-tables' names) or single variables.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import h5py

from lstm_data.data.dataset import unknown_name_error
from lstm_data.errors import FormatError, SchemaError
from lstm_data.io.hdf5.checks import member, root_names
from lstm_data.io.hdf5.columns import skip_reason

__all__ = ["KEY_COLUMNS", "Column", "Table", "is_nova_file", "list_tables", "apply_aliases", "table_of"]

#: the event key of a slice, in sort order
KEY_COLUMNS = ("run", "subrun", "cycle", "evt", "subevt")
#: the root attribute of lstm_data's own HDF5 layout (see :mod:`lstm_data.io.ours.layout`)
_OURS_ATTR = "lstm_data_format"


@dataclass
class Column:
    """One column dataset of a table.

    Attributes
    ----------
    name : str
        The dataset's name inside its table (``calE``, ``dir.x``).
    width : int
        ``k`` of a ``(n, k)`` dataset, 1 for ``(n,)`` and ``(n, 1)``.
    variables : list of str
        The output names, ``width`` of them (after aliasing).
    """

    name: str
    width: int
    variables: list[str] = field(default_factory=list)


@dataclass
class Table:
    """One table: its group name, rows, key and value columns.

    Attributes
    ----------
    name : str
        The HDF5 group (``rec.vtx.elastic.fuzzyk.png``).
    alias : str
        The name of its group / the start of its variables' names.
    n_rows : int
    columns : list of Column
        Every column but the keys, in file order.
    unchecked : list of str
        Its datasets (keys included) with neither a fletcher32 checksum nor gzip,
        whose damage reads as other numbers.
    skipped : dict
        ``table.column`` -> what it holds, for its columns that are not numbers
        (strings, time, compound records...): left out.
    """

    name: str
    alias: str
    n_rows: int
    columns: list[Column]
    unchecked: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def is_nova_file(path: str | Path) -> bool:
    """Whether ``path`` is an HDF5 file of NOvA-style tables.

    True when the root holds at least one group with the datasets ``run``,
    ``subrun``, ``cycle``, ``evt`` and ``subevt``, and the file is not in
    lstm_data's own layout. Only names are looked at (no data is read; external
    links are not followed), and the search stops at the first such group. A
    file h5py cannot open is not one (the HDF5 reader then reports the damage).
    """
    try:
        with h5py.File(path, "r") as fh:
            if _OURS_ATTR in fh.attrs:
                return False
            for name in fh:
                if isinstance(fh.get(name, getlink=True), h5py.ExternalLink):
                    continue
                if fh.get(name, getclass=True) is h5py.Group:
                    group = fh[name]
                    if all(k in group for k in KEY_COLUMNS):
                        return True
    except (OSError, KeyError, ValueError):
        return False
    return False


def _select(names: list[str], wanted: Sequence[str] | None, file: str) -> list[str]:
    """``names`` picked by exact names or glob patterns (file order), or all."""
    if wanted is None:
        return names
    keep: set[str] = set()
    for pattern in wanted:
        if pattern in names:
            keep.add(pattern)
            continue
        hits = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
        if not hits:
            raise unknown_name_error("table", pattern, names).located(file=file)
        keep.update(hits)
    return [n for n in names if n in keep]


def list_tables(fh: h5py.File, *, tables: Sequence[str] | None, slice_table: str | None,
                file: str, trust_external: bool = False) -> list[Table]:
    """The tables to read, their columns checked.

    An external link at the root counts as a table (it is not followed to see what it
    is); reading it is refused unless ``trust_external`` (see
    :mod:`lstm_data.io.hdf5.checks`), as is a column reached through an external link
    or whose values lie in other files.

    Raises
    ------
    SchemaError
        A requested table (or pattern) is not in the file.
    FormatError
        A table without one of the key columns, a key column that is not
        integers, a column that is not 1-D or ``(n, k)``, or of another length
        than the table's keys; an outside reference (see above). A column that is
        not numbers (strings, time, records) is skipped: listed in ``Table.skipped``.
    """
    names = root_names(fh, groups_only=True, trust_external=trust_external)
    if not names:
        raise FormatError("no tables (HDF5 groups) at the root of this file", file=file)
    chosen = _select(names, tables, file)
    if slice_table is not None:
        if slice_table not in names:
            raise unknown_name_error("table", slice_table, names).located(file=file)
        if slice_table not in chosen:
            chosen = [n for n in names if n in set(chosen) | {slice_table}]
    return [_table(member(fh, name, file=file, trust_external=trust_external), name, file,
                   trust_external) for name in chosen]


def _table(group: h5py.Group, name: str, file: str, trust_external: bool) -> Table:
    missing = [k for k in KEY_COLUMNS if k not in group]
    if missing:
        raise FormatError(f"table {name!r} has no key column{'s' if len(missing) > 1 else ''} "
                          f"{', '.join(map(repr, missing))}; every table needs {', '.join(KEY_COLUMNS)} "
                          "(leave this group out with tables=[...])", file=file, variable=name)
    n_rows = None
    columns, unchecked = [], []
    skipped: dict[str, str] = {}
    for col in group:
        ds = member(group, col, file=file, trust_external=trust_external)
        where = f"{name}/{col}"
        if not isinstance(ds, h5py.Dataset):
            raise FormatError(f"{where!r} is a group inside table {name!r}; a table holds one "
                              "dataset per column", file=file, variable=f"{name}.{col}")
        why = skip_reason(ds.id.get_type())
        if why is not None:
            if col not in KEY_COLUMNS:
                skipped[f"{name}.{col}"] = why
                continue
            raise FormatError(f"key column {where!r} holds {why}; expected integers", file=file,
                              variable=f"{name}.{col}")
        kinds = "iu" if col in KEY_COLUMNS else "fiub"
        if ds.dtype.kind not in kinds or ds.ndim not in (1, 2) or (ds.ndim == 2 and ds.shape[1] < 1):
            what = "integers" if col in KEY_COLUMNS else "numbers"
            raise FormatError(f"column {where!r} has dtype {ds.dtype} and shape {ds.shape}; "
                              f"expected {what} of shape (n,) or (n, k)"
                              + (" (a key column, width 1)" if col in KEY_COLUMNS else ""),
                              file=file, variable=f"{name}.{col}")
        if col in KEY_COLUMNS and ds.ndim == 2 and ds.shape[1] != 1:
            raise FormatError(f"key column {where!r} has shape {ds.shape}; expected (n,) or (n, 1)",
                              file=file, variable=f"{name}.{col}")
        if n_rows is None:
            n_rows, first = ds.shape[0], col
        elif ds.shape[0] != n_rows:
            raise FormatError(f"table {name!r}: column {col!r} has {ds.shape[0]} rows but {first!r} has "
                              f"{n_rows}", file=file, variable=f"{name}.{col}")
        if col not in KEY_COLUMNS:
            columns.append(Column(col, 1 if ds.ndim == 1 else int(ds.shape[1])))
        dcpl = ds.id.get_create_plist()
        filters = {dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())}
        if not filters & {h5py.h5z.FILTER_FLETCHER32, h5py.h5z.FILTER_DEFLATE}:
            unchecked.append(where)
    return Table(name, name, int(n_rows or 0), columns, unchecked, skipped)


def apply_aliases(tables: list[Table], aliases: Mapping[str, str], *, file: str) -> dict[str, str]:
    """Name every column's variables, with ``aliases`` (new name -> table or variable).

    A table alias renames the table and every table whose name continues it
    after a dot (the longest aliased table wins); a variable alias renames one
    variable (``table.column``, ``table.column[j]`` or a key column).

    Returns
    -------
    dict
        Key column -> its output name.

    Raises
    ------
    SchemaError
        An alias names neither a table nor a variable, two aliases name the
        same one, or two variables end up with the same name.
    """
    table_names = {t.name for t in tables}
    for t in tables:
        for c in t.columns:
            c.variables = ([f"{t.name}.{c.name}"] if c.width == 1
                           else [f"{t.name}.{c.name}[{j}]" for j in range(c.width)])
    originals = [v for t in tables for c in t.columns for v in c.variables]
    known = set(originals) | set(KEY_COLUMNS)
    targets: dict[str, str] = {}
    for new, old in aliases.items():
        if old in targets:
            raise SchemaError(f"aliases {targets[old]!r} and {new!r} both rename {old!r}", file=file,
                              variable=old)
        if old not in table_names and old not in known:
            raise unknown_name_error("table or variable", old, sorted(table_names) + originals
                                     ).located(file=file)
        targets[old] = new
    by_table = sorted((old for old in targets if old in table_names), key=len, reverse=True)
    for t in tables:
        base = next((a for a in by_table if t.name == a or t.name.startswith(a + ".")), None)
        if base is not None:
            t.alias = targets[base] + t.name[len(base):]
        for c in t.columns:
            c.variables = [targets.get(v, t.alias + v[len(t.name):]) for v in c.variables]
    key_names = {k: targets.get(k, k) for k in KEY_COLUMNS}
    seen: dict[str, str] = {}
    for t in tables:
        for c in t.columns:
            for v in c.variables:
                if v in seen or v in key_names.values():
                    raise SchemaError(f"two variables are named {v!r} (after aliasing): column "
                                      f"{c.name!r} of table {t.name!r} and {seen.get(v, 'a key column')}",
                                      file=file, variable=v)
                seen[v] = f"column {c.name!r} of table {t.name!r}"
    return key_names


def table_of(tables: list[Table]) -> dict[str, tuple[Table, Column, int]]:
    """Variable -> (table, column, index within the column)."""
    return {v: (t, c, j) for t in tables for c in t.columns for j, v in enumerate(c.variables)}

