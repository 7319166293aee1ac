"""Form ragged groups from per-variable ragged columns (design §2).

Variables group by the prefix before their first ``.`` (``png.calE`` -> ``png``)
unless a schema declares the groups. Every variable of a group must have the same
length in every row; a mismatch is an error naming the row and the variables.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from lstm_data.data.ragged import RaggedGroup
from lstm_data.errors import SchemaError

__all__ = ["group_prefix", "resolve_schema", "build_group"]


def group_prefix(name: str) -> str:
    """Group of a ragged variable named ``name``: its prefix before the first ``.``."""
    return name.split(".", 1)[0]


def resolve_schema(schema: Any, scalar_names: list[str], ragged_names: list[str], *,
                   file: str | None = None):
    """Groups, scalars and dtype for a file whose columns are known up front.

    Parameters
    ----------
    schema
        ``None``, a :class:`~lstm_data.io.schema.Schema`, a TOML path or a mapping.
    scalar_names, ragged_names
        The file's 1-D and variable-length columns, in file order.

    Returns
    -------
    groups : dict
        Group -> ragged variables. A declared group holds exactly its declared
        variables (other variables with its prefix are left out: the schema
        selects); variables whose prefix names no declared group group by prefix.
    scalars : list of str
        Declared scalars, or every scalar column.
    dtype : numpy dtype or None
        The schema's dtype (``None`` without a schema: keep the file's).

    Raises
    ------
    SchemaError
        A declared name is not a column, or a declared group variable is not ragged.
    """
    from lstm_data.io.schema import Schema

    parsed = Schema.coerce(schema)
    if parsed is None:
        declared, scalars, dtype = {}, None, None
    else:
        try:
            declared, scalars = parsed.resolve(scalar_names + ragged_names)
        except SchemaError as exc:
            raise exc.located(file=file) from None
        dtype = parsed.dtype
    ragged_set = set(ragged_names)
    for g, names in declared.items():
        for v in names:
            if v not in ragged_set:
                raise SchemaError(f"declared variable {v!r} of group {g!r} is not a "
                                  f"variable-length column", file=file, variable=v)
    groups = {g: list(v) for g, v in declared.items()}
    used = {v for vs in groups.values() for v in vs}
    for v in ragged_names:
        g = group_prefix(v)
        if v not in used and g not in declared:
            groups.setdefault(g, []).append(v)
    return groups, list(scalar_names if scalars is None else scalars), dtype


def build_group(group: str, columns: Mapping[str, tuple[np.ndarray, np.ndarray]], *,
                file: str | None = None) -> RaggedGroup:
    """Interleave same-length ragged columns into one :class:`RaggedGroup`.

    Parameters
    ----------
    columns
        Variable -> ``(flat values, per-row lengths)``, in column order.

    Raises
    ------
    SchemaError
        Two variables differ in length in some row (names the first such row).
    """
    names = list(columns)
    ref_name = names[0]
    ref_lengths = columns[ref_name][1]
    for v in names[1:]:
        lengths = columns[v][1]
        if len(lengths) != len(ref_lengths):
            raise SchemaError(f"group {group!r}: {v!r} has {len(lengths)} rows but {ref_name!r} "
                              f"has {len(ref_lengths)}", file=file, variable=v)
        bad = np.flatnonzero(lengths != ref_lengths)
        if len(bad):
            row = int(bad[0])
            raise SchemaError(
                f"group {group!r}: {v!r} has {int(lengths[row])} values but {ref_name!r} has "
                f"{int(ref_lengths[row])} in row {row} ({len(bad)} rows differ); put them in "
                f"different groups with a schema", file=file, row=row, variable=v)
    dtype = np.result_type(*[columns[v][0].dtype for v in names])
    offsets = np.zeros(len(ref_lengths) + 1, dtype=np.int64)
    np.cumsum(ref_lengths, out=offsets[1:])
    values = np.empty((int(offsets[-1]), len(names)), dtype=dtype)
    for j, v in enumerate(names):
        values[:, j] = columns[v][0]
    return RaggedGroup(names, values, offsets)
