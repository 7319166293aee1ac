"""Ragged groups of jagged columns whose files do not declare them (ROOT TTrees, awkward arrays).

A jagged column joins a group by, in this order:

1. a schema that declares the group;
2. its **key**: what the source says belongs together, i.e. the counter branch
   shared by several ROOT branches (``nMuon`` counts ``Muon_pt``, ``Muon_eta``:
   group ``Muon``) or the awkward ``var * record`` field it came from;
3. its **prefix**, the name before the first ``_`` or ``.`` (``Jet_e``,
   ``Jet_pt`` -> ``Jet``; ``png.calE`` -> ``png``), as the CSV reader groups.

Columns of one group must have equal lengths in every row (entry); a mismatch is
a ``SchemaError`` naming the column and the row.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from lstm_data.errors import SchemaError

__all__ = ["jagged_prefix", "plan_groups", "check_equal_lengths"]

_SEPARATOR = re.compile(r"[._]")


def jagged_prefix(name: str) -> str:
    """The group a jagged column named ``name`` joins by default: the name before its first ``_`` or ``.``."""
    head = _SEPARATOR.split(name, maxsplit=1)[0]
    return head or name


def plan_groups(schema: Any, scalar_names: Sequence[str], jagged_names: Sequence[str],
                keys: Mapping[str, str], *, file: str | None = None
                ) -> tuple[dict[str, list[str]], list[str], np.dtype | None]:
    """Groups, scalars and dtype of a source whose jagged columns carry no declared groups.

    Parameters
    ----------
    schema
        ``None``, a :class:`~lstm_data.io.schema.Schema`, a TOML path or a mapping.
    scalar_names, jagged_names
        The source's flat and jagged numeric columns, in source order.
    keys
        Jagged column -> the group its source puts it in (counter or record field);
        columns not in ``keys`` group by :func:`jagged_prefix`.

    Returns
    -------
    groups : dict
        Group -> its columns, in source order (declared groups: declared order).
    scalars : list of str
        The schema's scalars, or every flat column.
    dtype : numpy dtype or None
        The schema's dtype; ``None`` without a schema.

    Raises
    ------
    SchemaError
        A declared name is not a column, or a declared group member is not jagged.
    """
    from lstm_data.io.schema import Schema

    parsed = Schema.coerce(schema)
    declared: dict[str, list[str]] = {}
    scalars: list[str] | None = None
    dtype = None
    if parsed is not None:
        try:
            declared, scalars = parsed.resolve(list(scalar_names) + list(jagged_names))
        except SchemaError as exc:
            raise exc.located(file=file) from None
        dtype = parsed.dtype
    jagged_set = set(jagged_names)
    for g, names in declared.items():
        for v in names:
            if v not in jagged_set:
                raise SchemaError(f"declared variable {v!r} of group {g!r} is not a jagged "
                                  "(variable-length) column", file=file, variable=v)
    groups = {g: list(v) for g, v in declared.items()}
    used = {v for vs in groups.values() for v in vs}
    for v in jagged_names:
        if v in used:
            continue
        g = keys.get(v) or jagged_prefix(v)
        if g not in declared:
            groups.setdefault(g, []).append(v)
    return groups, list(scalar_names if scalars is None else scalars), dtype


def check_equal_lengths(group: str, lengths: Mapping[str, np.ndarray], *, first_row: int = 0,
                        file: str | None = None, row_word: str = "row", where: str = "",
                        hint: str = "declare them in different groups with a schema") -> None:
    """Raise unless every column of ``group`` has the same length in every row.

    Parameters
    ----------
    lengths
        Column -> per-row lengths of the rows ``first_row, first_row + 1, ...``.
    row_word, where
        How the message names a row (``"entry"`` for ROOT) and the source (``"tree 'Events': "``).

    Raises
    ------
    SchemaError
        Names the group, both columns, their lengths and the first differing row.
    """
    names = list(lengths)
    ref = lengths[names[0]]
    for v in names[1:]:
        bad = np.flatnonzero(lengths[v] != ref)
        if len(bad):
            i = int(bad[0])
            row = first_row + i
            raise SchemaError(
                f"{where}group {group!r}: {v!r} has {int(lengths[v][i])} values but {names[0]!r} has "
                f"{int(ref[i])} in {row_word} {row}; {hint}", file=file, row=row, variable=v)


def split_by_lengths(group: str, lengths: Mapping[str, np.ndarray],
                     taken: Iterable[str] = ()) -> dict[str, list[str]]:
    """An inferred group cut into sub-groups whose columns have equal lengths in every row.

    The columns with the first column's lengths keep the name ``group``; each other
    set of equal lengths is a group named after its first column (made unique
    against ``taken``). Columns of one source are often of different collections
    (``EventInfoAuxDyn.mcEventWeights`` and ``EventInfoAuxDyn.subEventTime``): when
    nothing says they belong together, equal lengths do.

    Parameters
    ----------
    lengths
        Column -> per-row lengths (same number of rows), in column order.
    taken
        Names already used by other groups or columns.
    """
    out: dict[str, list[str]] = {}
    refs: list[tuple[str, np.ndarray]] = []
    used = set(taken) - {group}
    for v, lens in lengths.items():
        for name, ref in refs:
            if ref is lens or np.array_equal(ref, lens):
                out[name].append(v)
                break
        else:
            name = group if not refs else v
            k = 2
            while name in used or name in out:
                name, k = f"{v}#{k}", k + 1
            refs.append((name, lens))
            out[name] = [v]
    return out
