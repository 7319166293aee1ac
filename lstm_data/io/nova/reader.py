"""``read_nova``: NOvA HDF5 tables into one in-RAM dataset of slices.

Which tables give what (see :func:`read_nova`):

* the **slices** are the union, in key order, of the keys of every table with
  at most one row per key (or the keys of ``slice_table``);
* such a table gives **scalars** ``table.column``: NaN for a slice it has no row for;
* a table with several rows for some key gives a **ragged group** named after the
  table, variables ``table.column``; its rows are its prongs, a slice without
  rows has none. Its offsets come from matching its runs of equal keys to the
  slices with ``numpy.searchsorted``; its rows are then the group's values as
  they are, in file order;
* the key columns give the int64 scalars ``run``, ``subrun``, ``cycle``, ``evt``,
  ``subevt`` (exact: they are never cast to float).

Every column dataset is read once, in whole-chunk slices of a few MiB, and
written (cast to ``dtype``) straight into its place in the output: the peak
memory is the output plus one table's key columns plus one block.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Mapping, Sequence

import h5py
import numpy as np

from lstm_data.data.dataset import InMemoryDataset
from lstm_data.errors import FormatError, SchemaError, warn_user
from lstm_data.io.columns.select import ColumnSelection
from lstm_data.io.hdf5.reader import read_rows
from lstm_data.io.ours.layout import value_dtype
from lstm_data.io.nova.columns import ColumnReader, PrecisionWarning
from lstm_data.io.nova.keys import (
    TableKeys,
    check_sorted,
    describe,
    match,
    pack_codes,
    read_keys,
    slice_codes,
)
from lstm_data.io.nova.tables import (
    Table,
    apply_aliases,
    list_tables,
    table_of,
)
from lstm_data.io.schema import Schema

__all__ = ["read_nova", "NovaDataset", "PrecisionWarning"]

_log = logging.getLogger("lstm_data")
#: HDF5 chunk cache per open dataset: reads are whole chunks, so it only keeps a chunk that
#: straddles two blocks (HDF5 2's default, 8 MiB, stays allocated while the dataset is open)
_CHUNK_CACHE = 1 << 20


class NovaDataset(InMemoryDataset):
    """The slices of a NOvA HDF5 file, in RAM (returned by :func:`read_nova`).

    Attributes
    ----------
    notes : tuple of str
        What the file cannot detect, for ``lstm-data inspect``: column datasets
        with neither a ``fletcher32`` checksum nor gzip (whose stream checksum
        catches damage), read as other numbers when damaged.
    slice_tables : tuple of str
        The tables whose keys are the slices.
    """

    notes: tuple[str, ...] = ()
    slice_tables: tuple[str, ...] = ()


def _pick(option: str, given: Any, in_schema: Any, file: str) -> Any:
    if given is not None and in_schema is not None and given != in_schema:
        raise SchemaError(f"{option} given both as an option ({given!r}) and in the schema "
                          f"({in_schema!r}); give it once", file=file)
    return given if given is not None else in_schema


def read_nova(path: str | os.PathLike[str], *, schema: Any = None, tables: Sequence[str] | None = None,
              slice_table: str | None = None, aliases: Mapping[str, str] | None = None,
              dtype: Any = None, trust_external: bool = False,
              columns: Sequence[str] | str | None = None,
              exclude: Sequence[str] | str | None = None) -> NovaDataset:
    """Read a NOvA-style HDF5 file of tables (one group per table, one dataset per column).

    Parameters
    ----------
    path
        The ``.h5`` file.
    schema
        A :class:`~lstm_data.io.schema.Schema` (or TOML path or mapping): its
        ``tables``, ``slice_table`` and ``aliases`` entries act as the options
        of the same names; ``groups`` declares groups over the variables of one
        table, or of several tables whose rows are the same (same keys, same
        number of rows per key), by their names after aliasing; such a table is
        a group even with at most one row per key, and its undeclared columns
        are left out; ``scalars`` keeps only the scalars listed (key columns
        included); ``dtype`` as the option.
    tables
        Tables to read (names or glob patterns, e.g. ``"rec.vtx.elastic.fuzzyk.png*"``);
        default all the groups at the root.
    slice_table
        The table whose keys are the slices (it must have at most one row per
        key); every other table's keys must be among them. Default: the union
        of the keys of all tables with at most one row per key.
    aliases
        New name -> table or variable. A table alias renames the table's group
        and the start of its variables' names, and of the tables that continue
        its name after a dot: ``{"png": "rec.vtx.elastic.fuzzyk.png"}`` gives group
        ``png`` with ``png.calE``, ... and ``png.cvnpart.muonid`` for the table
        ``rec.vtx.elastic.fuzzyk.png.cvnpart``. A variable alias renames one
        variable (``{"trueE": "rec.mc.nu.E"}``).
    dtype
        float32 (default, or the schema's) or float64: every column but the keys
        is cast to it, integers included. A column whose integers it does not
        hold exactly (beyond 2**24 for float32, 2**53 for float64) raises a
        :class:`PrecisionWarning` naming it and its first such row. The key
        columns stay int64.
    trust_external
        Follow external links, external storage and virtual datasets of other
        files (default: refuse them, naming the link or dataset and its target;
        see :mod:`lstm_data.io.hdf5.checks`).
    columns, exclude
        Names or globs of the variables to read / never to read (see
        :mod:`lstm_data.io.columns.select`), matched against a variable's name
        after aliasing and against its table's (aliased) name: ``columns=["png"]``
        reads the group ``png``. Only the chosen columns' datasets are read (and the
        key columns, which place every row).

    Returns
    -------
    NovaDataset
        One row per slice, in key order.

    Notes
    -----
    A table without rows says neither whether it holds one row per slice or
    prongs: it is read as a group with no prongs in any slice (a warning names it)
    unless the schema declares it a group, or lists its variables as scalars (NaN
    in every slice). A file whose tables are all empty has no slices.

    A table with several rows for a few keys only (one key, or at most 1% of them) and
    no index column (``..._idx``) looks like a per-slice table with a duplicated
    key: it is read as a group, with a warning naming the table, the key and its
    row; ``slice_table`` makes such a duplicate an error.

    Several files (``lstm_data.open("dir/*.h5")``) are read one by one and put
    one after another. A table with at most one row per key in one file and
    several in another would be scalars in one and a group in the other, which
    ``open`` refuses to join (naming the file): declare such a table a group in
    the schema (``groups = {"rec.mc.nu" = "rec.mc.nu.*"}``) and every file reads
    it alike.

    Raises
    ------
    FormatError
        A table misses a key column, holds a column that is not numbers or of
        another length, is not sorted by key; a row's key is not a slice; a
        damaged chunk (names file, dataset and chunk). Every message names the
        file and the table, and the first bad key and its row where there is one.
    SchemaError
        Unknown tables or aliases, names that collide, declared groups whose
        tables do not share rows, a declared scalar of a table with several rows
        per key.
    """
    name = str(path)
    parsed = Schema.coerce(schema)
    tables = _pick("tables", tables, parsed.tables if parsed else None, name)
    slice_table = _pick("slice_table", slice_table, parsed.slice_table if parsed else None, name)
    aliases = _pick("aliases", dict(aliases) if aliases is not None else None,
                    (parsed.aliases or None) if parsed else None, name) or {}
    dt = value_dtype(dtype if dtype is not None else (parsed.dtype if parsed else np.float32),
                     file=name)
    assert dt is not None
    with h5py.File(path, "r", rdcc_nbytes=_CHUNK_CACHE) as fh:
        tbls = list_tables(fh, tables=tables, slice_table=slice_table, file=name,
                           trust_external=trust_external)
        key_names = apply_aliases(tbls, aliases, file=name)
        dropped = _choose(tbls, key_names, ColumnSelection(columns, exclude), name)
        declared, scalars = _resolve(parsed, tbls, key_names, name)
        forced = {table_of(tbls)[v][0].name for vs in declared.values() for v in vs}
        keys = {t.name: read_keys(t.name, t.n_rows, fh[t.name], file=name) for t in tbls}
        pack_codes(list(keys.values()))
        for k in keys.values():
            check_sorted(k, file=name)
        empty = _empty_tables(tbls, scalars, forced, slice_table, name)
        known: set[str | None] = {*forced, slice_table}
        _warn_rare_repeats(tbls, keys, known, name)
        sources = _slice_sources(tbls, keys, forced, slice_table, name, empty)
        slices = slice_codes([keys[s] for s in sources])
        where = (f"slice table {slice_table!r}" if slice_table is not None
                 else f"the tables with one row per key ({_short(sources)})")
        positions = {t.name: match(slices, keys[t.name], where, file=name) for t in tbls}
        ragged = {t.name for t in tbls if t.name in forced or t.name in empty
                  or not keys[t.name].per_slice}
        if scalars is None:
            scalars = [v for v in key_names.values() if v not in dropped] + [
                v for t in tbls if t.name not in ragged for c in t.columns for v in c.variables
                if v not in dropped]
        groups = _groups(fh, tbls, declared, ragged, keys, name, dropped)
        reader = ColumnReader(fh, tbls, dt, len(slices), name)
        key_scalars = {v: reader.key_scalar(i, keys, positions, sources)
                       for i, v in enumerate(key_names.values()) if v in scalars}
        for k in keys.values():
            k.release()
        out_scalars = reader.scalars(scalars, key_scalars, keys, positions, ragged)
        out_groups = {g: reader.group(names, keys, positions) for g, names in groups.items()}
        notes = _notes(tbls, name)
    skipped = {k: v for t in tbls for k, v in t.skipped.items()}
    if skipped:
        _log.info("%s: skipped %d columns that are not numbers: %s", name, len(skipped),
                  _short([f"{k} ({v})" for k, v in skipped.items()]))
    ds = NovaDataset(out_scalars, out_groups, source=(name,))
    ds.notes, ds.slice_tables, ds.skipped = notes, tuple(sources), skipped
    return ds


def _choose(tbls: list[Table], key_names: dict[str, str], selection: ColumnSelection,
            file: str) -> set[str]:
    """Drop the columns ``selection`` does not want from ``tbls``; return every unwanted variable
    (of the columns kept in part, and key columns, which are still read to place the rows)."""
    if not selection:
        return set()
    dropped = {v for v in key_names.values() if not selection.wants(v)}
    every = list(key_names.values())
    for t in tbls:
        kept = []
        for c in t.columns:
            flags = [selection.wants(v, t.alias) for v in c.variables]
            every += c.variables
            dropped.update(v for v, f in zip(c.variables, flags) if not f)
            if any(flags):
                kept.append(c)
        t.columns = kept
        every += [k for k in t.skipped if selection.wants(k, t.alias)]
    selection.check_all_used(every, file=file)
    return dropped


def _short(names: Sequence[str]) -> str:
    shown = ", ".join(map(repr, names[:3]))
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _resolve(parsed: Schema | None, tbls: list[Table], key_names: dict[str, str], file: str
             ) -> tuple[dict[str, list[str]], list[str] | None]:
    """Declared groups and scalars of the schema, checked against the variables."""
    if parsed is None:
        return {}, None
    names = list(key_names.values()) + [v for t in tbls for c in t.columns for v in c.variables]
    try:
        declared, scalars = parsed.resolve(names, tables=True)
    except SchemaError as exc:
        raise exc.located(file=file) from None
    keys = set(key_names.values())
    for g, vs in declared.items():
        bad = [v for v in vs if v in keys]
        if bad:
            raise SchemaError(f"group {g!r}: {bad[0]!r} is a key column, one value per slice; "
                              "it can only be a scalar", file=file, variable=bad[0])
    return declared, scalars


def _empty_tables(tbls: list[Table], scalars: list[str] | None, forced: set[str], slice_table: str | None,
                  file: str) -> set[str]:
    """The tables without rows that are read as groups (no prongs in any slice).

    A table without rows says neither whether it is per slice or per prong. It is
    a group whose slices all have no prongs, unless the schema lists its variables
    as scalars (then NaN in every slice); without a schema that says which, a
    warning names it.
    """
    declared = set(scalars or ())
    out = set()
    for t in tbls:
        if t.n_rows or t.name == slice_table or any(v in declared for c in t.columns for v in c.variables):
            continue
        out.add(t.name)
        if t.name not in forced and t.columns:
            warn_user(f"{file}: table {t.name!r} has no rows: read as the group {t.alias!r} with no "
                      "prongs in any slice; declare it in the schema (a group, or its variables as "
                      "scalars: NaN in every slice) so that every file reads it alike", UserWarning)
    return out


#: at most this fraction of a table's keys (or one key) with several rows looks like duplicated keys
_RARE_REPEATS = 0.01


def _warn_rare_repeats(tbls: list[Table], keys: dict[str, TableKeys], declared: set[str | None],
                       file: str) -> None:
    """Warn about a table read as a group although almost every key has one row and the table has
    no index column (``..._idx``) to number its rows: likely a per-slice table with a duplicated key."""
    for t in tbls:
        k = keys[t.name]
        if k.per_slice or t.name in declared or any(c.name.endswith("_idx") for c in t.columns):
            continue
        assert k.counts is not None
        repeated = int(np.count_nonzero(k.counts > 1))
        if repeated <= max(1.0, _RARE_REPEATS * k.n_runs):
            warn_user(f"{file}: table {t.name!r} {k.describe_repeat()}, and only {repeated} of its "
                      f"{k.n_runs} keys have several rows: read as the group {t.alias!r}. If it has one "
                      f"row per slice, that key is duplicated (a damaged file?): name it as slice_table "
                      "to have it refused; declare it a group in the schema to silence this",
                      UserWarning)


def _slice_sources(tbls: list[Table], keys: dict[str, TableKeys], forced: set[str],
                   slice_table: str | None, file: str, empty: set[str]) -> list[str]:
    """The tables whose keys are the slices (none when every table is empty: no slices)."""
    if slice_table is not None:
        k = keys[slice_table]
        if not k.per_slice or slice_table in forced:
            why = (k.describe_repeat() if not k.per_slice else "is declared a group in the schema")
            raise SchemaError(f"slice table {slice_table!r} {why}; the slice table needs one row per "
                              "slice", file=file, variable=slice_table)
        return [slice_table]
    sources = [t.name for t in tbls if keys[t.name].per_slice and t.name not in forced | empty]
    if not sources and all(t.n_rows == 0 for t in tbls):
        return []
    if not sources:
        raise FormatError("no table has at most one row per key, so there are no slices: "
                          f"every table ({_short([t.name for t in tbls])}) has several rows for some "
                          "key; read the file's slice table too (tables=[...])", file=file)
    return sources


def _groups(fh: h5py.File, tbls: list[Table], declared: dict[str, list[str]], ragged: set[str],
            keys: dict[str, TableKeys], file: str, dropped: set[str]) -> dict[str, list[str]]:
    """Group name -> variables: the declared groups, then one per other ragged table."""
    where = table_of(tbls)
    groups = dict(declared)
    owner = {g: "a group of the schema" for g in declared}
    for g, vs in declared.items():
        members = list({where[v][0].name: where[v][0] for v in vs}.values())
        for m in members[1:]:
            _check_shared_rows(fh, g, members[0], m, keys, file)
    touched = {where[v][0].name for vs in declared.values() for v in vs}
    for t in tbls:
        if t.name in ragged and t.name not in touched:
            if t.alias in groups:
                raise SchemaError(f"two groups are named {t.alias!r}: table {t.name!r} and "
                                  f"{owner[t.alias]}", file=file, variable=t.alias)
            names = [v for c in t.columns for v in c.variables if v not in dropped]
            if names:
                groups[t.alias] = names
                owner[t.alias] = f"table {t.name!r}"
    return groups


def _check_shared_rows(fh: h5py.File, g: str, a: Table, b: Table, keys: dict[str, TableKeys],
                       file: str) -> None:
    """Raise ``SchemaError`` unless tables ``a`` and ``b`` have the same rows.

    Same rows: the same keys with the same number of rows each, and equal values
    in the index columns (``..._idx``) both tables carry, so row ``i`` of one is
    the same object as row ``i`` of the other.
    """
    ka, kb = keys[a.name], keys[b.name]
    why = f"group {g!r} takes variables from tables {a.name!r} and {b.name!r}, which must share rows"
    if not (len(ka.codes) == len(kb.codes) and np.array_equal(ka.codes, kb.codes)
            and np.array_equal(ka.run_counts(), kb.run_counts())):
        key, na, nb = _first_difference(ka, kb)
        raise SchemaError(f"{why} but disagree at key {describe(key)}: {na} rows in {a.name!r}, {nb} in "
                          f"{b.name!r}", file=file, variable=b.name)
    shared = [c.name for c in a.columns if c.name.endswith("_idx") and c.name in {d.name for d in b.columns}]
    for col in shared:
        x = _rows(read_rows(fh[a.name][col], file=file, variable=f"{a.name}.{col}"))
        y = _rows(read_rows(fh[b.name][col], file=file, variable=f"{b.name}.{col}"))
        bad = np.flatnonzero((x != y).any(axis=1)) if x.shape == y.shape else np.zeros(1, np.int64)
        if len(bad):
            row = int(bad[0])
            raise SchemaError(f"{why} but their index column {col!r} differs at row {row} (key "
                              f"{describe(ka.key(int(np.searchsorted(np.cumsum(ka.run_counts()), row, 'right'))))})",
                              file=file, variable=f"{b.name}.{col}", row=row)


def _rows(x: np.ndarray) -> np.ndarray:
    """A column read as ``(n,)`` or ``(n, k)`` as ``(n, k)`` (``n`` may be 0)."""
    return x.reshape(len(x), int(np.prod(x.shape[1:], dtype=np.int64)))


def _first_difference(a: TableKeys, b: TableKeys) -> tuple[tuple[int, ...], int, int]:
    """The first key (in key order) whose row counts differ in ``a`` and ``b``, and both counts."""
    both = np.union1d(a.codes, b.codes)
    counts = [np.zeros(len(both), np.int64), np.zeros(len(both), np.int64)]
    for c, t in zip(counts, (a, b)):
        c[np.searchsorted(both, t.codes)] = t.run_counts()
    j = int(np.argmax(counts[0] != counts[1]))
    owner = a if counts[0][j] else b
    return owner.key(int(np.searchsorted(owner.codes, both[j]))), int(counts[0][j]), int(counts[1][j])


def _notes(tbls: list[Table], file: str) -> tuple[str, ...]:
    """A note naming the datasets whose damage would go unnoticed."""
    bare = [d for t in tbls for d in t.unchecked]
    if not bare:
        return ()
    return (f"{file}: datasets {_short(bare)} carry neither a fletcher32 checksum nor gzip "
            "compression: a damaged chunk reads as other numbers",)
