"""Form ragged groups from per-variable ragged columns: the one rule every reader follows.

The rule: a variable-length variable belongs to the group named by its prefix before
the first ``.`` (``png.calE`` -> ``png``; a name without ``.`` is its own group),
unless a schema declares the groups (declared groups win). Every variable of a group
must have the same length in every row; a mismatch is an error naming the row and
the variables. :func:`group_prefix` is that rule, used by the CSV, HDF5 (lstm_ee,
h5py) and Parquet readers.

Declared exceptions, where the format itself says which columns share a length:

* ROOT: branches counted by the same counter branch (``nMuon``) form one group named
  after the counter's prefix (``Muon``), whatever their names;
* NOvA HDF5: the rows of one table (``rec.vtx.png``) form one group;
* nested records (Parquet structs, awkward/RNTuple records): the fields of one list of
  records form one group named after the list;
* fixed-size arrays (``x[0]``, ``x[1]``, ...) inside a list stay in their list's group.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from lstm_data.data.ragged import RaggedGroup
from lstm_data.errors import SchemaError
from lstm_data.io.columns.exact_ints import check_once
from lstm_data.kernels import interleave_columns

__all__ = ["group_prefix", "resolve_schema", "build_group", "check_group_lengths", "interleave_pieces"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def group_prefix(name: str) -> str:
    """Group of a ragged variable named ``name``: its prefix before the first ``.``."""
    return name.split(".", 1)[0]


def resolve_schema(schema: Any, scalar_names: list[str], ragged_names: list[str], *,
                   file: str | None = None, keys: Mapping[str, str] | None = None
                   ) -> tuple[dict[str, list[str]], list[str], np.dtype[Any] | None]:
    """Groups, scalars and dtype for a file whose columns are known up front.

    Parameters
    ----------
    schema
        ``None``, a :class:`~lstm_data.io.schema.Schema`, a TOML path or a mapping.
    scalar_names, ragged_names
        The file's 1-D and variable-length columns, in file order.
    keys
        Ragged column -> the group its source puts it in (e.g. the elements
        ``dir[0]``, ``dir[1]`` of one column); others group by :func:`group_prefix`.

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
    declared: dict[str, list[str]] = {}
    scalars: list[str] | None = None
    dtype: np.dtype[Any] | None = None
    if parsed is not None:
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
        g = (keys or {}).get(v) or group_prefix(v)
        if v not in used and g not in declared:
            groups.setdefault(g, []).append(v)
    return groups, list(scalar_names if scalars is None else scalars), dtype


def check_group_lengths(group: str, lengths: Mapping[str, np.ndarray], *, file: str | None = None,
                        first_row: int = 0) -> np.ndarray:
    """The per-row lengths shared by every variable of ``group``, or the error naming the first bad row.

    Parameters
    ----------
    lengths
        Variable -> per-row lengths, in column order.
    first_row
        Row number of ``lengths[...][0]`` in the file, for the error.

    Raises
    ------
    SchemaError
        Two variables differ in row count, or in length in some row (names the first
        such row, counted from ``first_row``, and the variable).
    """
    names = list(lengths)
    ref_name = names[0]
    ref_lengths = lengths[ref_name]
    for v in names[1:]:
        other = lengths[v]
        if len(other) != len(ref_lengths):
            raise SchemaError(f"group {group!r}: {v!r} has {len(other)} rows but {ref_name!r} "
                              f"has {len(ref_lengths)}", file=file, variable=v)
        if other is ref_lengths:
            continue
        bad = np.flatnonzero(other != ref_lengths)
        if len(bad):
            row = int(bad[0])
            raise SchemaError(
                f"group {group!r}: {v!r} has {int(other[row])} values but {ref_name!r} has "
                f"{int(ref_lengths[row])} in row {first_row + row} ({len(bad)} rows differ); put them in "
                f"different groups with a schema", file=file, row=first_row + row, variable=v)
    return ref_lengths


def _as_pieces(values: Any) -> list[np.ndarray]:
    return [values] if isinstance(values, np.ndarray) else list(values)


