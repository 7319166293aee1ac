"""awkward arrays in and out: :func:`from_awkward` and :func:`to_awkward` (extra ``awkward``).

A dataset is a record array of N rows:

* a field of numbers (``N * float32``, ``N * int64``, ...) is a scalar column;
* a field ``Muon: var * {pt: float32, eta: float32}`` is the ragged group
  ``Muon`` with variables ``Muon_pt``, ``Muon_eta`` (``outer_inner``, as
  ``uproot`` names the branches of a zipped record; ``sep=`` changes the ``_``);
  its fields have equal lengths by construction;
* fields of type ``var * float32`` group by their prefix before the first ``_``
  or ``.`` (``png.calE``, ``png.nhit`` -> group ``png``; ``Jet_pt``, ``Jet_eta``
  -> ``Jet``) and must have equal lengths in every row; a prefix equal to a
  record field's name joins that group. A schema (``{group: [variables]}``) declares
  other groups.

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

from typing import Any, Mapping

import numpy as np

from lstm_data.data.dataset import Dataset, InMemoryDataset
from lstm_data.errors import SchemaError
from lstm_data.io.awkward.layout import (
    NAMES_PARAMETER,
    Column,
    column_buffers,
    import_awkward,
)
from lstm_data.io.column_groups import build_group
from lstm_data.io.jagged_groups import plan_groups
from lstm_data.io.layout import value_dtype

__all__ = ["from_awkward", "to_awkward", "NAMES_PARAMETER"]

_WHERE = "awkward array"


def from_awkward(array: Any, *, schema: Any = None, dtype: Any = None, sep: str = "_") -> InMemoryDataset:
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

    Raises
    ------
    SchemaError
        Not a record array; a field that is not numbers, ``var * numbers`` or
        ``var * {numbers}`` (names the field and its type); two variables of a
        group differ in length (names them and the row).
    """
    ak = import_awkward()
    if not isinstance(array, ak.Array):
        array = ak.Array(dict(array) if isinstance(array, Mapping) else array)
    fields = array.fields
    if not fields or array.layout.purelist_depth != 1:
        raise SchemaError(f"expected an array of records (one field per column), got type {array.type}")
    columns = {f: column_buffers(array[f], f) for f in fields}
    scalars, jagged, keys, sources = _variables(columns, sep)
    groups, scalar_names, schema_dtype = plan_groups(schema, scalars, jagged, keys, file=_WHERE)
    dt = value_dtype(dtype if dtype is not None else schema_dtype, file=_WHERE)
    out_scalars = {s: _cast(columns[s].values[""], dt) for s in scalar_names}
    out_groups = {}
    for g, names in groups.items():
        parts = {v: (columns[sources[v][0]].values[sources[v][1]], columns[sources[v][0]].lengths)
                 for v in names}
        out_groups[g] = build_group(g, parts, file=_WHERE, dtype=dt)
    return InMemoryDataset(out_scalars, out_groups)


def _variables(columns: Mapping[str, Column], sep: str):
    """Scalars, jagged variables, their group keys and where each variable's values are."""
    scalars, jagged, keys, sources = [], [], {}, {}
    for f, col in columns.items():
        if not col.jagged:
            scalars.append(f)
        elif "" in col.values:
            jagged.append(f)
            sources[f] = (f, "")
        else:
            inner = list(col.values)
            names = col.names or [f"{f}{sep}{i}" for i in inner]
            for name, i in zip(names, inner):
                jagged.append(name)
                keys[name] = f
                sources[name] = (f, i)
    taken = set(scalars)
    for v in jagged:
        if v in taken:
            raise SchemaError(f"two fields give the variable {v!r}; rename one (or pass another sep=)",
                              file=_WHERE, variable=v)
        taken.add(v)
    return scalars, jagged, keys, sources


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
