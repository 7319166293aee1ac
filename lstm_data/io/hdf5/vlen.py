"""lstm_ee's HDF5 layout, and any group of plain h5py / PyTables arrays, read into RAM.

Every dataset of the group gives columns as :mod:`lstm_data.io.hdf5.columns` says;
variable-length data is read once, at open, in whole-chunk slices and turned into
interleaved ragged groups: batches never see one Python object per row.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Callable, Sequence

import h5py
import numpy as np
from numpy.typing import DTypeLike

from lstm_data.data.dataset import InMemoryDataset
from lstm_data.errors import FormatError, SchemaError
from lstm_data.io.columns.build import build_group
from lstm_data.io.columns.groups import group_prefix, plan_groups
from lstm_data.io.columns.select import ColumnSelection
from lstm_data.io.columns.exact_ints import ExactInts
from lstm_data.io.hdf5.checks import member
from lstm_data.io.hdf5.columns import Columns, read_compound
from lstm_data.io.hdf5.counts import counted_name
from lstm_data.io.hdf5.awkward_buffers import awkward_group, read_awkward_group
from lstm_data.io.hdf5.layouts import scan
from lstm_data.io.hdf5.rows import read_rows

__all__ = ["read_vlen_hdf5", "describe_skipped"]

_log = logging.getLogger("lstm_data")
#: rows per vlen read (a multiple of PyTables' usual chunk lengths)
_VLEN_BLOCK_ROWS = 1 << 16


def _read_vlen(ds: h5py.Dataset, dtype: DTypeLike | None, file: str,
               exact: ExactInts) -> tuple[np.ndarray, np.ndarray]:
    """One vlen dataset as ``(flat values, lengths)``, read in large slices (integers cast to
    ``dtype`` checked: a changed value is warned about once)."""
    n = ds.shape[0]
    stored = np.dtype(h5py.check_vlen_dtype(ds.dtype))  # may be an array per value: (3,)f4
    native = stored.base
    base = np.dtype(dtype if dtype is not None else native)
    key = ds.name.lstrip("/")
    chunk = ds.chunks[0] if ds.chunks else _VLEN_BLOCK_ROWS
    block = max(chunk, (_VLEN_BLOCK_ROWS // chunk) * chunk)
    lengths = np.empty(n, dtype=np.int64)
    pieces: list[np.ndarray] = []
    for a in range(0, n, block):
        objs = read_rows(ds, a, min(n, a + block), file=file, variable=ds.name.lstrip("/"))
        lengths[a:a + len(objs)] = np.fromiter(map(len, objs), dtype=np.int64, count=len(objs))
        if len(objs):
            flat = np.concatenate(objs)
            ends = np.cumsum(lengths[a:a + len(objs)])
            pieces.append(exact.cast(flat, base, key, row_of=_row_of(a, ends)))
    values = np.concatenate(pieces) if pieces else np.zeros((0,) + stored.shape, dtype=base)
    return values, lengths


def _row_of(first: int, ends: np.ndarray) -> Callable[[int], int]:
    """The row of value ``k`` of a slice of rows from ``first`` whose values end at ``ends``."""
    return lambda k: first + int(np.searchsorted(ends, k, side="right"))


def read_vlen_hdf5(path: str | os.PathLike[str], *, schema: Any = None, root: str = "/", dtype: DTypeLike | None = None,
                   trust_external: bool = False, columns: Sequence[str] | str | None = None,
                   exclude: Sequence[str] | str | None = None) -> InMemoryDataset:
    """Read lstm_ee's HDF5 layout (or any group of plain h5py / PyTables arrays) into RAM.

    Every dataset under ``root`` gives columns as :mod:`lstm_data.io.hdf5.columns`
    says: 1-D numbers are scalars, ``(n, k)`` numbers the scalars ``name[0]`` ...,
    the numeric fields of a compound (a PyTables ``Table``) the scalars
    ``name.field``, variable-length numbers prong variables. Prong variables form
    groups by prefix (``png.calE`` -> ``png``) or as the schema declares. What is
    not numbers (strings, time, complex, objects) is skipped: listed in the
    result's ``skipped`` attribute and logged once. ``columns`` and ``exclude``
    (names or globs, matched against a column's name and its dataset's, see
    :mod:`lstm_data.io.columns.select`) choose the columns; only the datasets of
    chosen columns are read (of a compound, only the chosen fields). Flat values with
    a counts dataset, a group per object, padded arrays with a validity flag and
    awkward buffers are told apart from the datasets and read as ragged groups
    (see :mod:`lstm_data.io.hdf5.layouts`); the result's ``layout`` names the one found.

    Returns
    -------
    InMemoryDataset
        With ``skipped``: column -> what it holds, for the columns left out.

    Raises
    ------
    FormatError
        No numeric datasets under ``root`` (lists what is there and why it was
        skipped), or datasets of different lengths that no counts dataset cuts;
        counts or validity flags that fail their checks (file, dataset, row); an external link, external
        storage or a virtual dataset of other files under ``root`` (unless
        ``trust_external``), naming it and its target.
    SchemaError
        A declared or chosen name is not a column (or names a skipped one: says
        why); variables of one group differ in length in some row (names row and
        variables).
    """
    name = str(path)
    selection = ColumnSelection(columns, exclude)
    with h5py.File(path, "r") as fh:
        node = member(fh, root, file=name, trust_external=trust_external)
        if not isinstance(node, h5py.Group):
            raise FormatError(f"no HDF5 group {root!r}", file=name)
        stored = awkward_group(node, lambda k: member(node, k, file=name, trust_external=trust_external))
        if stored is not None:
            at, group = stored
            return read_awkward_group(
                group, lambda k: member(node, f"{at}/{k}" if at else k, file=name, trust_external=trust_external),
                file=name, schema=schema, dtype=dtype, columns=columns, exclude=exclude)
        counted = _counted_groups(node)
        scanned = scan(node, lambda k: member(node, k, file=name, trust_external=trust_external),
                       keep=lambda col, key: selection.wants(col, key if key != col else group_prefix(col),
                                                             counted.get(col)),
                       scalars=_schema_scalars(schema, name), file=name)
        found = scanned.columns
        if selection.columns is not None:
            selection.check_all_used(list(found.columns) + list(found.skipped) + _member_names(node), file=name)
        for p in selection.columns or ():
            if p in found.skipped:
                raise SchemaError(f"columns names {p!r}, which holds {found.skipped[p]}, not numbers",
                                  file=name, variable=p)
        if not found.columns:
            what = f"; skipped {describe_skipped(found.skipped)}" if found.skipped else ""
            raise FormatError(f"no numeric datasets in HDF5 group {root!r}; expected lstm_ee's layout "
                              f"(one array per variable) or lstm_data's{what}", file=name)
        ragged_names = [c for c, col in found.columns.items() if col.ragged]
        scalar_names = [c for c, col in found.columns.items() if not col.ragged]
        try:
            planned = plan_groups(schema, scalar_names, ragged_names,
                                  {v: scanned.keys.get(v) or group_prefix(found.columns[v].key)
                                   for v in ragged_names}, file=name)
            group_vars, scalar_names, schema_dtype = planned.groups, planned.scalars, planned.dtype
        except SchemaError as exc:
            if exc.variable in found.skipped:
                raise SchemaError(f"{exc.variable!r} is skipped: it holds {found.skipped[exc.variable]}, "
                                  "not numbers", file=name, variable=exc.variable) from None
            raise
        dtype = dtype if dtype is not None else schema_dtype
        _check_rows(found, scalar_names + [v for vs in group_vars.values() for v in vs], name)
        exact = ExactInts(name)
        scalars = _read_scalars(found, scalar_names, dtype, name, exact)
        groups = {}
        read: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # a dataset of arrays or records: read once
        for g, names in group_vars.items():
            cols = {}
            for v in names:
                col = found.columns[v]
                source = scanned.sources.get(col.key)
                if col.key not in read:
                    read[col.key] = (source() if source is not None
                                     else _read_vlen(found.datasets[col.key], dtype, name, exact))
                values, lengths = read[col.key]
                taken = np.ascontiguousarray(col.take(values))
                if source is not None and dtype is not None:
                    taken = _values_as(taken, lengths, np.dtype(dtype), v, exact)
                cols[v] = (taken, lengths)
            common = np.result_type(*[c[0].dtype for c in cols.values()])
            if common.kind == "f":  # integers next to floats: the group's block is floats
                cols = {v: (_values_as(c[0], c[1], common, v, exact), c[1]) for v, c in cols.items()}
            groups[g] = build_group(g, cols, file=name)
    if found.skipped:
        _log.info("%s: skipped %d columns that are not numbers: %s", name, len(found.skipped),
                  describe_skipped(found.skipped))
    out = InMemoryDataset(scalars, groups, source=(name,))
    out.skipped = dict(found.skipped)
    out.layout = scanned.layout.describe()
    return out


def _schema_scalars(schema: Any, file: str) -> frozenset[str]:
    """The scalars a schema declares (never taken as counted values)."""
    from lstm_data.io.schema import Schema

    try:
        parsed = Schema.coerce(schema)
    except SchemaError as exc:
        raise exc.located(file=file) from None
    return frozenset(parsed.scalars or ()) if parsed is not None else frozenset()


def describe_skipped(skipped: dict[str, str], limit: int = 6) -> str:
    """``'name' (strings), 'when' (HDF5 time values ...)`` for the first ``limit`` skipped columns."""
    items = [f"{k!r} ({v})" for k, v in list(skipped.items())[:limit]]
    more = f" and {len(skipped) - limit} more" if len(skipped) > limit else ""
    return ", ".join(items) + more


def _check_rows(found: Columns, names: list[str], file: str) -> None:
    """Raise ``FormatError`` unless the datasets of the columns ``names`` have the same number of rows."""
    rows = {found.columns[v].key: found.rows[found.columns[v].key] for v in names}
    if len(set(rows.values())) > 1:
        first = next(iter(rows))
        odd = next(k for k, n in rows.items() if n != rows[first])
        raise FormatError(f"{odd!r} has {rows[odd]} rows but {first!r} has {rows[first]}, and no counts "
                          f"dataset of {rows[first]} rows cuts it into rows (an integer dataset named n_X, nX, "
                          "num_X, X_n, X_counts or counts for values named X_*); the datasets of one group "
                          "are the columns of one table (choose them with columns=, or the group with "
                          "root=...)", file=file, variable=odd)


def _values_as(values: np.ndarray, lengths: np.ndarray, dtype: np.dtype, name: str,
               exact: ExactInts) -> np.ndarray:
    """Flat prong values as ``dtype``, a changed integer warned about (naming its row)."""
    ends = np.cumsum(lengths)
    return exact.cast(values, dtype, name, row_of=lambda k: int(np.searchsorted(ends, k, side="right")))


def _read_scalars(found: Columns, names: list[str], dtype: Any, file: str,
                  exact: ExactInts) -> dict[str, np.ndarray]:
    """The scalar columns ``names``: each dataset read once (a compound: its numeric fields only)."""
    by_key: dict[str, list[str]] = {}
    for v in names:
        by_key.setdefault(found.columns[v].key, []).append(v)
    out: dict[str, np.ndarray] = {}
    for key, cols in by_key.items():
        ds = found.datasets[key]
        if key in found.compound:
            block = read_compound(ds, found.compound[key], 0, ds.shape[0], file=file)
        else:
            block = read_rows(ds, file=file, variable=key)
        for v in cols:
            col = np.ascontiguousarray(found.columns[v].take(block))
            out[v] = col if dtype is None else exact.cast(col, dtype, v)
    return {v: out[v] for v in names}


def _counted_groups(node: h5py.Group) -> dict[str, str]:
    """Flat value column -> the group its counts dataset names it part of (``png_calE`` -> ``png``
    beside ``n_png``), so that ``columns=["png"]`` chooses it as it chooses ``png.calE``."""
    names = list(node.keys())
    groups = {x for x in map(counted_name, names) if x}
    return {n: x for n in names for x in groups if n.startswith(x + "_")}


def _member_names(node: h5py.Group) -> list[str]:
    """The names of the datasets and groups under ``node`` (``a/b`` as ``a.b``; links not followed),
    for a ``columns`` pattern that matched none of them."""
    found: list[str] = []
    node.visit(lambda path: found.append(path.replace("/", ".")) if len(found) < 10_000 else True)
    return found
