"""awkward arrays in and out: :func:`from_awkward` and :func:`to_awkward` (extra ``awkward``).

A dataset is a record array of N rows:

* a field of numbers (``N * float32``, ``N * int64``, ...) is a scalar column;
* a field ``Muon: var * {pt: float32, eta: float32}`` is the ragged group
  ``Muon`` with variables ``Muon_pt``, ``Muon_eta`` (``outer_inner``, as
  ``uproot`` names the branches of a zipped record; ``sep=`` changes the ``_``);
  its fields have equal lengths by construction;
* fields of type ``var * float32`` group by their lengths, as every reader groups
  list columns (:mod:`lstm_data.io.columns.groups`): fields of one prefix with equal
  lengths in every row form one group named by their common prefix (``part_px``,
  ``part_py`` -> ``part``; ``png.calE``, ``png.nhit`` -> ``png``), the others are
  groups of their own; a prefix equal to a record field's name joins that group
  when the lengths are equal. A schema (``{group: [variables]}``) declares other
  groups (which must have equal lengths);
* nested records flatten to dotted names (``info.pos.x``), fixed-size arrays to
  one column per element (``p4[0]``); what is not numbers (strings, lists of
  lists, unions) is skipped and listed in the dataset's ``skipped`` attribute
  (see :mod:`lstm_data.io.awkward.flatten`); ``columns=`` / ``exclude=`` choose.

Values are not copied beyond the interleave into each group's ``(total, V)``
block: the buffers of ``ListOffsetArray``/``NumpyArray`` layouts are used as
they are. Option types, ``ListArray`` and ``IndexedArray`` layouts are first
normalised, one copy of that field (see :mod:`lstm_data.io.awkward.layout`: a
missing number is NaN, a missing list is empty).

:func:`to_awkward` gives the inverse: scalars as number fields, each group a
``var * record`` field whose record fields are views of the group's value
columns (no copy for an in-RAM dataset). Where ``group_field`` would not give the
variable names back (``png.calE``), the full names ride along as the record's
``lstm_data_names`` parameter, so the round trip is exact.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
from numpy.typing import DTypeLike

from lstm_data.data.dataset import Dataset, InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.errors import SchemaError
from lstm_data.io.awkward.flatten import Leaf, _strip, describe_skipped, flatten_field
from lstm_data.io.awkward.layout import NAMES_PARAMETER, import_awkward
from lstm_data.io.columns.select import ColumnSelection
from lstm_data.io.columns.build import build_group
from lstm_data.io.columns.groups import plan_groups, settle
from lstm_data.io.ours.layout import value_dtype
from lstm_data.io.schema import SchemaLike

if TYPE_CHECKING:
    import awkward as ak

__all__ = ["from_awkward", "to_awkward", "NAMES_PARAMETER"]

_WHERE = "awkward array"
_log = logging.getLogger("lstm_data")


def from_awkward(array: ak.Array, *, schema: SchemaLike = None, dtype: DTypeLike | None = None, sep: str = "_",
                 columns: Sequence[str] | str | None = None,
                 exclude: Sequence[str] | str | None = None, where: str = _WHERE) -> InMemoryDataset:
    """An in-RAM dataset from an awkward record array (see the module documentation).

    Parameters
    ----------
    array
        An ``ak.Array`` of records (or anything ``ak.Array`` accepts, e.g. a dict of
        equal-length arrays).
    schema
        Declared groups, scalars and dtype (a Schema, a mapping or a TOML path).
    dtype
        ``float32`` or ``float64``: cast every column. Default: the schema's dtype,
        else each field's own (a group takes the common type of its fields).
    sep
        Joins a record field's name and its inner field names (``Muon`` + ``pt``).
    columns, exclude
        Column names or globs to read / never to read (see
        :mod:`lstm_data.io.columns.select`); matched against the flattened names and
        the list-of-records field a column comes from.
    where
        How errors name the source (a file path for an RNTuple).

    Returns
    -------
    InMemoryDataset
        Its ``skipped`` attribute maps every column that is not numbers to its type
        and why (also logged once).

    Raises
    ------
    SchemaError
        Not a record array; no numeric column at all (lists what was skipped and why);
        two variables of a group differ in length (names them and the row); a
        ``columns`` pattern that matches nothing.
    """
    ak = import_awkward()
    if not isinstance(array, ak.Array):
        array = ak.Array(dict(array) if isinstance(array, Mapping) else array)
    fields = array.fields
    if not fields or not _strip(array.layout).is_record:
        raise SchemaError(f"expected an array of records (one field per column), got type {array.type}",
                          file=where)
    selection = ColumnSelection(columns, exclude)
    leaves: dict[str, Leaf] = {}
    skipped: dict[str, str] = {}
    every: list[str] = []
    for f in fields:
        found, why = flatten_field(array[f], f, sep=sep)
        every += [leaf.name for leaf in found] + list(why)
        for leaf in found:
            if leaf.name in leaves:
                raise SchemaError(f"two fields give the variable {leaf.name!r}; rename one (or pass "
                                  "another sep=)", file=where, variable=leaf.name)
            if selection.wants(leaf.name, leaf.key):
                leaves[leaf.name] = leaf
        skipped.update({k: t for k, t in why.items() if selection.wants(k)})
    selection.check_all_used(every, file=where)
    refuse_named_skipped(selection, skipped, where)
    if not leaves:
        raise SchemaError(f"nothing to read: no column of numbers or lists of numbers"
                          f"{'; skipped ' + describe_skipped(skipped) if skipped else ''}", file=where)
    if skipped:
        _log.info("%s: skipped %d columns that are not numbers: %s", where, len(skipped),
                  describe_skipped(skipped))
    scalars = [n for n, leaf in leaves.items() if not leaf.jagged]
    jagged = [n for n, leaf in leaves.items() if leaf.jagged]
    keys = {n: leaf.key for n, leaf in leaves.items() if leaf.jagged and leaf.key is not None}
    plan = plan_groups(schema, scalars, jagged, keys, file=where)
    dt = value_dtype(dtype if dtype is not None else plan.dtype, file=where)
    out_scalars = {s: _cast(leaves[s].column(where).values[""], dt) for s in plan.scalars}
    out_groups: dict[str, RaggedGroup] = {}
    taken = set(plan.scalars) | set(plan.groups)
    for g, names in plan.groups.items():
        cols = {v: leaves[v].column(where) for v in names}
        lengths = {v: c.lengths for v, c in cols.items()}
        parts = {g: names} if g in plan.declared else settle(g, lengths, keep=plan.keyed(g),
                                                             taken=(taken - {g}) | set(out_groups))
        if len(parts) > 1:
            _log.info("%s: columns %s differ in length: read as the groups %s", where, names, parts)
        for sub, members in parts.items():
            out_groups[sub] = build_group(sub, {v: (cols[v].values[""], lengths[v]) for v in members},
                                          file=where, dtype=dt)
    dataset = InMemoryDataset(out_scalars, out_groups)
    dataset.skipped = skipped
    return dataset


def refuse_named_skipped(selection: ColumnSelection, skipped: Mapping[str, str], where: str) -> None:
    """A ``columns`` entry that is the plain name of a skipped column is an error, not silence."""
    for p in selection.columns or ():
        if p in skipped:
            raise SchemaError(f"columns names {p!r}, which is {skipped[p]}", file=where, variable=p)


def _cast(values: np.ndarray, dt: np.dtype | None) -> np.ndarray:
    return values if dt is None else values.astype(dt, copy=False)


def _inner_names(group: str, names: list[str]) -> list[str]:
    """Record field names of a group: variables without the ``group_`` / ``group.`` prefix, if all have it."""
    for sep in ("_", "."):
        head = group + sep
        if all(v.startswith(head) and len(v) > len(head) for v in names):
            short = [v[len(head):] for v in names]
            if len(set(short)) == len(short):
                return short
    return list(names)


def to_awkward(dataset: Dataset) -> Any:
    """An awkward record array of ``dataset``: scalars as numbers, each group a ``var * record`` field.

    The group ``Muon`` with variables ``Muon_pt``, ``Muon_eta`` becomes the field
    ``Muon: var * {pt, eta}`` (``png.calE`` -> ``png: var * {calE}``); the values
    are views of the dataset's arrays (an on-disk dataset is read once).
    :func:`from_awkward` reads it back bitwise, names included.

    Raises
    ------
    SchemaError
        A scalar and a group share a name.
    """
    ak = import_awkward()
    contents, names = [], []
    for s in dataset.scalar_names:
        contents.append(ak.contents.NumpyArray(np.asarray(dataset.scalar(s))))
        names.append(s)
    for g, variables in dataset.groups.items():
        if g in names:
            raise SchemaError(f"group {g!r} has the name of a scalar column; an awkward record "
                              "cannot hold both", variable=g)
        values, offsets = dataset.ragged(g)
        inner = _inner_names(g, variables)
        plain = [f"{g}_{i}" for i in inner] == list(variables)  # from_awkward names them back
        record = ak.contents.RecordArray(
            [ak.contents.NumpyArray(values[:, j]) for j in range(values.shape[1])], inner,
            length=len(values), parameters=None if plain else {NAMES_PARAMETER: list(variables)})
        contents.append(ak.contents.ListOffsetArray(ak.index.Index64(offsets), record))
        names.append(g)
    return ak.Array(ak.contents.RecordArray(contents, names, length=len(dataset)))
