"""ROOT TTrees through uproot (extra ``root``): :func:`read_root`.

The file's only TTree (or RNTuple; ``tree=`` picks one of several) becomes an
in-RAM dataset:

* a flat numeric branch (``run``, ``MET_pt``, ``nMuon``) is a scalar column with
  the branch's dtype; counter branches (``nMuon``) stay scalars too;
* jagged branches (``Muon_pt[nMuon]``, ``std::vector<float>``) are ragged
  groups. Branches that share a counter branch form one group named after the
  counter without its leading ``n`` (``nMuon`` counts ``Muon_pt``, ``Muon_eta``:
  group ``Muon``, variables ``Muon_pt``, ``Muon_eta``; the layout ``uproot``
  writes for a zipped record field ``Muon``). Other jagged branches (own
  counters, no counter) group by their prefix before the first ``_`` or ``.``
  (``Jet_e``, ``Jet_pt`` -> ``Jet``), and must then have equal lengths in every
  entry; a schema (``{group: [branches]}``) declares other groups and picks
  ``scalars``;
* branches of other types (strings, fixed-size arrays ``x[3]``, nested vectors,
  objects) are skipped with a warning that names them (no warning when a schema
  lists the scalars).

Jagged branches are read in entry ranges of about ``step_bytes`` uncompressed
bytes, aligned to the tree's clusters; each range is interleaved into its
group's ``(total, V)`` block (no Python per entry). Values equal
``tree.arrays(library="np")`` bitwise (a group of mixed dtypes, e.g. float32 and
int32, takes their common type, float64).

An RNTuple (what ``uproot`` >= 5.7 writes for ``file["Events"] = {...}``) is
read whole into awkward arrays and taken as :func:`lstm_data.io.awkward.from_awkward`
takes them: the record field ``Muon`` is the group ``Muon`` with variables
``Muon_pt``, ..., as from the TTree of the same data (which also has ``nMuon``).

Errors name the file, the tree, the branch and the entry: a file uproot cannot
open or a basket it cannot read is a ``FormatError``; two branches of a
prefix group of different lengths a ``SchemaError``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.errors import FormatError, SchemaError, warn_user
from lstm_data.io.awkward.layout import column_buffers
from lstm_data.io.column_groups import build_group, interleave_pieces
from lstm_data.io.jagged_groups import check_equal_lengths, plan_groups
from lstm_data.io.layout import value_dtype
from lstm_data.io.root.tree import (
    RNTUPLE_CLASS,
    TreeColumns,
    entry_ranges,
    import_uproot,
    pick_tree,
)

__all__ = ["read_root", "STEP_BYTES"]

#: uncompressed bytes of jagged branches read per entry range
STEP_BYTES = 64 << 20
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def read_root(path: Any, *, tree: str | None = None, schema: Any = None, dtype: Any = None,
              step_bytes: int = STEP_BYTES) -> InMemoryDataset:
    """Read one TTree of a ROOT file (see the module documentation).

    Parameters
    ----------
    path
        The ``.root`` file.
    tree
        The TTree's name (or path, ``"dir/Events"``); needed when the file holds several.
    schema
        Declared groups, scalars and dtype (a Schema, a mapping or a TOML path).
    dtype
        ``float32`` or ``float64``: cast every column. Default: the schema's dtype,
        else the branches' own.
    step_bytes
        Uncompressed bytes of jagged branches read at a time.

    Returns
    -------
    InMemoryDataset

    Raises
    ------
    ImportError
        uproot or awkward is missing (``pip install 'lstm_data[root]'``).
    FormatError
        Not a readable ROOT file, no TTree, or a branch that cannot be read (names
        file, tree, branch and entries).
    SchemaError
        Several TTrees and no ``tree=``; an unknown ``tree=``; a schema name that is
        not a readable branch; branches of a group of different lengths.
    """
    uproot = import_uproot()
    name = str(path)
    dt = value_dtype(dtype, file=name)
    if int(step_bytes) < 1:
        raise ValueError(f"step_bytes must be at least 1, got {step_bytes!r} (file {name})")
    try:  # a Path: uproot would read 'a.root:tree' in a str as an object path
        fh = uproot.open(Path(name), array_cache=None, object_cache=None, handler=uproot.MemmapSource)
    except (ImportError, MemoryError):
        raise
    except Exception as exc:  # uproot raises many types for a file it cannot parse
        raise FormatError(f"cannot open as a ROOT file, damaged or truncated? "
                          f"({type(exc).__name__}: {exc})", file=name) from exc
    with fh:
        ttree, tree_name, kind = pick_tree(fh, tree, name)
        if kind == RNTUPLE_CLASS:
            return _read_rntuple(ttree, tree_name, name, schema, dt)
        cols = TreeColumns(ttree, tree_name, name)
        try:
            groups, scalars, schema_dtype = plan_groups(schema, cols.scalars, cols.jagged,
                                                       cols.counter_groups(), file=name)
        except SchemaError as exc:
            if exc.variable not in cols.skipped:
                raise
            raise SchemaError(f"tree {tree_name!r}: the schema names branch {exc.variable!r} of type "
                              f"{cols.skipped[exc.variable]}, which is not numbers or a jagged list of "
                              "numbers", file=name, variable=exc.variable) from None
        if cols.skipped and getattr(_schema(schema), "scalars", None) is None:
            warn_user(f"{name}: tree {tree_name!r}: skipped {len(cols.skipped)} branches that are not "
                      f"numbers or jagged lists of numbers: {cols.describe_skipped()}", UserWarning)
        dt = dt if dt is not None else schema_dtype
        out_scalars = {s: _cast(cols.read(s), dt) for s in scalars}
        out_groups = _read_groups(cols, groups, dt, step_bytes)
    return InMemoryDataset(out_scalars, out_groups, source=(name,))


def _read_rntuple(ntuple: Any, ntuple_name: str, file: str, schema: Any,
                  dt: np.dtype | None) -> InMemoryDataset:
    """An RNTuple, read whole into awkward arrays and taken as :func:`from_awkward` takes them."""
    from lstm_data.io.awkward import from_awkward

    try:
        array = ntuple.arrays(library="ak")
    except Exception as exc:
        if isinstance(exc, (ImportError, MemoryError)):
            raise
        raise FormatError(f"cannot read RNTuple {ntuple_name!r}; damaged file? ({type(exc).__name__}: {exc})",
                          file=file) from exc
    try:
        dataset = from_awkward(array, schema=schema, dtype=dt)
    except SchemaError as exc:
        raise SchemaError(f"RNTuple {ntuple_name!r}: {exc.message}", file=file, variable=exc.variable,
                          row=exc.row) from None
    dataset.source = (file,)
    return dataset


def _schema(schema: Any):
    from lstm_data.io.schema import Schema
    return Schema.coerce(schema)


def _cast(values: np.ndarray, dt: np.dtype | None) -> np.ndarray:
    return values if dt is None else values.astype(dt, copy=False)


class _Sink:
    """Where one group's values go, range by range.

    With a counter, the lengths are known up front: the ``(total, V)`` block is
    allocated once and each range is interleaved straight into its rows. Without
    one, each branch's values are kept as pieces and interleaved once at the end.
    """

    def __init__(self, group: str, names: list[str], dtype: np.dtype, counts: np.ndarray | None,
                 file: str) -> None:
        self.group, self.names, self.dtype, self.counts, self.file = group, names, dtype, counts, file
        self.offsets: np.ndarray | None = None
        if counts is not None:
            self.offsets = np.zeros(len(counts) + 1, dtype=np.int64)
            np.cumsum(counts, out=self.offsets[1:])
            self.block = np.empty((int(self.offsets[-1]), len(names)), dtype=dtype)
        self.pieces: dict[str, list[np.ndarray]] = {v: [] for v in names}
        self.lengths: list[np.ndarray] = []

    def put(self, start: int, columns: dict[str, np.ndarray], lengths: np.ndarray) -> None:
        if self.offsets is None:
            for v, values in columns.items():
                self.pieces[v].append(values)
            self.lengths.append(lengths)
            return
        lo = int(self.offsets[start])
        rows = self.block[lo:lo + len(next(iter(columns.values())))]
        if self.dtype in _FLOATS:
            interleave_pieces([[c if c.dtype in _FLOATS else c.astype(self.dtype)] for c in columns.values()],
                              rows)
        else:  # a group of integer branches kept as integers
            rows[...] = build_group(self.group, {v: (c, lengths) for v, c in columns.items()},
                                    dtype=self.dtype).values

    def result(self) -> RaggedGroup:
        if self.offsets is not None:
            return RaggedGroup(self.names, self.block, self.offsets)
        lengths = np.concatenate(self.lengths) if self.lengths else np.zeros(0, dtype=np.int64)
        columns = {v: (self.pieces[v] or [np.zeros(0, dtype=self.dtype)], lengths) for v in self.names}
        self.pieces = {}
        return build_group(self.group, columns, file=self.file, dtype=self.dtype)


def _read_groups(cols: TreeColumns, groups: dict[str, list[str]], dt: np.dtype | None,
                 step_bytes: int) -> dict[str, RaggedGroup]:
    """Every group, read range by range."""
    sinks = {}
    for g, names in groups.items():
        counter = cols.shared_counter(names)
        counts = cols.read(counter).astype(np.int64) if counter is not None else None
        dtype = dt if dt is not None else np.result_type(*[cols.dtype(v) for v in names])
        sinks[g] = _Sink(g, names, np.dtype(dtype), counts, cols.file)
    members = [v for names in groups.values() for v in names]
    for a, z in entry_ranges(cols, members, step_bytes):
        for g, sink in sinks.items():
            columns, lengths = {}, {}
            for v in sink.names:
                col = column_buffers(cols.read_range(v, a, z), v, file=cols.file)
                columns[v], lengths[v] = col.values[""], col.lengths
            if sink.counts is not None:
                cols.check_counts(sink.counts[a:z], lengths, a)
            else:
                check_equal_lengths(g, lengths, first_row=a, file=cols.file, row_word="entry",
                                    where=f"tree {cols.tree!r}: ",
                                    hint="they share no counter branch; declare them in different "
                                         "groups with a schema")
            sink.put(a, columns, lengths[sink.names[0]])
    return {g: sink.result() for g, sink in sinks.items()}
