"""RNTuples (what uproot >= 5.7 writes for ``file["Events"] = {...}``), read through awkward.

The fields read are taken as :func:`lstm_data.io.awkward.from_awkward` takes them.
:func:`read_rntuple` reads the whole RNTuple; :class:`RNTupleReader` reads it by its
clusters, entry range by entry range (for :class:`~lstm_data.io.root.lazy.RootDataset`).
"""
from __future__ import annotations

import fnmatch
from typing import Any

import numpy as np

from lstm_data.data.dataset import InMemoryDataset
from lstm_data.errors import FormatError, SchemaError
from lstm_data.io.plumbing.chunked import chunk_bounds_of
from lstm_data.io.columns.select import ColumnSelection
from lstm_data.io.root.memory import fits

__all__ = ["read_rntuple", "RNTupleReader", "rntuple_fits"]


def read_rntuple(ntuple: Any, ntuple_name: str, file: str, schema: Any,
                 dt: np.dtype | None, selection: ColumnSelection,
                 chunk_bytes: int = 64 << 20) -> InMemoryDataset:
    """An RNTuple in RAM, read in cluster ranges of about ``chunk_bytes`` (whole clusters).

    Each range is taken as :func:`from_awkward` takes the whole, then copied into the
    final arrays and let go, so memory holds the result and one range (the final
    arrays' pages are touched only as they are filled). Ranges that give other
    columns than the first (a field that is empty in one range) fall back to one
    read of the whole.
    """
    reader = RNTupleReader(ntuple, ntuple_name, file, schema, dt, selection)
    per = reader.bytes_per_entry()
    rows = max(1, int(chunk_bytes / per)) if per else max(1, reader.n)
    bounds = chunk_bounds_of(reader.clusters(), reader.n, rows)
    if len(bounds) <= 2:
        dataset = reader.read(0, reader.n)
    else:
        pieces = [reader.read(a, z) for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist())]
        dataset = _join(pieces) if _alike(pieces) else reader.read(0, reader.n)
    dataset.source = (file,)
    dataset.skipped = dict(reader.skipped)
    return dataset


def _alike(pieces: list[InMemoryDataset]) -> bool:
    first = pieces[0]
    return all(p.scalar_names == first.scalar_names and p.groups == first.groups for p in pieces[1:])


def _join(pieces: list[InMemoryDataset]) -> InMemoryDataset:
    """One dataset of ``pieces`` (same columns), each piece let go once copied."""
    from lstm_data.data.ragged import RaggedGroup

    names, by_group = pieces[0].scalar_names, pieces[0].groups
    n = sum(len(p) for p in pieces)
    scalars = {s: np.empty(n, dtype=np.result_type(*[p.scalar(s).dtype for p in pieces])) for s in names}
    totals = {g: sum(int(p.offsets(g)[-1]) for p in pieces) for g in by_group}
    groups = {g: (np.empty((totals[g], len(vs)), dtype=np.result_type(*[p.ragged(g)[0].dtype for p in pieces])),
                  np.zeros(n + 1, dtype=np.int64)) for g, vs in by_group.items()}
    row, at = 0, dict.fromkeys(by_group, 0)
    pieces.reverse()
    while pieces:
        piece = pieces.pop()
        k = len(piece)
        for s in names:
            scalars[s][row:row + k] = piece.scalar(s)
        for g in by_group:
            values, offsets = piece.ragged(g)
            out_values, out_offsets = groups[g]
            out_values[at[g]:at[g] + len(values)] = values
            out_offsets[row + 1:row + k + 1] = offsets[1:] + at[g]
            at[g] += len(values)
        row += k
        del piece
    return InMemoryDataset(scalars, {g: RaggedGroup(by_group[g], *groups[g]) for g in by_group})


