"""Form ragged groups from per-variable ragged columns (design §2).

Variables group by the prefix before their first ``.`` (``png.calE`` -> ``png``)
unless a schema declares the groups. Every variable of a group must have the same
length in every row; a mismatch is an error naming the row and the variables.
"""
from __future__ import annotations

import os
from typing import Any, Mapping

import numpy as np

from ..columns import RaggedGroup
from ..errors import SchemaError

__all__ = ["group_prefix", "declared_groups", "declared_scalars", "assign_groups", "build_group"]


def group_prefix(name: str) -> str:
    """Group of a ragged variable named ``name``: its prefix before the first ``.``."""
    return name.split(".", 1)[0]


def _as_schema(schema: Any) -> Any:
    """Accept a Schema object, a ``{group: [vars]}`` mapping or a TOML path."""
    if isinstance(schema, (str, os.PathLike)):
        from ..schema import Schema  # the CSV reader's schema type

        return Schema.from_toml(schema)
    return schema


def declared_groups(schema: Any) -> dict[str, list[str]] | None:
    """Declared ``{group: [variables]}`` of ``schema``, or ``None`` when it declares none."""
    schema = _as_schema(schema)
    if schema is None:
        return None
    groups = schema if isinstance(schema, Mapping) else getattr(schema, "groups", None)
    if not groups:
        return None
    return {str(g): [str(v) for v in vs] for g, vs in dict(groups).items()}


def declared_scalars(schema: Any) -> list[str] | None:
    """Scalars a schema restricts reading to, or ``None`` (all of them)."""
    schema = _as_schema(schema)
    if schema is None or isinstance(schema, Mapping):
        return None
    scalars = getattr(schema, "scalars", None)
    return [str(s) for s in scalars] if scalars else None


def assign_groups(ragged_names: list[str], declared: Mapping[str, list[str]] | None, *,
                  file: str | None = None) -> dict[str, list[str]]:
    """Map every ragged variable to a group: declared ones first, the rest by prefix.

    A declared variable may be written in full (``png.calE``) or without its group
    prefix (``calE`` in group ``png``). A declared group holds exactly the declared
    variables: other variables with its prefix are left out (the schema selects).
    Variables whose prefix names no declared group form groups by prefix.

    Raises
    ------
    SchemaError
        A declared variable is not in the file.
    """
    groups: dict[str, list[str]] = {}
    used: set[str] = set()
    available = set(ragged_names)
    for g, names in (declared or {}).items():
        resolved = []
        for v in names:
            full = v if v in available else f"{g}.{v}"
            if full not in available:
                raise SchemaError(f"declared variable {v!r} of group {g!r} is not a ragged "
                                  f"column of the file", file=file, variable=v)
            resolved.append(full)
        groups[g] = resolved
        used.update(resolved)
    declared_names = set(groups)
    for v in ragged_names:
        g = group_prefix(v)
        if v not in used and g not in declared_names:
            groups.setdefault(g, []).append(v)
    return groups


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
