"""Plain list columns grouped by their lengths (the rule of :mod:`lstm_data.io.columns.groups`).

The public jet datasets' Parquet files (``ak.to_parquet`` of ``part_px``, ``part_py``,
... each a ``large_list<float>`` with its own offsets) hold one list column per
particle variable. Columns of one prefix are one group when their lengths are equal
in every row, which is decided before any value block is written, from:

* the files' metadata: a list column's ``num_values`` in a row group counts its values
  plus one per empty list, so columns of equal lengths have equal ``num_values`` in
  every row group of every file; a difference anywhere keeps them apart, in every
  file alike;
* the offsets of the first rows read (the first streamed batch of the first file, or
  the whole table given to :func:`~lstm_data.io.parquet.from_arrow`).

Every later batch or row group is checked as it is read (its offsets compared, no
value looked at): columns grouped by the first rows whose lengths differ further on
are a :class:`~lstm_data.errors.SchemaError` naming the file, both columns and the
first row where they differ. A file is never read into wrong groups; a schema
settles such files (``schema={"groups": {"part": "part_*"}}`` or one group per column).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from lstm_data.io.columns.groups import settle
from lstm_data.io.parquet.columns import leaf_index, list_lengths
from lstm_data.io.parquet.plan import VALUES, ColumnPlan

__all__ = ["settle_plan", "metadata_counts"]


def metadata_counts(sources: list[Any], plan: ColumnPlan) -> dict[str, np.ndarray]:
    """Free variable -> ``num_values`` of its list column in every row group of ``sources``.

    Only plain top-level ``list<number>`` columns are given (for the others the
    metadata counts something else).
    """
    out: dict[str, np.ndarray] = {}
    if not sources:
        return out
    plain = {v: plan.source(v)[0] for v in plan.free if plan.source(v)[1] in ((), (VALUES,))}
    per: dict[str, list[int]] = {v: [] for v in plain}
    for s in sources:
        leaf, md = leaf_index(s.schema), s.metadata
        for rg in range(md.num_row_groups):
            meta = md.row_group(rg)
            for v, arrow in plain.items():
                per[v].append(int(meta.column(leaf[arrow]).num_values))
    return {v: np.asarray(n, dtype=np.int64) for v, n in per.items()}


def settle_plan(plan: ColumnPlan, table: Any, *, sources: list[Any] | None = None, where: str = "",
                first_row: int = 0) -> ColumnPlan:
    """``plan`` with its buckets of free list columns cut into groups of equal lengths.

    Parameters
    ----------
    table
        A ``pyarrow.Table`` or ``RecordBatch`` holding the plan's list columns for the
        first rows (``None``: no rows).
    sources
        The open files (:class:`~lstm_data.io.parquet.read.ParquetSource`): their
        metadata must agree too.
    where
        How the hint of a group formed here names those rows (``"rows 0-4095 of f.parquet"``).
    """
    if plan.settled:
        return plan
    counts = metadata_counts(sources or [], plan)
    taken = set(plan.scalars) | set(plan.groups)
    lengths_of: dict[tuple[Any, ...], np.ndarray] = {}
    groups: dict[str, list[str]] = {}
    hints: dict[str, str] = {}
    for g, names in plan.groups.items():
        if not plan.inferred(g):
            groups[g] = names
            continue
        signature = {}
        for v in names:
            arrow, steps = plan.source(v)
            key = (arrow,) + steps[:steps.index(VALUES)] if VALUES in steps else (arrow,)
            if key not in lengths_of:
                lengths_of[key] = list_lengths(plan.list_source(table, v)[0]) if table is not None \
                    else np.zeros(0, np.int64)
            signature[v] = lengths_of[key]
        if all(v in counts for v in names):  # the metadata of every row group must agree too
            signature = {v: np.concatenate([s, counts[v]]) for v, s in signature.items()}
        parts = settle(g, signature, keep=plan.keyed(g), taken=(taken - {g}) | set(groups))
        for p, members in parts.items():
            groups[p] = members
            if len(members) > 1:
                hints[p] = (f"{_short(members)} were read as one group because their lengths are equal in "
                            f"{where or 'the rows read first'} and their value counts in every row group; "
                            "declare the groups with a schema")
    return plan.settled_with(groups, hints)


def _short(names: list[str], keep: int = 3) -> str:
    shown = ", ".join(repr(n) for n in names[:keep])
    return shown + (f" and {len(names) - keep} more" if len(names) > keep else "")
