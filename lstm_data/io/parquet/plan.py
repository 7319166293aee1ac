"""Which Arrow columns to read, as which output columns, grouped, and which are skipped.

What each Arrow type gives:

=====================================================  ===========================================
Arrow type                                             columns
=====================================================  ===========================================
float, integer, bool                                   a scalar column
``fixed_size_list<number, k>``                          scalars ``name[0]`` ... ``name[k-1]``
``list<number>`` / ``large_list<number>``               a prong variable (groups by the prefix
                                                       before the first ``.``)
``list<fixed_size_list<number, k>>``                    prong variables ``name[0]`` ...
                                                       ``name[k-1]`` of group ``name``'s prefix
anything else: strings, binary, timestamps, dates,      skipped: listed in ``skipped`` (name ->
decimals, dictionaries, structs, maps, lists of lists   type and why) and logged once
=====================================================  ===========================================

``columns`` and ``exclude`` (names or globs, see :mod:`lstm_data.io.column_select`) choose
what is read among these, matched against the output name, and for an element
``name[j]`` also its Arrow column ``name``; only the chosen Arrow columns are read and
decompressed. Naming a skipped column exactly in ``columns`` is a ``SchemaError`` that
says what it holds.
"""
from __future__ import annotations

import glob
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from lstm_data.errors import FormatError, SchemaError
from lstm_data.io.column_groups import group_prefix, resolve_schema
from lstm_data.io.column_select import ColumnSelection
from lstm_data.io.exact_ints import ExactInts
from lstm_data.io.layout import value_dtype
from lstm_data.io.parquet.columns import PANDAS_INDEX, is_list, numeric, recorded_groups

__all__ = ["ColumnPlan", "plan_columns", "column_kind", "describe_skipped"]


def column_kind(t: Any) -> tuple[str | None, int | None, Any, str | None]:
    """``(kind, width, element type, why skipped)`` of an Arrow type.

    ``kind`` is ``"scalar"`` or ``"ragged"`` (``None`` when skipped); ``width`` is
    ``k`` of a ``fixed_size_list`` of numbers (``None`` otherwise).
    """
    import pyarrow as pa

    def fixed(u: Any) -> bool:
        return pa.types.is_fixed_size_list(u)

    if numeric(t):
        return "scalar", None, t, None
    if fixed(t):
        if numeric(t.value_type):
            return "scalar", t.list_size, t.value_type, None
        return None, None, None, f"{t}: fixed-size lists of {t.value_type}, not numbers"
    if is_list(t):
        inner = t.value_type
        if numeric(inner):
            return "ragged", None, inner, None
        if fixed(inner) and numeric(inner.value_type):
            return "ragged", inner.list_size, inner.value_type, None
        if is_list(inner) or fixed(inner):
            return None, None, None, f"{t}: lists of lists (a row level cannot be chosen)"
        return None, None, None, f"{t}: lists of {inner}, not numbers"
    return None, None, None, f"{t}: not numbers"


def describe_skipped(skipped: dict[str, str], limit: int = 6) -> str:
    """``'name' (string: not numbers), ...`` for the first ``limit`` skipped columns."""
    items = [f"{k!r} ({v})" for k, v in list(skipped.items())[:limit]]
    more = f" and {len(skipped) - limit} more" if len(skipped) > limit else ""
    return ", ".join(items) + more


@dataclass
class ColumnPlan:
    """The columns to read and the dtypes they become.

    Attributes
    ----------
    scalars : list of str
    groups : dict
        Group -> its prong variables, in values order.
    group_dtypes : dict
        Group -> dtype of its values block: the ``dtype`` asked for, else float32 when
        every column converts exactly to float32 (float16/32, small integers), else float64.
    dtype : numpy dtype or None
        The ``dtype`` asked for (scalars too); ``None`` keeps the file's.
    sources : dict
        Output column -> ``(Arrow column, element)``; ``element`` is the index inside a
        fixed-size list, else ``None``.
    skipped : dict
        Arrow column -> its type and why it is not read (not numbers).
    exact : ExactInts
        Warns once per column about integers that a float dtype changes.
    """

    scalars: list[str]
    groups: dict[str, list[str]]
    group_dtypes: dict[str, np.dtype]
    dtype: np.dtype | None
    sources: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    exact: ExactInts = field(default_factory=lambda: ExactInts(None))

    @property
    def columns(self) -> list[str]:
        """Every Arrow column to read, once each: scalars' first, then the groups'."""
        outputs = self.scalars + [v for names in self.groups.values() for v in names]
        return list(dict.fromkeys(self.source(v)[0] for v in outputs))

    def source(self, name: str) -> tuple[str, int | None]:
        """``(Arrow column, element or None)`` of output column ``name``."""
        return self.sources.get(name, (name, None))

    def column(self, table: Any, name: str) -> Any:
        """Output scalar ``name`` of a ``pyarrow.Table`` or ``RecordBatch`` (an element of a
        fixed-size list taken out, nulls kept)."""
        arrow, element = self.source(name)
        col = table.column(arrow)
        if element is None:
            return col
        import pyarrow.compute as pc
        return pc.list_element(col, element)


