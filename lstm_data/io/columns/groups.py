"""Which variable-length columns form one ragged group: the one rule every reader follows.

A variable-length column joins a group by, in this order:

1. a **schema** that declares the group (declared groups win, and are checked: their
   columns must have equal lengths in every row);
2. its **key**, what the source itself says belongs together: the branches of one
   ROOT counter (``nMuon`` counts ``Muon_pt``, ``Muon_eta``: group ``Muon``), the
   fields of a list of records (a Parquet ``list<struct>``, an awkward ``var *
   record``, an RNTuple collection: the group is the list), a NOvA table, the
   groups a file of ours records, the arrays of one HDF5 layout;
3. its **lengths**, for every other list column (a *free* column: a Parquet or Arrow
   ``list`` column, an awkward ``var * number`` field, a ROOT jagged branch without a
   counter): free columns of one prefix (:func:`name_prefix`, the name before its
   first ``_`` or ``.``) that have equal lengths in every row form one group, named
   by their longest common prefix cut at its last ``_`` or ``.``
   (:func:`common_prefix`: ``part_px``, ``part_py``, ``part_deta`` -> ``part``;
   ``png.calE``, ``png.nhit`` -> ``png``). A free column whose lengths no other
   column of its prefix shares is a group of its own named by its prefix
   (``Jet_pt`` -> ``Jet``), or by its own name when that is taken.

A free column whose prefix is the name of a keyed group joins it when its lengths
are those of the group. The elements of one fixed-size array (``dir[0]``,
``dir[1]``) count as one column. :func:`plan_groups` applies rules 1 and 2 and
buckets the free columns by prefix; :func:`settle` cuts a bucket by lengths, from
offsets (``np.array_equal`` of each column's lengths: one pass, once per file or row
group, never per batch). :func:`group_prefix` (the name before the first ``.``) is how
CSV and lstm_ee's HDF5 name the groups of their columns.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from lstm_data.errors import SchemaError

__all__ = ["group_prefix", "name_prefix", "common_prefix", "GroupPlan", "plan_groups", "settle",
           "check_group_lengths", "DECLARE_HINT"]

_SEPARATOR = re.compile(r"[._]")
_ELEMENTS = re.compile(r"(\[\d+\])+$")
#: what an error about unequal lengths tells the user to do
DECLARE_HINT = "put them in different groups with a schema"


def group_prefix(name: str) -> str:
    """The group of a CSV or lstm_ee HDF5 column named ``name``: its prefix before the first ``.``."""
    return name.split(".", 1)[0]


def name_prefix(name: str) -> str:
    """The bucket of a free list column: its name before the first ``_`` or ``.``
    (``Jet_pt`` -> ``Jet``, ``png.calE`` -> ``png``, ``p[0]`` -> ``p``)."""
    head = _SEPARATOR.split(_unit(name), maxsplit=1)[0]
    return head or name


def _unit(name: str) -> str:
    """The column an element belongs to: ``dir[1]`` -> ``dir``."""
    return _ELEMENTS.sub("", name) or name


def common_prefix(names: Sequence[str]) -> str:
    """The longest common prefix of ``names`` cut at its last ``_`` or ``.``; ``""`` when it holds none.

    ``part_px``, ``part_py``, ``part_deta`` -> ``part``; ``jet_part_px``,
    ``jet_part_py`` -> ``jet_part``; ``Muon_pt``, ``Electron_pt`` -> ``""``.
    """
    if not names:
        return ""
    lo, hi = min(names), max(names)
    n = 0
    while n < min(len(lo), len(hi)) and lo[n] == hi[n]:
        n += 1
    head = lo[:n]
    cut = max(head.rfind("_"), head.rfind("."))
    return head[:cut] if cut > 0 else ""


@dataclass
class GroupPlan:
    """The groups of a source before its lengths are known.

    Attributes
    ----------
    groups : dict
        Group -> its columns, in source order (declared groups: declared order). The
        free columns are in buckets named by :func:`name_prefix`, cut by :func:`settle`
        once their lengths are known.
    scalars : list of str
        The schema's scalars, or every flat column.
    dtype : numpy dtype or None
        The schema's dtype; ``None`` without a schema.
    declared : set of str
        Groups a schema declares: never cut, a length mismatch is an error.
    free : set of str
        The free columns (grouped by their lengths).
    """

    groups: dict[str, list[str]]
    scalars: list[str]
    dtype: np.dtype[Any] | None
    declared: set[str] = field(default_factory=set)
    free: set[str] = field(default_factory=set)

    def keyed(self, group: str) -> bool:
        """Whether ``group`` holds a column its source groups (it keeps its name when cut)."""
        return any(v not in self.free for v in self.groups[group])


def plan_groups(schema: Any, scalar_names: Sequence[str], ragged_names: Sequence[str],
                keys: Mapping[str, str] | None = None, *, file: str | None = None) -> GroupPlan:
    """Groups, scalars and dtype of a source, by the schema and the source's keys (see the module).

    Parameters
    ----------
    schema
        ``None``, a :class:`~lstm_data.io.schema.Schema`, a TOML path or a mapping.
    scalar_names, ragged_names
        The source's flat and variable-length numeric columns, in source order.
    keys
        Variable-length column -> the group its source puts it in (a counter, a list
        of records, a table); the others are free.

    Raises
    ------
    SchemaError
        A declared name is not a column, or a declared group member is not variable-length.
    """
    from lstm_data.io.schema import Schema

    keys = keys or {}
    parsed = Schema.coerce(schema)
    declared: dict[str, list[str]] = {}
    scalars: list[str] | None = None
    dtype = None
    if parsed is not None:
        try:
            declared, scalars = parsed.resolve(list(scalar_names) + list(ragged_names))
        except SchemaError as exc:
            raise exc.located(file=file) from None
        dtype = np.dtype(parsed.dtype)
    ragged_set = set(ragged_names)
    for g, names in declared.items():
        for v in names:
            if v not in ragged_set:
                raise SchemaError(f"declared variable {v!r} of group {g!r} is not a variable-length "
                                  "column", file=file, variable=v)
    groups = {g: list(v) for g, v in declared.items()}
    used = {v for vs in groups.values() for v in vs}
    free = set()
    for v in ragged_names:
        if v in used:
            continue
        g = keys.get(v) or name_prefix(v)
        if g not in declared:  # a declared group holds exactly its declared columns: the schema selects
            groups.setdefault(g, []).append(v)
            if v not in keys:
                free.add(v)
    return GroupPlan(groups, list(scalar_names if scalars is None else scalars), dtype, set(declared), free)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or (len(a) == len(b) and bool(np.array_equal(a, b)))


def settle(group: str, lengths: Mapping[str, np.ndarray], *, keep: bool = False,
           taken: Iterable[str] = ()) -> dict[str, list[str]]:
    """A bucket of columns cut into groups of equal lengths, named by the module's rule.

    Parameters
    ----------
    group
        The bucket's name (its columns' prefix, or a keyed group free columns joined).
    lengths
        Column -> its per-row lengths (the same rows for every column), in column order.
    keep
        The bucket is a keyed group: the columns with the first column's lengths keep
        its name.
    taken
        Names used by other groups or scalars.

    Returns
    -------
    dict
        Group -> its columns (in column order within a group; groups in the order of
        their first column).
    """
    refs: list[np.ndarray] = []
    classes: list[list[str]] = []
    for v, lens in lengths.items():
        for i, ref in enumerate(refs):
            if _same(ref, lens):
                classes[i].append(v)
                break
        else:
            refs.append(lens)
            classes.append([v])
    used = set(taken) - {group}
    names: dict[int, str] = {}

    def claim(i: int, wanted: str) -> None:
        name, k = wanted, 2
        if name in used:
            name = classes[i][0]
        base = name
        while name in used:
            name, k = f"{base}#{k}", k + 1
        names[i] = name
        used.add(name)

    if keep:
        claim(0, group)
    for i, members in enumerate(classes):  # several columns: their common prefix, first
        units = list(dict.fromkeys(_unit(v) for v in members))
        if i not in names and len(units) > 1:
            claim(i, common_prefix(units) or group)
    for i in range(len(classes)):  # one column: the bucket's name if still free
        if i not in names:
            claim(i, group)
    return {names[i]: members for i, members in enumerate(classes)}


def check_group_lengths(group: str, lengths: Mapping[str, np.ndarray], *, file: str | None = None,
                        first_row: int = 0, row_word: str = "row", where: str = "",
                        hint: str = DECLARE_HINT) -> np.ndarray:
    """The per-row lengths shared by every column of ``group``, or the error naming the first bad row.

    Parameters
    ----------
    lengths
        Column -> per-row lengths of the rows ``first_row, first_row + 1, ...``, in column order.
    row_word, where
        How the message names a row (``"entry"`` for ROOT) and the source (``"tree 'Events': "``).
    hint
        What the message tells the user to do.

    Raises
    ------
    SchemaError
        Two columns differ in row count, or in length in some row: names the group,
        both columns, their lengths and the first such row (counted from ``first_row``).
    """
    names = list(lengths)
    ref_name = names[0]
    ref = lengths[ref_name]
    rows = "entries" if row_word == "entry" else row_word + "s"
    for v in names[1:]:
        other = lengths[v]
        if len(other) != len(ref):
            raise SchemaError(f"{where}group {group!r}: {v!r} has {len(other)} {rows} but {ref_name!r} "
                              f"has {len(ref)}", file=file, variable=v)
        if other is ref:
            continue
        bad = np.flatnonzero(other != ref)
        if len(bad):
            i = int(bad[0])
            row = first_row + i
            more = f" ({len(bad)} {rows} differ)" if len(bad) > 1 else ""
            raise SchemaError(
                f"{where}group {group!r}: {v!r} has {int(other[i])} values but {ref_name!r} has "
                f"{int(ref[i])} in {row_word} {row}; {hint}{more}", file=file, row=row, variable=v)
    return ref
