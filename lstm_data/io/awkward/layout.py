"""One awkward column as plain numpy buffers (shared by :mod:`.awkward` and :mod:`.root`).

A column is one of

* **numbers** (``N * float32``, ``N * int64``, ...): a 1-D array;
* **a jagged list of numbers** (``N * var * float32``): flat values and offsets;
* **a jagged list of records of numbers** (``N * var * {pt: float32, eta: float32}``):
  one flat array per record field, sharing the offsets.

The common layouts (``NumpyArray``, ``ListOffsetArray`` over a ``NumpyArray`` or a
``RecordArray`` of them, as uproot and ``ak.Array`` build them) give their buffers
as they are: no copy, offsets shifted to start at 0 only when the list is a slice.
Everything else is normalised first, and that costs one copy of this column:

* option types: a missing number is NaN (floats keep their width, integers and
  booleans become floats: ``ak.fill_none(column, float32 NaN)``), a missing list
  is an empty list (``ak.fill_none(column, [], axis=0)``); a missing record of a
  record array is a NaN scalar / empty list in each of its fields;
* ``ListArray``, ``IndexedArray`` (a taken or permuted array), ``UnmaskedArray``
  and lists whose content is not compact: ``ak.to_packed``.

Strings, fixed-size (``RegularArray``) lists, nested lists, unions and
non-numeric dtypes are not columns: :func:`column_buffers` raises
``SchemaError`` naming the column and its type.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lstm_data._util.optional import require
from lstm_data.errors import SchemaError

__all__ = ["Column", "column_buffers", "import_awkward", "NAMES_PARAMETER"]

_NUMERIC_KINDS = "fiub"
#: record parameter holding a group's full variable names (written by ``to_awkward``)
NAMES_PARAMETER = "lstm_data_names"


def import_awkward(extra: str = "awkward") -> Any:
    """``import awkward``, or an ImportError naming the extra to install."""
    return require("this", extra, "awkward")


@dataclass
class Column:
    """One column's buffers.

    Attributes
    ----------
    values : dict
        ``{"": flat numbers}`` for numbers and lists of numbers, ``{field: flat numbers}``
        for lists of records.
    offsets : ndarray of int64 or None
        ``None`` for numbers; else ``N + 1`` offsets starting at 0.
    names : list of str or None
        The ``lstm_data_names`` parameter of a record content (full variable names
        written by :func:`lstm_data.io.awkward.to_awkward`), else ``None``.
    """

    values: dict[str, np.ndarray]
    offsets: np.ndarray | None
    names: list[str] | None = None

    @property
    def jagged(self) -> bool:
        return self.offsets is not None

    @property
    def lengths(self) -> np.ndarray:
        assert self.offsets is not None
        return np.diff(self.offsets)


def _numbers(layout: Any) -> bool:
    if layout.is_unknown:  # EmptyArray: a list column with no value at all (``var * unknown``)
        return True
    return (layout.is_numpy and layout.data.ndim == 1 and layout.data.dtype.kind in _NUMERIC_KINDS
            and layout.parameter("__array__") is None)


def _plain(layout: Any) -> bool:
    """Whether ``layout`` gives its buffers as they are."""
    if _numbers(layout):
        return True
    if type(layout).__name__ != "ListOffsetArray" or layout.parameter("__array__") is not None:
        return False
    content = layout.content
    if content.is_record:
        return all(_numbers(c) for c in content.contents)
    return _numbers(content)


def _has_option(layout: Any) -> bool:
    if layout.is_option or type(layout).__name__ == "UnmaskedArray":
        return True
    if layout.is_record:
        return any(_has_option(c) for c in layout.contents)
    content = getattr(layout, "content", None)
    return content is not None and _has_option(content)


def _unsupported(name: str, array: Any, file: str | None, why: str) -> SchemaError:
    return SchemaError(f"column {name!r} of type {array.type.content} is not supported ({why}); "
                       "expected numbers, var * numbers or var * {record of numbers}",
                       file=file, variable=name)


def _normalise(ak: Any, array: Any, name: str, file: str | None) -> Any:
    """``array`` with options filled and non-plain layouts packed (one copy)."""
    layout = array.layout
    if _has_option(layout):
        inner = layout
        while inner.is_option or type(inner).__name__ == "UnmaskedArray" or inner.is_indexed:
            inner = inner.content
        if inner.is_list and inner is not layout:  # a missing list is an empty list
            array = ak.fill_none(array, [], axis=0)
        if _has_option(array.layout):
            array = ak.fill_none(array, np.float32(np.nan), axis=-1)
    if not _plain(array.layout):
        array = ak.to_packed(array)
    if not _plain(array.layout):
        layout = array.layout
        kind = layout.parameter("__array__")
        inner = getattr(layout, "content", None)
        if kind is None:
            kind = type(layout).__name__
            if inner is not None and not inner.is_record:
                kind = f"{kind} of {inner.parameter('__array__') or type(inner).__name__}"
        raise _unsupported(name, array, file, f"{kind}: only flat lists of numbers are read")
    return array


def column_buffers(array: Any, name: str, *, file: str | None = None) -> Column:
    """The buffers of one awkward column (a high-level ``ak.Array`` of length N).

    Raises
    ------
    SchemaError
        The column is not numbers, ``var * numbers`` or ``var * {numbers}``.
    """
    ak = import_awkward()
    array = _normalise(ak, array, name, file)
    layout = array.layout
    if layout.is_numpy or layout.is_unknown:
        return Column({"": _data(layout)}, None)
    offsets = np.asarray(layout.offsets.data).astype(np.int64, copy=False)
    lo, hi = int(offsets[0]), int(offsets[-1])
    if lo:
        offsets = offsets - lo
    content = layout.content
    if content.is_record:
        fields = content.fields
        values = {f: _data(c)[lo:hi] for f, c in zip(fields, content.contents)}
        names = content.parameter(NAMES_PARAMETER)
        ok = isinstance(names, list) and len(names) == len(fields)
        return Column(values, offsets, [str(n) for n in names] if ok else None)
    return Column({"": _data(content)[lo:hi]}, offsets)


def _data(layout: Any) -> np.ndarray:
    """The numbers of a ``NumpyArray`` (an ``EmptyArray`` is float64 with no value)."""
    if layout.is_unknown:
        return np.zeros(0, dtype=np.float64)
    return np.asarray(layout.data)
