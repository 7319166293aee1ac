"""Arrow columns as numpy arrays: which columns to read, their buffers used as they are.

Shared by :func:`lstm_data.io.parquet.from_arrow`, the in-RAM Parquet reader and the
on-disk :class:`~lstm_data.io.parquet.disk.ParquetDataset`.

* Scalar columns: float, integer or bool. A column without nulls in one chunk is a
  view of Arrow's buffer (read-only); a null is NaN (an integer or bool column with
  nulls becomes float64).
* List columns (``list`` or ``large_list`` of float, integer or bool; or of
  structs or fixed-size lists of them, one field or element at a time): the offsets and
  values buffers are used as they are, honouring the slice offset of a sliced array;
  a null list is an empty list (if its slot spans values, Arrow allows it, they are
  dropped); a null inside a list is NaN.
* Integers are converted to the float dtype of their group (or to the ``dtype``
  asked for, or to float64 when a null becomes NaN); a value that does not convert
  exactly is warned about once per column (a
  :class:`~lstm_data.io.columns.exact_ints.PrecisionWarning` naming the column, the row and
  the value). An integer scalar read without a ``dtype`` stays integer, exact.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from lstm_data._util.optional import require
from lstm_data.io.columns.groups import DECLARE_HINT, check_group_lengths
from lstm_data.io.columns.exact_ints import ExactInts

__all__ = ["import_pyarrow", "ListColumn", "list_column", "list_lengths", "scalar_column", "join_scalar_pieces",
           "METADATA_KEY", "arrow_metadata", "check_list_columns", "is_list", "numeric",
           "recorded_groups", "PANDAS_INDEX", "Step", "apply_steps", "leaf_index"]

#: key of the Arrow schema metadata in which :func:`~lstm_data.io.parquet.to_arrow` records groups
METADATA_KEY = b"lstm_data"
#: the unnamed index that pandas' ``to_parquet`` stores as a column (left out)
PANDAS_INDEX = re.compile(r"__index_level_\d+__")


def import_pyarrow() -> Any:
    """``import pyarrow`` (with ``pyarrow.parquet``), or an ImportError naming the extra to install."""
    return require("reading or writing Parquet/Arrow", "parquet", "pyarrow", "pyarrow.parquet")


def arrow_metadata(groups: dict[str, list[str]]) -> dict[bytes, bytes]:
    """The schema metadata that records ``groups``, so that a round trip keeps them exactly."""
    return {METADATA_KEY: json.dumps({"format": 1, "groups": groups}).encode()}


def recorded_groups(arrow_schema: Any, ragged: list[str]) -> dict[str, list[str]] | None:
    """Groups recorded by :func:`arrow_metadata`, if every variable is still a list column."""
    raw = (arrow_schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        return None
    try:
        groups = json.loads(raw)["groups"]
    except (ValueError, KeyError, TypeError):
        return None
    present = set(ragged)
    if not isinstance(groups, dict) or not all(
            isinstance(v, list) and v and set(v) <= present for v in groups.values()):
        return None
    return {str(g): [str(x) for x in v] for g, v in groups.items()}


def _leaves(t: Any) -> int:
    """Parquet leaf columns of one Arrow field type."""
    return sum(_leaves(t.field(i).type) for i in range(t.num_fields)) if t.num_fields else 1


def leaf_index(schema: Any) -> dict[str, int]:
    """Field name -> index of its (first) Parquet leaf column in a row group's metadata."""
    out, k = {}, 0
    for f in schema:
        out[f.name] = k
        k += _leaves(f.type)
    return out


#: one step from an Arrow array towards a column: ("field", i) of a struct, ("element", j) of a
#: fixed-size list
Step = tuple[str, int]


def apply_steps(arr: Any, steps: Sequence[Step]) -> Any:
    """The column that ``steps`` reach from an Arrow array (nulls of a parent kept)."""
    if not steps:
        return arr
    import pyarrow.compute as pc  # only when needed: its first import takes a while

    for kind, i in steps:
        arr = pc.struct_field(arr, [i]) if kind == "field" else pc.list_element(arr, i)
    return arr


def is_list(t: Any) -> bool:
    """Whether Arrow type ``t`` is a variable-length list (``list`` or ``large_list``)."""
    import pyarrow as pa
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t))


def numeric(t: Any) -> bool:
    """Whether Arrow type ``t`` is numbers: float, integer or bool."""
    import pyarrow as pa
    return bool(pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_boolean(t))


def arrow_values(arr: Any) -> np.ndarray:
    """The values of a primitive Arrow array (numbers or bool) as numpy, without pandas.

    A view of the array's buffer for numbers (its slice offset honoured), a new array for bool
    (Arrow packs them as bits); views are read-only. Slots of nulls hold whatever the buffer holds there. pyarrow's
    ``Array.to_numpy`` imports pandas, a quarter of a second that no read path needs.
    """
    import pyarrow as pa

    n, offset = len(arr), arr.offset
    data = arr.buffers()[1]
    if pa.types.is_boolean(arr.type):
        if n == 0 or data is None:
            return np.zeros(n, dtype=bool)
        bits = np.frombuffer(data, dtype=np.uint8)
        return np.unpackbits(bits, count=offset + n, bitorder="little")[offset:].view(bool)
    dtype = np.dtype(arr.type.to_pandas_dtype())
    if n == 0 or data is None:
        return np.zeros(n, dtype=dtype)
    return _read_only(np.frombuffer(data, dtype=dtype, count=offset + n)[offset:])


