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
  (``Jet_e``, ``Jet_pt`` -> ``Jet``); such a group is cut into groups of equal
  lengths when its branches differ (the first keeps the name, the others are named
  after their first branch), while a group a schema declares must have equal
  lengths. A schema (``{group: [branches]}``) declares other groups and picks
  ``scalars``;
* a fixed-size array branch (``float x[3]``, ``std::array``) gives one column per
  element, ``x[0]``, ``x[1]``, ``x[2]`` (jagged ones, ``x[n][3]``, a group ``x``);
* what is not numbers is skipped and listed in the dataset's ``skipped``
  attribute with its type and why (one logged message): strings, objects and
  ``std::map`` s, doubly jagged branches (``vector<vector<float>>``: which level is
  a row is not known), branches that hold fewer entries than the tree (no baskets
  written). A tree with entries but nothing readable is a ``SchemaError`` listing
  what it holds; a tree with two branches of the same name (Delphes) one naming
  them and the ``exclude=`` that picks one;
* ``columns=`` / ``exclude=`` (names or globs) choose the branches: the others are
  not read nor decompressed.

Group dtypes: a group takes its branches' common numpy type, so a group's values
are float32, float64, a signed or unsigned integer type, or bool (``Muon_charge``
int32 and ``Muon_jetIdx`` int16: int32; float32 with int32: float64); with
``dtype=`` every column is cast to it.

Numeric branches of the common kinds (one number per entry, counted arrays
``x[n]``) are read basket by basket on ``threads`` threads straight into their
final arrays (:mod:`lstm_data.io.root.fast`), inflating zlib baskets with
libdeflate or ISA-L when the ``deflate`` or ``isal`` package is installed (extra
``root-fast``). Other jagged branches (``std::vector``) are read through uproot in
entry ranges of about ``step_bytes`` uncompressed bytes, aligned to the tree's
clusters; each range is interleaved into its group's ``(total, V)`` block (no
Python per entry). Values equal
``tree.arrays(library="np")`` bitwise (a group of mixed dtypes, e.g. float32 and
int32, takes their common type, float64).

An RNTuple (what ``uproot`` >= 5.7 writes for ``file["Events"] = {...}``) is
read whole into awkward arrays and taken as :func:`lstm_data.io.awkward.from_awkward`
takes them: the record field ``Muon`` is the group ``Muon`` with variables
``Muon_pt``, ..., as from the TTree of the same data (which also has ``nMuon``);
nested records flatten to dotted names (``info.pos.x``).