class RNTupleReader:
    """Entry ranges of one RNTuple as in-RAM datasets (the chosen fields, as :func:`from_awkward` takes them).

    Attributes
    ----------
    skipped : dict
        Field -> its type and why it is not read (from the first range read).
    """

    def __init__(self, ntuple: Any, name: str, file: str, schema: Any, dt: np.dtype | None,
                 selection: ColumnSelection) -> None:
        self.ntuple, self.name, self.file, self.schema, self.dt = ntuple, name, file, schema, dt
        self.selection = selection
        self.n = int(ntuple.num_entries)
        self.fields = _rntuple_fields(ntuple, selection)
        self.skipped: dict[str, str] = {}

    def read(self, start: int, stop: int) -> InMemoryDataset:
        """Entries ``start:stop``.

        Raises
        ------
        FormatError
            A page cannot be read (names the file, the RNTuple and the entries).
        SchemaError
            As :func:`lstm_data.io.awkward.from_awkward`, naming the RNTuple.
        """
        from lstm_data.io.awkward import from_awkward

        try:
            kw = {"entry_start": start, "entry_stop": stop, "library": "ak"}
            array = self.ntuple.arrays(self.fields, **kw) if self.fields is not None else self.ntuple.arrays(**kw)
        except Exception as exc:
            if isinstance(exc, (ImportError, MemoryError)):
                raise
            raise FormatError(f"cannot read entries {start}:{stop} of RNTuple {self.name!r}; damaged file? "
                              f"({type(exc).__name__}: {exc})", file=self.file, row=start) from exc
        try:
            dataset = from_awkward(array, schema=self.schema, dtype=self.dt, columns=self.selection.columns,
                                   exclude=self.selection.exclude or None, where=self.file)
        except SchemaError as exc:
            raise SchemaError(f"RNTuple {self.name!r}: {exc.message}", file=self.file, variable=exc.variable,
                              row=exc.row if exc.row is None else exc.row + start) from None
        self.skipped = dict(getattr(dataset, "skipped", {}) or self.skipped)
        return dataset

    def clusters(self) -> np.ndarray:
        """The first entry of every cluster, ascending."""
        try:
            firsts = [int(c.num_first_entry) for c in self.ntuple.cluster_summaries]
        except Exception:  # no cluster summaries readable: entry ranges are still exact, just not aligned
            firsts = [0]
        return np.asarray(sorted(set(firsts)), dtype=np.int64)

    def bytes_per_entry(self) -> float:
        """Decoded bytes per entry of the chosen fields, from the first cluster."""
        starts = self.clusters()
        stop = int(starts[1]) if len(starts) > 1 else self.n
        stop = max(1, min(stop, self.n))
        if self.n == 0:
            return 0.0
        first = self.read(0, stop)
        nbytes = sum(first.scalar(s).nbytes for s in first.scalar_names)
        nbytes += sum(v.nbytes + o.nbytes for v, o in (first.ragged(g) for g in first.groups))
        return nbytes / stop

    def layout(self, chunk_bytes: int) -> tuple[np.ndarray, dict[str, np.dtype[Any]],
                                                dict[str, tuple[list[str], np.dtype[Any], np.ndarray]]]:
        """Chunk bounds (whole clusters), scalar dtypes and groups (variables, dtype, offsets).

        Reads every chunk once for the group lengths.
        """
        per = self.bytes_per_entry()
        rows = max(1, int(chunk_bytes / per)) if per else max(1, self.n)
        bounds = chunk_bounds_of(self.clusters(), self.n, rows)
        scalars: dict[str, list[np.dtype]] = {}
        groups: dict[str, list[str]] = {}
        dtypes: dict[str, list[np.dtype]] = {}
        lengths: dict[str, list[np.ndarray]] = {}
        for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            part = self.read(a, z)
            shape = (part.scalar_names, part.groups)
            if a == 0:
                scalars = {s: [] for s in part.scalar_names}
                groups = part.groups
                dtypes = {g: [] for g in groups}
                lengths = {g: [] for g in groups}
            elif shape != (list(scalars), groups):
                raise FormatError(f"RNTuple {self.name!r}: entries {a}:{z} give other columns than the entries "
                                  f"before; read it whole (in_ram=True)", file=self.file, row=a)
            for s in part.scalar_names:
                scalars[s].append(part.scalar(s).dtype)
            for g in groups:
                values, off = part.ragged(g)
                dtypes[g].append(values.dtype)
                lengths[g].append(np.diff(off))
        out: dict[str, tuple[list[str], np.dtype[Any], np.ndarray]] = {}
        for g, names in groups.items():
            off = np.zeros(sum(len(x) for x in lengths[g]) + 1, dtype=np.int64)
            np.cumsum(np.concatenate(lengths[g]) if lengths[g] else np.zeros(0, np.int64), out=off[1:])
            out[g] = (list(names), np.result_type(*dtypes[g]), off)
        return bounds, {s: np.result_type(*d) for s, d in scalars.items()}, out


def rntuple_fits(ntuple: Any, name: str, file: str, schema: Any, dt: np.dtype | None,
                 selection: ColumnSelection) -> bool:
    """Whether the chosen fields, read whole, take at most the share of memory a whole read may take."""
    reader = RNTupleReader(ntuple, name, file, schema, dt, selection)
    return fits(int(reader.bytes_per_entry() * reader.n))


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
