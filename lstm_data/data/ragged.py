"""Columnar containers: the in-RAM form every reader produces."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from lstm_data.errors import SchemaError

__all__ = ["RaggedGroup", "check_offsets", "take_ragged", "put_ragged", "lengths_of", "count_mismatch"]


def check_offsets(offsets: np.ndarray, total: int, *, name: str = "offsets") -> np.ndarray:
    """Validate a full offsets array and return it as int64.

    Raises
    ------
    SchemaError
        Not 1-D, ``offsets[0] != 0``, decreasing, or ``offsets[-1] != total``.
    """
    off = np.asarray(offsets)
    if off.ndim != 1 or len(off) < 1 or off.dtype.kind not in "iu":
        raise SchemaError(f"{name} must be a 1-D integer array, got {off.dtype} {off.shape}")
    off = off.astype(np.int64, copy=False)
    if off[0] != 0:
        raise SchemaError(f"{name}[0] must be 0, got {off[0]}")
    if len(off) > 1:
        bad = np.flatnonzero(np.diff(off) < 0)
        if len(bad):
            raise SchemaError(f"{name} decrease at row {bad[0]}", row=int(bad[0]))
    if off[-1] != total:
        raise SchemaError(f"{name}[-1] is {off[-1]} but there are {total} values")
    return off


def lengths_of(offsets: np.ndarray) -> np.ndarray:
    """Per-row lengths (int64) of an offsets array."""
    return np.diff(offsets).astype(np.int64, copy=False)


def count_mismatch(offsets: Callable[[str], np.ndarray], groups: Sequence[str]) -> str:
    """Why prong variables of ``groups`` cannot be used as one group, for an error message.

    Parameters
    ----------
    offsets
        Group -> its offsets (e.g. ``Dataset.offsets``).
    groups
        Two or more group names.

    Returns
    -------
    str
        ``"different prong counts per row: 'a' has 3 and 'b' has 2 in row 7"`` for the
        first row where two of them differ, or, when every row has the same counts,
        that they are separate groups all the same (declared or read apart) and how to
        make them one.
    """
    first = groups[0]
    ref = lengths_of(offsets(first))
    for other in groups[1:]:
        lens = lengths_of(offsets(other))
        bad = np.flatnonzero(lens != ref)
        if len(bad):
            row = int(bad[0])
            return (f"different prong counts per row: {first!r} has {int(ref[row])} and {other!r} has "
                    f"{int(lens[row])} in row {row}")
    return ("their prong counts are equal in every row, but they were read as separate groups "
            "(a schema, or the file, keeps them apart): declare them in one group with a schema")


def take_ragged(values: np.ndarray, offsets: np.ndarray,
                rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gather ragged ``rows`` (any order, repeats allowed) into new compact arrays.

    Returns
    -------
    values : ndarray, shape ``(sum of lengths, V)``
    offsets : ndarray of int64, shape ``(len(rows) + 1,)``
    """
    rows = np.asarray(rows, dtype=np.intp)
    starts = offsets[rows]
    lens = offsets[rows + 1] - starts
    new_off = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lens, out=new_off[1:])
    total = int(new_off[-1])
    if total == 0:
        return values[:0].copy(), new_off
    idx = np.arange(total, dtype=np.int64) + np.repeat(starts - new_off[:-1], lens)
    return values[idx], new_off


def put_ragged(values: np.ndarray, offsets: np.ndarray, rows: np.ndarray, block: np.ndarray,
               block_offsets: np.ndarray) -> None:
    """Write the compact ragged ``block`` (``block_offsets``, one row per entry of ``rows``)
    into rows ``rows`` of ``values`` (laid out by ``offsets``): :func:`take_ragged` reversed.

    Rows that follow one another are one slice assignment.
    """
    if not len(block):
        return
    if int(rows[-1]) - int(rows[0]) == len(rows) - 1 and bool(np.all(np.diff(rows) == 1)):
        lo = int(offsets[rows[0]])
        values[lo:lo + len(block)] = block
        return
    lens = np.diff(block_offsets)
    dst = np.repeat(offsets[rows] - block_offsets[:-1], lens) + np.arange(len(block), dtype=np.int64)
    values[dst] = block


@dataclass
class RaggedGroup:
    """Prong variables that share one length per row.

    Attributes
    ----------
    names : list of str
        Variable names, in column order of ``values``.
    values : ndarray, shape ``(total, V)``
        One record per prong, all V variables side by side (interleaved).
    offsets : ndarray of int64, shape ``(N + 1,)``
    """

    names: list[str]
    values: np.ndarray
    offsets: np.ndarray
    attrs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.names = list(self.names)
        if self.values.ndim != 2 or self.values.shape[1] != len(self.names):
            raise SchemaError(
                f"values of shape {self.values.shape} do not match {len(self.names)} variables")
        self.offsets = check_offsets(self.offsets, len(self.values))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return lengths_of(self.offsets)

    def take(self, rows: Sequence[int]) -> "RaggedGroup":
        values, offsets = take_ragged(self.values, self.offsets, np.asarray(rows))
        return RaggedGroup(self.names, values, offsets)