Errors name the file, the tree, the branch and the entry: a file uproot cannot
open or a basket it cannot read is a ``FormatError``; two branches of a
declared group of different lengths a ``SchemaError``.
"""
from __future__ import annotations

import fnmatch
import logging
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.errors import FormatError, SchemaError
from lstm_data.io.awkward import refuse_named_skipped
from lstm_data.io.awkward.layout import column_buffers
from lstm_data.io.column_groups import build_group, interleave_pieces
from lstm_data.io.column_select import ColumnSelection
from lstm_data.io.jagged_groups import check_equal_lengths, plan_groups, split_by_lengths
from lstm_data.io.layout import value_dtype
from lstm_data.io.root.fast import read_fast
from lstm_data.io.root.memory import check_fits
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
_log = logging.getLogger("lstm_data")


def read_root(path: Any, *, tree: str | None = None, schema: Any = None, dtype: Any = None,
              step_bytes: int = STEP_BYTES, columns: Sequence[str] | str | None = None,
              exclude: Sequence[str] | str | None = None, threads: int | None = None,
              progress: Callable[[int, int], None] | None = None) -> InMemoryDataset:
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
    columns, exclude
        Branch names or globs to read / never to read (a counter group's name picks
        the whole group, see :mod:`lstm_data.io.column_select`); other branches are
        not read at all.
    threads
        Threads that read and inflate baskets (``None``: every core).
    progress
        Called as ``progress(compressed_bytes_done, compressed_bytes_total)`` while
        baskets are read (e.g. :class:`lstm_data._util.progress.ByteProgress`).

    Returns
    -------
    InMemoryDataset
        Its ``skipped`` attribute maps each branch that is not read to its type and why.

    Raises
    ------
    ImportError
        uproot or awkward is missing (``pip install 'lstm_data[root]'``).
    MemoryError
        The chosen columns would not fit in the memory left (checked before reading;
        the message gives the routes: fewer columns, or convert to an on-disk store).
    FormatError
        Not a readable ROOT file, no TTree, or a branch that cannot be read (names
        file, tree, branch and entries).
    SchemaError
        Several TTrees and no ``tree=``; an unknown ``tree=``; a schema name that is
        not a readable branch; branches of a declared group of different lengths;
        nothing numeric in the tree (lists what it holds and why each was skipped);
        two branches of the same name (names them and how to pick one); a
        ``columns`` pattern that matches no branch.
    """
    uproot = import_uproot()
    name = str(path)
    dt = value_dtype(dtype, file=name)
    if int(step_bytes) < 1:
        raise ValueError(f"step_bytes must be at least 1, got {step_bytes!r} (file {name})")
    selection = ColumnSelection(columns, exclude)
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
            return _read_rntuple(ttree, tree_name, name, schema, dt, selection)
        cols = TreeColumns(ttree, tree_name, name, selection if selection else None)
        where = f"tree {tree_name!r}: "
        selection.check_all_used(cols.available(), file=name, where=where)
        refuse_named_skipped(selection, cols.skipped, name)
        _check_collisions(cols, name)
        if not cols.scalars and not cols.jagged and selection and cols.readable:
            raise SchemaError(f"{where}columns={list(selection.columns or ['*'])} with exclude="
                              f"{list(selection.exclude)} leaves no column to read", file=name)
        if not cols.scalars and not cols.jagged:
            raise SchemaError(f"{where}nothing to read: {cols.n} entries but no branch of numbers or "
                              f"jagged lists of numbers; it holds {cols.describe_skipped()}", file=name)
        try:
            groups, scalars, schema_dtype = plan_groups(schema, cols.scalars, cols.jagged,
                                                       cols.counter_groups(), file=name)
        except SchemaError as exc:
            if exc.variable not in cols.skipped:
                raise
            raise SchemaError(f"{where}the schema names branch {exc.variable!r} of type "
                              f"{cols.skipped[exc.variable]}", file=name, variable=exc.variable) from None
        if cols.skipped:
            _log.info("%s: %sskipped %d branches that are not numbers or jagged lists of numbers: %s",
                      name, where, len(cols.skipped), cols.describe_skipped())
        dt = dt if dt is not None else schema_dtype
        declared = set(getattr(_schema(schema), "groups", None) or ())
        _check_fits(cols, scalars, groups, dt)
        fast_scalars, fast = read_fast(cols, scalars, groups, dt, threads, progress, declared)
        out_scalars = {s: fast_scalars[s] if s in fast_scalars else _cast(cols.read(s), dt) for s in scalars}
        done = {v for g in fast.values() for v in g.names}
        rest = {g: names for g, names in groups.items() if not set(names) <= done}
        slow = _read_groups(cols, rest, dt, step_bytes, declared, taken=list(scalars) + list(fast))
        out_groups = {g: fast.pop(g) if g in fast else slow.pop(g) for g in groups if g in fast or g in slow}
        out_groups.update(fast)  # groups cut from an inferred one by lengths
        out_groups.update(slow)
    dataset = InMemoryDataset(out_scalars, out_groups, source=(name,))
    dataset.skipped = dict(cols.skipped)
    return dataset


def _check_fits(cols: TreeColumns, scalars: Sequence[str], groups: dict[str, list[str]],
                dt: np.dtype | None) -> None:
    """MemoryError (with the routes that work) when the chosen columns cannot fit in memory."""
    dtypes = {s: dt if dt is not None else cols.dtype(s) for s in scalars}
    for names in groups.values():
        common = dt if dt is not None else np.result_type(*[cols.dtype(v) for v in names])
        dtypes.update({v: common for v in names})
    need = cols.decoded_bytes(list(dtypes), dtypes)
    check_fits(need, file=cols.file, tree=cols.tree, columns=len(dtypes))


