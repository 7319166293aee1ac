"""Which layout an HDF5 file of plain arrays uses, told from its datasets (no options needed).

Besides lstm_data's own layout, the HDF5 files people hold store ragged data in
one of these ways; :func:`scan` finds which, and every one reads as ragged groups:

* **variable-length arrays**: PyTables ``VLArray``s / h5py vlen datasets (lstm_ee);
* **flat values + counts**: 1-D datasets of every event's values one after the other
  and an integer counts dataset of the event length (:mod:`.counts`);
* **one group per object**: an HDF5 group per kind of object (``event/``, ``png/``),
  each holding flat datasets; the counts sit in the event group (``n_png``) or the
  object's group (``png/counts``). Columns of an object group are named
  ``png.calE`` (group ``png``); those of the event group keep their names when only
  one group holds the event's scalars, else they are named ``event.calE`` too;
* **padded + valid**: fixed-size arrays with a validity flag (:mod:`.padded`).

A schema still decides: its groups take the detected ragged columns it names, in
its order, and a column it lists under ``scalars`` is never taken as a counted
value. :class:`Layout` is what ``lstm-data inspect`` prints
(``layout: flat values + counts (n_png → png_calE, png_nhit)``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import h5py
import numpy as np

from lstm_data.io.hdf5.columns import Column, Columns, Keep, classify
from lstm_data.io.hdf5.counts import Flat, counted_name, pair_counts
from lstm_data.io.hdf5.padded import Padded, find_padded
from lstm_data.io.hdf5.rows import read_rows

__all__ = ["Layout", "Scan", "scan", "VLEN", "FLAT", "OBJECTS", "PADDED"]

VLEN = "variable-length arrays"
FLAT = "flat values + counts"
OBJECTS = "one group per object"
PADDED = "padded arrays + validity flag"

#: reads a ragged dataset once: (values block, per-row lengths)
Source = Callable[[], tuple[np.ndarray, np.ndarray]]


@dataclass
class Layout:
    """The layouts found in a file, each with what it pairs.

    Attributes
    ----------
    parts : dict
        Layout name -> what it pairs (``n_png → png_calE, png_nhit``), in the order found.
    """

    parts: dict[str, list[str]] = field(default_factory=dict)

    def add(self, kind: str, what: str) -> None:
        self.parts.setdefault(kind, []).append(what)

    def describe(self) -> str:
        """``flat values + counts (n_png → png_calE, png_nhit)``; ``scalars only`` without ragged data."""
        if not self.parts:
            return "scalars only (no ragged data found)"
        return "; ".join(f"{kind} ({'; '.join(what)})" if what else kind for kind, what in self.parts.items())


@dataclass
class Scan:
    """What :func:`scan` found.

    Attributes
    ----------
    columns
        Every column (ragged ones marked), as :func:`~lstm_data.io.hdf5.columns.classify` gives.
    layout
        The layouts found.
    keys
        Ragged column -> the group its layout puts it in.
    sources
        Dataset key -> its reader, for ragged datasets that are not variable-length.
    unwanted
        Counts datasets read only to cut their values (``columns``/``exclude`` leave them out).
    """

    columns: Columns
    layout: Layout
    keys: dict[str, str] = field(default_factory=dict)
    sources: dict[str, Source] = field(default_factory=dict)
    unwanted: set[str] = field(default_factory=set)


def scan(node: h5py.Group, get: Callable[[str], Any], *, keep: Keep, scalars: frozenset[str] = frozenset(),
         file: str) -> Scan:
    """The columns of ``node`` and the layout that makes some of them ragged (see the module).

    Parameters
    ----------
    node
        The opened group (``root``).
    get
        Path below ``node`` -> the object (links checked).
    keep
        ``(column, dataset)`` -> whether it is wanted.
    scalars
        Columns a schema declares scalars (never taken as counted values).

    Raises
    ------
    FormatError
        Counts or flags that do not pass their checks (see :mod:`.counts`, :mod:`.padded`).
    """
    out = Scan(Columns(), Layout())
    padded = _scan_group(node, get, "", keep, out, file)
    # a group per object: only when the opened group holds no columns of its own
    subgroups = [] if out.columns.columns else [k for k in node if isinstance(get(k), h5py.Group)]
    if subgroups:
        out.columns.skipped = {k: why for k, why in out.columns.skipped.items() if k not in subgroups}
    for g in subgroups:
        padded += _scan_group(get(g), _below(get, g), g, keep, out, file)
    for p in padded:
        out.layout.add(PADDED, p.describe())
    found = out.columns
    for col in found.columns.values():
        if col.ragged and col.key not in out.sources:
            out.keys[col.name] = col.key.split("/", 1)[0].split(".", 1)[0]
            out.layout.parts.setdefault(VLEN, [])
    flats = [Flat(c.name, c.key, found.rows[c.key], found.datasets[c.key].dtype.kind in "iu")
             for c in found.columns.values()
             if not c.ragged and not c.path and not c.index and found.datasets[c.key].ndim == 1
             and c.key not in found.compound]
    counted = pair_counts(flats, lambda f: read_rows(found.datasets[f.key], file=file, variable=f.key),
                          keep_scalar=scalars, file=file)
    kind = OBJECTS if subgroups and any("/" in f.key for c in counted for f in c.values) else FLAT
    for c in counted:
        for v in c.values:
            old = found.columns[v.name]
            found.columns[v.name] = Column(old.name, old.key, ragged=True)
            found.rows[v.key] = c.counts.rows
            out.keys[v.name] = c.group
            out.sources[v.key] = _flat_source(found.datasets[v.key], c.lengths, file)
    if kind == OBJECTS and counted:
        _bare_event_group(out, subgroups)
    for c in counted:
        out.layout.add(kind, f"{_shown(out, c.counts.key)} → {', '.join(_shown(out, v.key) for v in c.values)}")
    for name in out.unwanted:
        key = found.columns.pop(name).key
        if all(c.key != key for c in found.columns.values()):
            del found.datasets[key], found.rows[key]
    return out


def _below(get: Callable[[str], Any], group: str) -> Callable[[str], Any]:
    """``get`` for the members of ``group``."""
    return lambda key: get(f"{group}/{key}")


def _shown(out: Scan, key: str) -> str:
    return next(c.name for c in out.columns.columns.values() if c.key == key)


def _flat_source(ds: h5py.Dataset, lengths: np.ndarray, file: str) -> Source:
    key = ds.name.lstrip("/")
    return lambda: (read_rows(ds, file=file, variable=key), lengths)


def _padded_source(p: Padded, ds: h5py.Dataset, file: str) -> Source:
    return lambda: (p.block(ds, file=file), p.lengths)


def _scan_group(group: h5py.Group, get: Callable[[str], Any], prefix: str, keep: Keep, out: Scan,
                file: str) -> list[Padded]:
    """Classify ``group``'s datasets into ``out`` (named ``prefix.name``, keyed ``prefix/name``)."""
    def named(name: str) -> str:
        return f"{prefix}.{name}" if prefix else name

    def key_of(key: str) -> str:
        return f"{prefix}/{key}" if prefix else key

    wanted: Keep = lambda col, key: keep(named(col), key_of(key))
    padded = find_padded(group, get, keep=wanted, file=file)
    consumed = {k for p in padded for k in p.consumed}

    def classified(col: str, key: str) -> bool:
        """Wanted, or a counts dataset (read to cut its values even when not wanted as a column)."""
        if key in consumed:
            return False
        if wanted(col, key):
            return True
        if col == key and counted_name(named(col)) is not None:
            out.unwanted.add(named(col))
            return True
        return False

    found = classify(group, get, keep=classified, file=file)
    target = out.columns
    for name, why in found.skipped.items():
        if name.split(".", 1)[0] not in consumed:
            target.skipped[named(name)] = why
    for c in found.columns.values():
        target.add(Column(named(c.name), key_of(c.key), c.path, c.index, c.ragged))
    for k, ds in found.datasets.items():
        target.datasets[key_of(k)], target.rows[key_of(k)] = ds, found.rows[k]
    for k, dt in found.compound.items():
        target.compound[key_of(k)] = dt
    for p in padded:
        ds = get(p.key)
        k = key_of(p.key)
        target.datasets[k], target.rows[k] = ds, int(ds.shape[0])
        for c in p.columns:
            col = Column(named(c.name), k, c.path, c.index, ragged=True)
            target.add(col)
            out.keys[col.name] = named(p.key)
        out.sources[k] = _padded_source(p, ds, file)
        p.key, p.mask = named(p.key), named(p.mask)
    return padded


def _bare_event_group(out: Scan, subgroups: list[str]) -> None:
    """Drop the group prefix of the columns of the one subgroup that holds no ragged data."""
    cols = out.columns.columns
    holders = {c.key.split("/", 1)[0] for c in cols.values() if c.ragged}
    events = [g for g in subgroups if g not in holders and any(c.key.startswith(g + "/") for c in cols.values())]
    if len(events) != 1:
        return
    g = events[0]
    renamed = {n: n[len(g) + 1:] for n, c in cols.items() if c.key.startswith(g + "/")}
    if set(renamed.values()) & (set(cols) - set(renamed)):
        return
    out.columns.columns = {renamed.get(n, n): (Column(renamed[n], c.key, c.path, c.index, c.ragged)
                                               if n in renamed else c) for n, c in cols.items()}