def arrow_valid(arr: Any) -> np.ndarray:
    """Which slots of an Arrow array hold a value (bool), from its validity bitmap, without pandas."""
    n, offset = len(arr), arr.offset
    bitmap = arr.buffers()[0]
    if arr.null_count == 0 or bitmap is None:
        return np.ones(n, dtype=bool)
    bits = np.frombuffer(bitmap, dtype=np.uint8)
    return np.unpackbits(bits, count=offset + n, bitorder="little")[offset:].view(bool)


def arrow_offsets(arr: Any) -> np.ndarray:
    """The ``len(arr) + 1`` offsets of a ``list``/``large_list`` array (int32 or int64), slice honoured."""
    import pyarrow as pa

    dtype = np.int64 if pa.types.is_large_list(arr.type) else np.int32
    data = arr.buffers()[1]
    if data is None:
        return np.zeros(len(arr) + 1, dtype=dtype)
    return _read_only(np.frombuffer(data, dtype=dtype, count=arr.offset + len(arr) + 1)[arr.offset:])


def _read_only(view: np.ndarray) -> np.ndarray:
    """``view`` of Arrow's memory, marked read-only (Arrow arrays are immutable and may be shared)."""
    view.flags.writeable = False
    return view


def _to_float(values: np.ndarray, dtype: np.dtype, *, name: str, file: str | None,
              row_of: Any, exact: ExactInts | None = None) -> np.ndarray:
    """``values`` as ``dtype``; integers that do not convert exactly are warned about once per
    column (``row_of(index)`` names the row; see :mod:`lstm_data.io.columns.exact_ints`)."""
    if values.dtype == dtype:
        return values
    return (exact or ExactInts(file)).cast(values, dtype, name, row_of=row_of, file=file)


def _chunk_numbers(arr: Any, dtype: np.dtype | None, *, name: str, file: str | None,
                   row_of: Any, exact: ExactInts | None = None) -> np.ndarray:
    """One Arrow array of numbers as numpy (a view when it has no nulls); nulls are NaN."""
    if arr.null_count == 0:
        out: np.ndarray = arrow_values(arr)  # numbers: a view of the buffer (bool: a copy)
    else:
        valid = arrow_valid(arr)
        values = arrow_values(arr)
        filled = np.where(valid, values, values.dtype.type(0))  # what a null slot holds is not data
        target = dtype if dtype is not None else (
            filled.dtype if filled.dtype.kind == "f" else np.dtype(np.float64))
        out = _to_float(filled, target, name=name, file=file, row_of=row_of, exact=exact)
        if out is filled:
            out = out.copy()
        out[~valid] = np.nan
        return out
    if out.dtype == np.float16:
        out = out.astype(np.float32 if dtype is None else dtype)
    return out if dtype is None else _to_float(out, dtype, name=name, file=file, row_of=row_of, exact=exact)


def scalar_column(chunked: Any, name: str, dtype: np.dtype | None, *, file: str | None = None,
                  first_row: int = 0, exact: ExactInts | None = None) -> np.ndarray:
    """A scalar column (``ChunkedArray`` or ``Array``) as one 1-D array.

    One chunk without nulls, kept at its dtype, is a read-only view of Arrow's buffer.
    """
    chunks = chunked.chunks if hasattr(chunked, "chunks") else [chunked]
    pieces, row = [], first_row
    for arr in chunks:
        pieces.append(_chunk_numbers(arr, dtype, name=name, file=file, row_of=lambda k, start=row: start + k,
                                     exact=exact))
        row += len(arr)
    return join_scalar_pieces(pieces, name, file=file, first_row=first_row, exact=exact)


def join_scalar_pieces(pieces: Sequence[np.ndarray], name: str, *, file: str | None = None,
                       first_row: int = 0, exact: ExactInts | None = None) -> np.ndarray:
    """Consecutive pieces of one scalar column as one array (integers exactly to float if needed)."""
    if not pieces:
        return np.zeros(0, dtype=np.float64)
    if len(pieces) == 1:
        return pieces[0]
    target = np.result_type(*[p.dtype for p in pieces])
    if target.kind == "f":
        out, row = [], first_row
        for p in pieces:
            out.append(_to_float(p, target, name=name, file=file, row_of=lambda k, start=row: start + k,
                                 exact=exact))
            row += len(p)
        pieces = out
    return np.concatenate(pieces)