def _check_collisions(cols: TreeColumns, file: str) -> None:
    """Two read branches of the same name: a SchemaError naming them and how to pick one."""
    clash = cols.collisions()
    if not clash:
        return
    first = next(iter(clash))
    top = first.split("/", 1)[0]
    shared = top.split(";", 1)[0]
    raise SchemaError(
        f"tree {cols.tree!r} holds {len(clash)} pairs of branches with the same name, e.g. "
        f"{clash[first]!r} twice (uproot would read only the first); the second copies are named "
        f"{top!r}...: read one of them with exclude=[{top + '*'!r}] (keeps the first) or "
        f"exclude=[{shared + '/*'!r}, {shared!r}] (keeps the second)", file=file, variable=clash[first])


def _read_rntuple(ntuple: Any, ntuple_name: str, file: str, schema: Any,
                  dt: np.dtype | None, selection: ColumnSelection) -> InMemoryDataset:
    """An RNTuple, read whole into awkward arrays and taken as :func:`from_awkward` takes them."""
    from lstm_data.io.awkward import from_awkward

    try:
        fields = _rntuple_fields(ntuple, selection)
        array = ntuple.arrays(fields, library="ak") if fields is not None else ntuple.arrays(library="ak")
    except Exception as exc:
        if isinstance(exc, (ImportError, MemoryError)):
            raise
        raise FormatError(f"cannot read RNTuple {ntuple_name!r}; damaged file? ({type(exc).__name__}: {exc})",
                          file=file) from exc
    try:
        dataset = from_awkward(array, schema=schema, dtype=dt, columns=selection.columns,
                               exclude=selection.exclude or None, where=file)
    except SchemaError as exc:
        raise SchemaError(f"RNTuple {ntuple_name!r}: {exc.message}", file=file, variable=exc.variable,
                          row=exc.row) from None
    dataset.source = (file,)
    return dataset


def _rntuple_fields(ntuple: Any, selection: ColumnSelection) -> list[str] | None:
    """The top-level fields worth reading for ``selection`` (``None``: all of them).

    A field is read when a ``columns`` pattern could match it or anything under it
    (nested names are tried with ``.`` and with ``_``, as :func:`from_awkward` names
    them); it is left unread only when ``exclude`` matches the field itself. The exact
    selection is then made by :func:`from_awkward`.
    """
    if not selection:
        return None
    keys = [str(k) for k in ntuple.keys()]
    tops = [k for k in keys if "." not in k]
    out = []
    for top in tops:
        if any(fnmatch.fnmatchcase(top, p) for p in selection.exclude):
            continue
        if selection.columns is None:
            out.append(top)
            continue
        names = [top] + [k.replace(".", sep) for k in keys if k.startswith(top + ".") for sep in (".", "_")]
        if any(fnmatch.fnmatchcase(n, p) or p.startswith(top) for n in names for p in selection.columns):
            out.append(top)
    return out if out else None


def _schema(schema: Any):
    from lstm_data.io.schema import Schema
    return Schema.coerce(schema)


def _cast(values: np.ndarray, dt: np.dtype | None) -> np.ndarray:
    return values if dt is None else values.astype(dt, copy=False)


