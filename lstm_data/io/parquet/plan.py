"""Which Arrow columns to read, as which output columns, grouped, and which are skipped.

What each Arrow type gives:

=====================================================  ===========================================
Arrow type                                             columns
=====================================================  ===========================================
float, integer, bool                                   a scalar column
``fixed_size_list<number, k>``                          scalars ``name[0]`` ... ``name[k-1]``
``list<number>`` / ``large_list<number>``               a prong variable (grouped by its lengths,
                                                       see below)
``list<fixed_size_list<number, k>>``                    prong variables ``name[0]`` ...
                                                       ``name[k-1]`` (one list: grouped as one)
``struct<a: number, ...>``                              scalars ``name.a`` ... (nested: ``name.a.b``)
``list<struct<a: number, ...>>``                        prong variables ``name.a`` ... of group ``name``
anything else: strings, binary, timestamps, dates,      skipped: listed in ``skipped`` (name ->
decimals, dictionaries, maps, lists of lists            type and why) and logged once
(also a struct's fields of these types)
=====================================================  ===========================================

``columns`` and ``exclude`` (names or globs, see :mod:`lstm_data.io.columns.select`) choose
what is read among these, matched against the output name, and for an element
``name[j]`` also its Arrow column ``name``; only the chosen Arrow columns are read and
decompressed. Naming a skipped column exactly in ``columns`` is a ``SchemaError`` that
says what it holds.

Groups: a list of structs is one group (named after the list); the groups a file of
ours records, or a schema declares, are taken as they are; the other list columns
are grouped by their lengths, the rule of every reader
(:mod:`lstm_data.io.columns.groups`): :func:`plan_columns` puts them in buckets by
prefix, :func:`lstm_data.io.parquet.grouping.settle_plan` cuts the buckets once the
lengths are known.
"""
from __future__ import annotations

import glob
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from lstm_data.errors import FormatError, SchemaError
from lstm_data.io.columns.groups import DECLARE_HINT, group_prefix, plan_groups
from lstm_data.io.columns.select import ColumnSelection
from lstm_data.io.columns.exact_ints import ExactInts
from lstm_data.io.ours.layout import value_dtype
from lstm_data.io.parquet.columns import PANDAS_INDEX, Step, apply_steps, is_list, numeric, recorded_groups

#: the step into a list's values: what follows applies to them
VALUES: Step = ("values", 0)

__all__ = ["ColumnPlan", "plan_columns", "leaves", "apply_steps", "describe_skipped"]


@dataclass
class Leaf:
    """One output column of an Arrow column: its name, kind, steps and value type."""

    name: str
    ragged: bool
    steps: tuple[Step, ...]
    type: Any
    #: a prong variable: the name of the list it comes from
    list_name: str = ""


def leaves(name: str, t: Any) -> tuple[list[Leaf], dict[str, str]]:
    """The output columns of Arrow column ``name`` of type ``t``, and what is skipped in it.

    Numbers are a scalar; a fixed-size list of numbers one scalar per element
    (``name[j]``); a struct one column per field (``name.field``, nested:
    ``name.a.b``); a list of any of these prong variables (the steps then apply
    to the list's values).
    """
    out: list[Leaf] = []
    skipped: dict[str, tuple[Any, str]] = {}
    _walk(name, t, (), False, out, skipped)
    return out, {k: f"{t if k == name else u}: {why}" for k, (u, why) in skipped.items()}