def plan_columns(arrow_schema: Any, schema: Any = None, dtype: Any = None, *,
                 file: str | None = None, columns: Sequence[str] | str | None = None,
                 exclude: Sequence[str] | str | None = None) -> ColumnPlan:
    """Which columns of ``arrow_schema`` to read, grouped, and as which dtypes (see the module).

    List columns group by the prefix before their first ``.`` (``png.calE`` -> ``png``)
    unless ``schema`` declares the groups, or the table records them (written by
    :func:`~lstm_data.io.parquet.to_arrow`). The unnamed index that pandas stores
    (``__index_level_0__``) is not read.

    Raises
    ------
    FormatError
        Two columns share a name; nothing numeric to read (lists what was skipped).
    SchemaError
        A declared name is not a column (or is skipped: says why), a declared group
        variable is not a list, a ``columns`` pattern matches no column.
    ValueError
        ``dtype`` is not float32 or float64.
    """
    names = [n for n in arrow_schema.names if not PANDAS_INDEX.fullmatch(n)]
    types = {f.name: f.type for f in arrow_schema}
    selection = ColumnSelection(columns, exclude)
    sources: dict[str, tuple[str, int | None]] = {}
    elements: dict[str, Any] = {}
    keys: dict[str, str] = {}
    scalar_names: list[str] = []
    ragged_names: list[str] = []
    skipped: dict[str, str] = {}
    outputs: list[str] = []
    for n in names:
        kind, width, element, why = column_kind(types[n])
        if kind is None:
            if selection.wants(n):
                skipped[n] = why or "not numbers"
            continue
        for j in (range(width) if width is not None else [None]):
            out = n if j is None else f"{n}[{j}]"
            outputs.append(out)
            if not selection.wants(out, n if j is not None else group_prefix(n)):
                continue
            sources[out], elements[out] = (n, j), element
            if kind == "ragged":
                ragged_names.append(out)
                keys[out] = group_prefix(n)
            else:
                scalar_names.append(out)
    _check_unique(outputs + list(skipped), file)
    selection.check_all_used(outputs + list(skipped), file=file)
    named = [p for p in (selection.columns or ()) if p in skipped and not glob.has_magic(p)]
    if named:
        raise SchemaError(f"column {named[0]!r} cannot be read: it holds {skipped[named[0]]}",
                          file=file, variable=named[0])
    recorded = recorded_groups(arrow_schema, ragged_names) if schema is None else None
    declared = {"groups": recorded} if recorded else schema
    try:
        groups, scalars, schema_dtype = resolve_schema(declared, scalar_names, ragged_names, file=file,
                                                       keys=keys)
    except SchemaError as exc:
        if exc.variable in skipped:
            raise SchemaError(f"{exc.variable!r} cannot be read: it holds {skipped[exc.variable]}",
                              file=file, variable=exc.variable) from None
        raise
    if recorded:
        schema_dtype = None  # the recorded groups say nothing about dtypes: keep the file's
    dt = value_dtype(dtype if dtype is not None else schema_dtype, file=str(file))
    if not scalars and not groups:
        what = f"; skipped {describe_skipped(skipped)}" if skipped else ""
        raise FormatError(f"no numeric column to read{what}", file=file)
    group_dtypes = {}
    for g, members in groups.items():
        value_types = [np.dtype(elements[v].to_pandas_dtype()) for v in members]
        group_dtypes[g] = dt if dt is not None else np.result_type(np.float32, *value_types)
    used = set(scalars) | {v for vs in groups.values() for v in vs}
    return ColumnPlan(list(scalars), groups, group_dtypes, dt,
                      {v: s for v, s in sources.items() if v in used and s[1] is not None}, skipped,
                      ExactInts(file))


def _check_unique(names: list[str], file: str | None) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise FormatError(f"two columns are named {n!r}", file=file, variable=n)
        seen.add(n)