class _Sink:
    """Where one group's values go, range by range.

    With a counter, the lengths are known up front: the ``(total, V)`` block is
    allocated once and each range is interleaved straight into its rows. Without
    one, each branch's values and lengths are kept as pieces and interleaved once
    at the end: a declared group must then have equal lengths (else a located
    error), an inferred one is cut into groups of equal lengths.
    """

    def __init__(self, group: str, names: list[str], dtype: np.dtype, counts: np.ndarray | None,
                 file: str, strict: bool) -> None:
        self.group, self.names, self.dtype, self.counts, self.file = group, names, dtype, counts, file
        self.strict = strict
        self.offsets: np.ndarray | None = None
        if counts is not None:
            self.offsets = np.zeros(len(counts) + 1, dtype=np.int64)
            np.cumsum(counts, out=self.offsets[1:])
            self.block = np.empty((int(self.offsets[-1]), len(names)), dtype=dtype)
        self.pieces: dict[str, list[np.ndarray]] = {v: [] for v in names}
        self.lengths: dict[str, list[np.ndarray]] = {v: [] for v in names}

    def put(self, start: int, columns: dict[str, np.ndarray], lengths: dict[str, np.ndarray]) -> None:
        if self.offsets is None:
            for v, values in columns.items():
                self.pieces[v].append(values)
                self.lengths[v].append(lengths[v])
            return
        lo = int(self.offsets[start])
        rows = self.block[lo:lo + len(next(iter(columns.values())))]
        if self.dtype in _FLOATS:
            first = lengths[self.names[0]]
            for v, c in columns.items():  # integers into a float block: never changed silently
                check_once(c, self.dtype, v, file=self.file, where="entry", row_of=lambda k: start + int(
                    np.searchsorted(np.cumsum(first), k, side="right")))
            interleave_pieces([[c if c.dtype in _FLOATS else c.astype(self.dtype)] for c in columns.values()],
                              rows)
        else:  # a group of integer branches kept as integers
            first = lengths[self.names[0]]
            rows[...] = build_group(self.group, {v: (c, first) for v, c in columns.items()},
                                    dtype=self.dtype).values

    def result(self, taken: set[str]) -> dict[str, RaggedGroup]:
        if self.offsets is not None:
            return {self.group: RaggedGroup(self.names, self.block, self.offsets)}
        lengths = {v: np.concatenate(ls) if ls else np.zeros(0, dtype=np.int64)
                   for v, ls in self.lengths.items()}
        parts = {self.group: self.names} if self.strict else split_by_lengths(self.group, lengths, taken)
        if len(parts) > 1:
            _log.info("%s: jagged branches %s share no counter and differ in length: read as the groups %s",
                      self.file, self.names, parts)
        out = {}
        for g, names in parts.items():
            columns = {v: (self.pieces[v] or [np.zeros(0, dtype=self.dtype)], lengths[v]) for v in names}
            dtype = self.dtype if self.strict else np.result_type(*[p.dtype for v in names
                                                                    for p in self.pieces[v]] or [self.dtype])
            out[g] = build_group(g, columns, file=self.file, dtype=dtype)
        self.pieces = {}
        return out


def _read_groups(cols: TreeColumns, groups: dict[str, list[str]], dt: np.dtype | None,
                 step_bytes: int, declared: set[str], taken: Sequence[str]) -> dict[str, RaggedGroup]:
    """Every group, read range by range."""
    sinks = {}
    for g, names in groups.items():
        counter = cols.shared_counter(names)
        counts = cols.read(counter).astype(np.int64) if counter is not None else None
        dtype = dt if dt is not None else np.result_type(*[cols.dtype(v) for v in names])
        sinks[g] = _Sink(g, names, np.dtype(dtype), counts, cols.file, strict=g in declared)
    members = [v for names in groups.values() for v in names]
    for a, z in entry_ranges(cols, members, step_bytes):
        for g, sink in sinks.items():
            columns, lengths = {}, {}
            for v in sink.names:
                col = column_buffers(cols.read_range(v, a, z), v, file=cols.file)
                columns[v], lengths[v] = col.values[""], col.lengths
            if sink.counts is not None:
                cols.check_counts(sink.counts[a:z], lengths, a)
            elif sink.strict:
                check_equal_lengths(g, lengths, first_row=a, file=cols.file, row_word="entry",
                                    where=f"tree {cols.tree!r}: ",
                                    hint="they share no counter branch; declare them in different "
                                         "groups with a schema")
            sink.put(a, columns, lengths)
    taken_names = set(taken) | set(groups)
    out: dict[str, RaggedGroup] = {}
    for g, sink in sinks.items():
        out.update(sink.result(taken_names | set(out)))
    return out
