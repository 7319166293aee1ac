"""``Ragged(empty=...)`` applied: rows whose ragged group has no elements kept, given one step, or dropped.

What each rule means is declared, and documented, in :mod:`lstm_data.batching.spec.empty`. Here
``"drop"`` removes such rows from a view's rows, and ``"one_step"`` gives them one padded step
that counts as an element in each built batch. Other rows are never changed.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np


__all__ = ["drop_empty_rows", "OneStep", "make_one_step", "step_lengths"]

ResolvedField = Any  # lstm_data.batching.spec.outputs.ResolvedField
Arrays = dict[str, np.ndarray]


def _empty_of(f: ResolvedField) -> str:
    return str(getattr(f.field, "empty", "keep"))


def drop_empty_rows(fields: Sequence[ResolvedField], dataset: Any, view: np.ndarray | None) -> np.ndarray | None:
    """``view`` (or all ``n_rows`` rows) without the rows that a ``"drop"`` field's group has empty.

    Parameters
    ----------
    fields
        The spec's fields mapped onto the dataset.
    dataset
        The dataset they are mapped onto.
    view
        The rows in use (a view of ``dataset``), in their order, or ``None`` for all.

    Returns
    -------
    numpy.ndarray or None
        The rows kept, in the same order (``view`` itself when no field drops).
    """
    groups = list(dict.fromkeys(f.group for f in fields if f.group is not None and _empty_of(f) == "drop"))
    if not groups:
        return view
    n_rows = len(dataset)
    keep = np.ones(n_rows, dtype=bool)
    for group in groups:
        offsets = dataset.offsets(group) if hasattr(dataset, "offsets") else dataset.ragged(group)[1]
        keep &= np.diff(np.asarray(offsets)) > 0
    rows = np.arange(n_rows, dtype=np.intp) if view is None else view
    out: np.ndarray = rows[keep[rows]]
    return out


def step_lengths(field: Any, lengths: np.ndarray) -> np.ndarray:
    """Row lengths as a batch of ``field`` counts them: at least 1 with ``empty="one_step"``.

    Parameters
    ----------
    field
        A ``Ragged`` field.
    lengths
        The rows' element counts.

    Returns
    -------
    numpy.ndarray
        ``lengths``, or ``max(lengths, 1)``.
    """
    if getattr(field, "empty", "keep") == "one_step":
        raised: np.ndarray = np.maximum(lengths, 1)
        return raised
    return lengths


def _pad_values(f: ResolvedField, nan_to: float | None) -> np.ndarray:
    """The values of one padded step of field ``f`` (V,), as the builder fills padding (its form's fill)."""
    spec = f.field
    return np.array(spec.form.fill(spec, nan_to if f.role == "input" else None), dtype=spec.np_dtype)


class OneStep:
    """Gives the empty rows of ``"one_step"`` fields their one padded step, after a batch is built.

    Parameters
    ----------
    fields
        The ``"one_step"`` fields (mapped onto the dataset).
    row_lengths
        Group name -> every dataset row's element count.
    nan_to
        The spec's ``nan_to``.
    width
        ``(field, longest)`` -> the padded width of a batch whose longest row has
        ``longest`` elements (the ``Batches``' rule): the width of a batch of
        empty rows only, whose longest row is the padded step.
    """

    def __init__(self, fields: Sequence[ResolvedField], row_lengths: Any, nan_to: float | None,
                 width: Any = None) -> None:
        self.fields = list(fields)
        self.row_lengths = row_lengths
        self.width = width
        self.pads = {f.name: _pad_values(f, nan_to) for f in self.fields}

    def __getstate__(self) -> dict[str, Any]:
        return {}  # holds the builder's tables: the owning Batches makes a new one after unpickling

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.fields, self.row_lengths, self.pads, self.width = [], None, {}, None

    def apply(self, inputs: Arrays, targets: Arrays, rows: np.ndarray) -> None:
        """Change the outputs of the batch of ``rows`` in place (arrays replaced where they grow).

        Parameters
        ----------
        inputs, targets
            The built batch's dicts.
        rows
            Its dataset rows, in batch order.
        """
        for f in self.fields:
            dest = inputs if f.role == "input" else targets
            empty = np.asarray(self.row_lengths(f.group))[rows] == 0
            if not empty.any():
                continue
            if not f.field.form.has_slots:
                self._packed(f, dest, empty)
            else:
                self._padded(f, dest, empty)
            lname = f.name + "_lengths"
            if lname in dest:
                dest[lname] = np.maximum(dest[lname], 1).astype(dest[lname].dtype, copy=False)

    def _padded(self, f: ResolvedField, dest: Arrays, empty: np.ndarray) -> None:
        form = f.field.form
        arr = dest[f.name]
        width = form.width(arr)
        if width == 0:  # a batch of empty rows only: its longest row is the padded step
            width = 1 if self.width is None else int(self.width(f, 1))
            b, v = len(empty), len(f.field.vars)
            dest[f.name] = form.from_rows(np.broadcast_to(self.pads[f.name], (b, width, v)))
        mname = f.name + "_mask"
        if mname in dest:
            mask = dest[mname]
            if mask.shape[1] != width:
                mask = np.zeros((mask.shape[0], width), dtype=bool)
            slot = width - 1 if getattr(f.field, "padding", "post") == "pre" else 0
            mask[empty, slot] = True
            dest[mname] = mask

    def _packed(self, f: ResolvedField, dest: Arrays, empty: np.ndarray) -> None:
        cu_name, max_name = f.name + "_cu_seqlens", f.name + "_max_seqlen"
        values, cu = dest[f.name], dest[cu_name]
        at = cu[:-1][empty].astype(np.intp)
        dest[f.name] = np.insert(values, at, self.pads[f.name], axis=0)
        added = np.zeros(len(cu), dtype=np.int64)
        added[1:] = np.cumsum(empty)
        dest[cu_name] = (cu + added).astype(cu.dtype)
        dest[max_name] = np.asarray(max(int(dest[max_name]), 1), dtype=dest[max_name].dtype)


def make_one_step(fields: Sequence[ResolvedField], row_lengths: Any, nan_to: float | None,
                  width: Any = None) -> OneStep | None:
    """The :class:`OneStep` of the ``"one_step"`` fields, or ``None`` when there are none."""
    chosen = [f for f in fields if f.group is not None and _empty_of(f) == "one_step"]
    return OneStep(chosen, row_lengths, nan_to, width) if chosen else None