def _walk(name: str, t: Any, steps: tuple[Step, ...], ragged: bool, out: list[Leaf],
          skipped: dict[str, tuple[Any, str]]) -> None:
    import pyarrow as pa

    if numeric(t):
        out.append(Leaf(name, ragged, steps, t))
    elif pa.types.is_fixed_size_list(t) and numeric(t.value_type):
        out.extend(Leaf(f"{name}[{j}]", ragged, steps + (("element", j),), t.value_type)
                   for j in range(t.list_size))
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            f = t.field(i)
            _walk(f"{name}.{f.name}", f.type, steps + (("field", i),), ragged, out, skipped)
    elif is_list(t) and not ragged:  # the steps after ("values", 0) apply to the list's values
        n = len(out)
        _walk(name, t.value_type, steps + (VALUES,), True, out, skipped)
        for leaf in out[n:]:
            leaf.list_name = name
    elif is_list(t) or pa.types.is_fixed_size_list(t):
        nested = ragged or is_list(t.value_type) or pa.types.is_fixed_size_list(t.value_type)
        skipped[name] = (t, "lists of lists (a row level cannot be chosen)" if nested else "not numbers")
    else:
        skipped[name] = (t, f"{'lists of ' + str(t) if ragged else 'not numbers'}"
                         + (", not numbers" if ragged else ""))


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
        Output column -> ``(Arrow column, steps)``: the struct fields and fixed-size
        list elements to take (from the column, or from a list column's values).
    skipped : dict
        Arrow column -> its type and why it is not read (not numbers).
    exact : ExactInts
        Warns once per column about integers that a float dtype changes.
    value_types : dict
        Prong variable -> the dtype of its values in the file.
    declared : set of str
        Groups a schema declares (or the file records): never cut.
    free : set of str
        Prong variables grouped by their lengths (plain list columns).
    hints : dict
        Group -> what an error about its lengths tells the user (groups formed
        by equal lengths say from which rows).
    settled : bool
        Whether the free variables' groups are known (:meth:`settled_with`).
    """

    scalars: list[str]
    groups: dict[str, list[str]]
    group_dtypes: dict[str, np.dtype]
    dtype: np.dtype | None
    sources: dict[str, tuple[str, tuple[Step, ...]]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    exact: ExactInts = field(default_factory=lambda: ExactInts(None))
    value_types: dict[str, np.dtype] = field(default_factory=dict)
    declared: set[str] = field(default_factory=set)
    free: set[str] = field(default_factory=set)
    hints: dict[str, str] = field(default_factory=dict)
    settled: bool = True

    def inferred(self, group: str) -> bool:
        """Whether ``group`` holds free variables (before :meth:`settled_with`: a bucket to cut)."""
        return group not in self.declared and any(v in self.free for v in self.groups[group])

    def keyed(self, group: str) -> bool:
        """Whether ``group`` holds a variable of a list of structs (it keeps its name when cut)."""
        return any(v not in self.free for v in self.groups[group])

    def hint(self, group: str) -> str:
        """What an error about the lengths of ``group`` tells the user to do."""
        return self.hints.get(group, DECLARE_HINT)

    def settled_with(self, groups: dict[str, list[str]], hints: dict[str, str]) -> "ColumnPlan":
        """This plan with the groups found from the lengths (same variables), their dtypes
        by the rule of :func:`plan_columns`."""
        return replace(self, groups=groups, group_dtypes={g: _group_dtype(self.dtype, self.value_types, vs)
                                                          for g, vs in groups.items()},
                       hints=dict(hints), settled=True)

    @property
    def columns(self) -> list[str]:
        """Every Arrow column to read, once each: scalars' first, then the groups'."""
        outputs = self.scalars + [v for names in self.groups.values() for v in names]
        return list(dict.fromkeys(self.source(v)[0] for v in outputs))

    def source(self, name: str) -> tuple[str, tuple[Step, ...]]:
        """``(Arrow column, steps)`` of output column ``name``."""
        return self.sources.get(name, (name, ()))

    def list_source(self, table: Any, name: str) -> tuple[Any, tuple[Step, ...]]:
        """Prong variable ``name``: its list array in a ``pyarrow.Table`` or ``RecordBatch``
        (struct fields above the list taken out) and the steps to apply to the list's values."""
        arrow, steps = self.source(name)
        if VALUES not in steps:
            return table.column(arrow), ()
        k = steps.index(VALUES)
        return apply_steps(table.column(arrow), steps[:k]), steps[k + 1:]

    def column(self, table: Any, name: str) -> Any:
        """Output scalar ``name`` of a ``pyarrow.Table`` or ``RecordBatch`` (struct fields and
        fixed-size list elements taken out, parents' nulls kept)."""
        arrow, steps = self.source(name)
        return apply_steps(table.column(arrow), steps)


def plan_columns(arrow_schema: Any, schema: Any = None, dtype: Any = None, *,
                 file: str | None = None, columns: Sequence[str] | str | None = None,
                 exclude: Sequence[str] | str | None = None) -> ColumnPlan:
    """Which columns of ``arrow_schema`` to read, grouped, and as which dtypes (see the module).

    List columns are put in buckets by prefix (``part_px`` -> ``part``), to be cut by
    their lengths (:func:`~lstm_data.io.parquet.grouping.settle_plan`: the plan is not
    ``settled`` until then), unless ``schema`` declares the groups, or the table
    records them (written by :func:`~lstm_data.io.parquet.to_arrow`); a list of structs
    is one group. The unnamed index that pandas stores (``__index_level_0__``) is not
    read.

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
    sources: dict[str, tuple[str, tuple[Step, ...]]] = {}
    elements: dict[str, Any] = {}
    keys: dict[str, str] = {}
    scalar_names: list[str] = []
    ragged_names: list[str] = []
    skipped: dict[str, str] = {}
    outputs: list[str] = []
    for n in names:
        found, why = leaves(n, types[n])
        skipped.update({k: v for k, v in why.items() if selection.wants(k, n)})
        for leaf in found:
            out = leaf.name
            outputs.append(out)
            if not selection.wants(out, n if out != n else group_prefix(n)):
                continue
            sources[out], elements[out] = (n, leaf.steps), leaf.type
            if leaf.ragged:
                ragged_names.append(out)
                # a list of structs is one group; a list of numbers (or fixed-size lists) is grouped by lengths
                if any(k == "field" for k, _ in leaf.steps[leaf.steps.index(VALUES):]):
                    keys[out] = leaf.list_name
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
        planned = plan_groups(declared, scalar_names, ragged_names, keys, file=file)
    except SchemaError as exc:
        if exc.variable in skipped:
            raise SchemaError(f"{exc.variable!r} cannot be read: it holds {skipped[exc.variable]}",
                              file=file, variable=exc.variable) from None
        raise
    groups, scalars = planned.groups, planned.scalars
    schema_dtype = None if recorded else planned.dtype  # recorded groups say nothing of dtypes: keep the file's
    dt = value_dtype(dtype if dtype is not None else schema_dtype, file=str(file))
    if not scalars and not groups:
        what = f"; skipped {describe_skipped(skipped)}" if skipped else ""
        raise FormatError(f"no numeric column to read{what}", file=file)
    value_types = {v: np.dtype(elements[v].to_pandas_dtype()) for vs in groups.values() for v in vs}
    group_dtypes = {g: _group_dtype(dt, value_types, members) for g, members in groups.items()}
    used = set(scalars) | {v for vs in groups.values() for v in vs}
    plan = ColumnPlan(list(scalars), groups, group_dtypes, dt,
                      {v: s for v, s in sources.items() if v in used and (s[1] or s[0] != v)}, skipped,
                      ExactInts(file), value_types, planned.declared, planned.free & used)
    plan.settled = not any(plan.inferred(g) for g in groups)
    return plan


def _group_dtype(dt: np.dtype | None, value_types: dict[str, np.dtype], members: list[str]) -> np.dtype:
    """The dtype asked for, else float32 when every member converts exactly to it, else float64."""
    return dt if dt is not None else np.result_type(np.float32, *[value_types[v] for v in members])


def _check_unique(names: list[str], file: str | None) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise FormatError(f"two columns are named {n!r}", file=file, variable=n)
        seen.add(n)