@dataclass
class ListColumn:
    """One list column: its offsets and its values as consecutive 1-D pieces, one per Arrow chunk.

    Attributes
    ----------
    offsets : list of ndarray
        Per chunk, ``n_k + 1`` int32/int64 offsets as Arrow holds them (a view; they
        start where the chunk's values start, not necessarily at 0). Null lists have
        length 0 here (then the offsets are a new array).
    pieces : list of ndarray
        Per chunk, float32/float64 views of the values buffer (copies only where nulls,
        null lists spanning values, or integer conversion require them).
    """

    offsets: list[np.ndarray]
    pieces: list[np.ndarray]

    @property
    def lengths(self) -> np.ndarray:
        """Per-row lengths (int64), all chunks."""
        parts = [np.diff(o).astype(np.int64, copy=False) for o in self.offsets]
        return parts[0] if len(parts) == 1 else (np.concatenate(parts) if parts else np.zeros(0, np.int64))

    def same_lengths(self, other: "ListColumn") -> bool:
        """Whether every row has the same length as in ``other`` (cheap when both are one chunk)."""
        if len(self.offsets) == 1 and len(other.offsets) == 1:
            a, b = self.offsets[0], other.offsets[0]
            if len(a) != len(b):
                return False
            if a[0] == 0 and b[0] == 0:
                return bool(np.array_equal(a, b))
            return bool(np.array_equal(a - a[0], b - b[0]))
        return bool(np.array_equal(self.lengths, other.lengths))

    @property
    def total(self) -> int:
        """Number of values."""
        return int(sum(int(o[-1]) - int(o[0]) for o in self.offsets))

    def flat(self) -> np.ndarray:
        """All values as one array (the single piece itself when there is one)."""
        return self.pieces[0] if len(self.pieces) == 1 else np.concatenate(self.pieces)


def list_column(chunked: Any, name: str, dtype: np.dtype, *, file: str | None = None,
                first_row: int = 0, steps: Sequence[Step] = (),
                exact: ExactInts | None = None) -> ListColumn:
    """A ``list``/``large_list`` column (``ChunkedArray`` or ``Array``) as offsets and value pieces.

    Parameters
    ----------
    dtype
        Float dtype of the group: integer values are converted to it (a value that
        changes is warned about once); float values keep their dtype (the interleave
        converts them).
    first_row
        Row number of the column's first row in the file, for errors.
    steps
        For a list of structs or fixed-size lists: the field / element of each
        value to take (see :func:`apply_steps`).
    """
    import pyarrow as pa

    chunks = chunked.chunks if hasattr(chunked, "chunks") else [chunked]
    all_offsets, pieces, row = [], [], first_row
    for arr in chunks:
        offsets = arrow_offsets(arr)  # honours the slice offset
        lo, hi = int(offsets[0]), int(offsets[-1])
        start = row

        def row_of(k: int, offsets: np.ndarray = offsets, start: int = start) -> int:
            return start + int(np.searchsorted(offsets, offsets[0] + k, side="right")) - 1

        child = arr.values.slice(lo, hi - lo)
        child = apply_steps(child, steps)
        keep = pa.types.is_float32(child.type) or pa.types.is_float64(child.type)
        values = _chunk_numbers(child, None if keep else dtype, name=name, file=file, row_of=row_of,
                                exact=exact)
        if arr.null_count:
            valid = arrow_valid(arr)
            lengths = np.diff(offsets)
            if np.any(lengths[~valid]):  # null slots that span values: drop those values
                values = values[np.repeat(valid, lengths)]
            lengths[~valid] = 0
            offsets = np.zeros(len(offsets), dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
        all_offsets.append(offsets)
        pieces.append(values)
        row += len(arr)
    if not all_offsets:
        return ListColumn([np.zeros(1, np.int64)], [np.zeros(0, dtype)])
    return ListColumn(all_offsets, pieces)


def list_lengths(chunked: Any) -> np.ndarray:
    """Per-row lengths (int64) of a ``list``/``large_list`` column, from its offsets alone (a null list: 0)."""
    chunks = chunked.chunks if hasattr(chunked, "chunks") else [chunked]
    parts = []
    for arr in chunks:
        lengths = np.diff(arrow_offsets(arr)).astype(np.int64)
        if arr.null_count:
            lengths[~arrow_valid(arr)] = 0
        parts.append(lengths)
    return parts[0] if len(parts) == 1 else (np.concatenate(parts) if parts else np.zeros(0, np.int64))


def check_list_columns(group: str, columns: dict[str, ListColumn], *, ref: ListColumn | None = None,
                       ref_name: str | None = None, file: str | None = None, first_row: int = 0,
                       hint: str = DECLARE_HINT) -> ListColumn:
    """The reference column (``ref``, else the first) once every column has its lengths.

    Raises
    ------
    SchemaError
        A column differs in length in some row (names the first such row and the column;
        see :func:`~lstm_data.io.columns.groups.check_group_lengths`).
    """
    items = list(columns.items())
    if ref is None:
        ref_name, ref = items[0]
    if all(c is ref or c.same_lengths(ref) for _, c in items):
        return ref
    check_group_lengths(group, {str(ref_name): ref.lengths, **{v: c.lengths for v, c in items}},
                        file=file, first_row=first_row, hint=hint)
    return ref