def interleave_pieces(columns: Sequence[Sequence[np.ndarray]], out: np.ndarray) -> None:
    """Write column ``j``, given as consecutive 1-D pieces, into ``out[:, j]``.

    Pieces of different columns may break at different places (Arrow chunks, HDF5
    reads): the value range is cut at every break of any column and each cut is one
    call of the compiled :func:`~lstm_data.kernels.interleave_columns` on views, so
    no piece is concatenated or copied first.

    Parameters
    ----------
    columns
        Per column, its pieces; each column's pieces hold ``len(out)`` values in all.
    out
        ``(total, V)`` float32/float64 block (or a column slice of a wider block).
    """
    bounds = [np.cumsum([0] + [len(p) for p in pieces]) for pieces in columns]
    for j, b in enumerate(bounds):
        if int(b[-1]) != len(out):
            raise ValueError(f"column {j} has {int(b[-1])} values for {len(out)} rows of out")
    if all(len(pieces) == 1 for pieces in columns):
        interleave_columns([pieces[0] for pieces in columns], out)
        return
    cuts = np.unique(np.concatenate(bounds))
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        views = []
        for pieces, pb in zip(columns, bounds):
            k = int(np.searchsorted(pb, a, side="right")) - 1
            views.append(pieces[k][a - int(pb[k]):b - int(pb[k])])
        interleave_columns(views, out[a:b])


def _row_of_value(offsets: np.ndarray, first_row: int, at: int) -> Callable[[int], int]:
    """The row of a piece's value ``k``, for the piece that starts at value ``at``."""
    return lambda k: first_row + int(np.searchsorted(offsets, at + k, side="right")) - 1


def _check_exact(pieces: Sequence[np.ndarray], dtype: np.dtype, name: str, offsets: np.ndarray, *,
                 file: str | None, first_row: int) -> None:
    """Warn once if an integer column changes in the float block (a group mixing ints and floats)."""
    start = 0
    for p in pieces:
        check_once(p, dtype, name, file=file, where="row", row_of=_row_of_value(offsets, first_row, start))
        start += len(p)


def build_group(group: str, columns: Mapping[str, tuple[Any, np.ndarray]], *,
                file: str | None = None, dtype: Any = None, first_row: int = 0) -> RaggedGroup:
    """Interleave same-length ragged columns into one :class:`RaggedGroup`.

    Float columns are written into the ``(total, V)`` block by the compiled
    :func:`~lstm_data.kernels.interleave_columns`, in one pass over the block.

    Parameters
    ----------
    columns
        Variable -> ``(flat values, per-row lengths)``, in column order. The flat
        values may also be a list of consecutive 1-D pieces (e.g. the chunks of an
        Arrow column); they are then used as they are, without concatenation.
    dtype
        Of the values block (default: the columns' common type).
    first_row
        Row number of the first row in the file, for errors.

    Raises
    ------
    SchemaError
        Two variables differ in length in some row (names the first such row).
    """
    names = list(columns)
    ref_lengths = check_group_lengths(group, {v: columns[v][1] for v in names}, file=file,
                                      first_row=first_row)
    pieces = [_as_pieces(columns[v][0]) for v in names]
    dt = np.dtype(dtype) if dtype is not None else np.result_type(*[p.dtype for ps in pieces for p in ps])
    offsets = np.zeros(len(ref_lengths) + 1, dtype=np.int64)
    np.cumsum(ref_lengths, out=offsets[1:])
    values = np.empty((int(offsets[-1]), len(names)), dtype=dt)
    if dt in _FLOATS:
        for name, ps in zip(names, pieces):
            _check_exact(ps, dt, name, offsets, file=file, first_row=first_row)
        interleave_pieces([[p if p.dtype in _FLOATS else p.astype(dt) for p in ps] for ps in pieces],
                          values)
    else:  # integer columns kept as integers: no compiled kernel for those
        for j, ps in enumerate(pieces):
            values[:, j] = ps[0] if len(ps) == 1 else np.concatenate(ps)
    return RaggedGroup(names, values, offsets)
