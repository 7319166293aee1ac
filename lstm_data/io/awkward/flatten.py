"""An awkward field, however nested, as flat numeric columns (shared by :mod:`.awkward` and :mod:`.root`).

One field of a record array becomes zero or more **leaves**:

* numbers (``N * float32``, ``N * ?int64``) are one scalar leaf named after the field;
* a record that is not inside a list (``{x: float32, y: float32}``: nested structs,
  ``TLorentzVector``-like members, PHYSLITE containers) flattens to dotted names
  ``field.x``, ``field.y``, each read as its own type says;
* a fixed-size array (``3 * float32``, ``float[3]``, ``std::array``) is one leaf per
  element, ``field[0]``, ``field[1]``, ... (``field[0][1]`` for two fixed dimensions);
* ``var * numbers`` is a jagged leaf; ``var * {pt, eta}`` gives the jagged leaves
  ``field_pt``, ``field_eta`` (``sep`` joins the names, as uproot names the branches of
  a zipped record) whose **key** is ``field``: they form the group ``field``. Inside
  the list, records flatten and fixed-size arrays split as above
  (``var * {p4: {x, y}}`` -> ``field_p4.x``, ``field_p4.y``);
* jagged leaves of a record that is not in a list (``{pt: var * float32}``) are keyed
  by that record's name: ``Electrons.pt``, ``Electrons.eta`` -> group ``Electrons``.

What is not numbers is **skipped**, with its type and why: strings, lists of lists
(``var * var * float32``: which level is a row is not known), unions, objects whose
members are not numbers. Skipping is never an error here: the caller lists what
was skipped and raises only when nothing at all is left.

Leaves are cheap views until :meth:`Leaf.column` is called, so a column selection
is applied before any value is copied or normalised.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from lstm_data.io.awkward.layout import NAMES_PARAMETER, Column, column_buffers, import_awkward

__all__ = ["Leaf", "flatten_field", "describe_skipped"]

_NUMERIC_KINDS = "fiub"
_STRINGS = ("string", "bytestring", "char", "byte")


@dataclass
class Leaf:
    """One numeric column of a flattened field.

    Attributes
    ----------
    name : str
        The column's name (``Muon_pt``, ``Electrons.eta``, ``p4[2]``).
    array : ak.Array
        Its values: ``N * numbers`` or ``N * var * numbers`` (a view, not yet normalised).
    jagged : bool
        Whether it is a list per row.
    key : str or None
        The group its source puts it in (the list-of-records field or the record
        holding the list); ``None``: group by the name's prefix.
    """

    name: str
    array: Any
    jagged: bool
    key: str | None = None

    def column(self, file: str | None = None) -> Column:
        """The leaf's buffers (one copy only for option, indexed or non-compact layouts)."""
        return column_buffers(self.array, self.name, file=file)


def _strip(layout: Any) -> Any:
    """``layout`` without option, indexed and unmasked wrappers."""
    while layout.is_option or layout.is_indexed or type(layout).__name__ == "UnmaskedArray":
        layout = layout.content
    return layout


def _type_text(array: Any) -> str:
    try:
        return str(array.type.content)
    except Exception:  # pragma: no cover - every ak.Array has a type
        return "?"


def flatten_field(array: Any, name: str, *, sep: str = "_") -> tuple[list[Leaf], dict[str, str]]:
    """The numeric leaves of one field (an ``ak.Array`` of length N) and what was skipped.

    Parameters
    ----------
    array
        The field's values, one item per row.
    name
        The field's name; leaves are named from it.
    sep
        Joins a list-of-records field's name and its record fields (``Muon`` + ``pt``).

    Returns
    -------
    leaves : list of Leaf
    skipped : dict
        Column name -> ``"type: why"`` for every part that is not numbers.
    """
    import_awkward()
    leaves: list[Leaf] = []
    skipped: dict[str, str] = {}
    _walk(array, name, None, False, sep, leaves, skipped)
    return leaves, skipped


def _walk(array: Any, name: str, key: str | None, inlist: bool, sep: str, leaves: list[Leaf],
          skipped: dict[str, str]) -> None:
    top = _strip(array.layout)
    if inlist:
        if not top.is_list:  # pragma: no cover - a projection keeps the list
            skipped[name] = f"{_type_text(array)}: not a list of one level"
            return
        item = _strip(top.content)
    else:
        item = top
    if item.parameter("__array__") in _STRINGS or top.parameter("__array__") in _STRINGS:
        skipped[name] = f"{_type_text(array)}: text, not numbers"
        return
    if item.is_record:
        _record(array, item, name, key, inlist, sep, leaves, skipped)
    elif item.is_unknown:
        leaves.append(Leaf(name, array, inlist, key))
    elif item.is_numpy:
        dt = item.data.dtype
        if dt.kind not in _NUMERIC_KINDS or item.parameter("__array__") is not None:
            skipped[name] = f"{_type_text(array)}: not numbers"
        elif item.data.ndim == 1:
            leaves.append(Leaf(name, array, inlist, key))
        else:  # fixed inner dimensions of a NumpyArray: one leaf per element
            key = key if key is not None or not inlist else name  # x[n][3]: one group x
            for idx in itertools.product(*[range(k) for k in item.data.shape[1:]]):
                where = (slice(None),) * (1 + inlist) + idx
                suffix = "".join(f"[{i}]" for i in idx)
                leaves.append(Leaf(name + suffix, array[where], inlist, key))
    elif item.is_regular:
        key = key if key is not None or not inlist else name
        for i in range(int(item.size)):
            _walk(array[(slice(None),) * (1 + inlist) + (i,)], f"{name}[{i}]", key, inlist, sep,
                  leaves, skipped)
    elif item.is_list:
        if inlist:
            skipped[name] = f"{_type_text(array)}: a list of lists (doubly jagged); declare which level " \
                            "is a row by flattening it first"
            return
        content = _strip(item.content)
        if content.is_record:
            key = name  # a list of records is one group
        elif key is None and "." in name:
            key = name.rsplit(".", 1)[0]  # lists of one record (struct of lists) group together
        _walk(array, name, key, True, sep, leaves, skipped)
    else:
        skipped[name] = f"{_type_text(array)}: {type(item).__name__} is not numbers"


def _record(array: Any, item: Any, name: str, key: str | None, inlist: bool, sep: str,
            leaves: list[Leaf], skipped: dict[str, str]) -> None:
    """Fields of a record: in a list's items directly, ``name + sep + field`` (or the
    recorded full names); otherwise dotted ``name.field``."""
    fields = list(item.fields)
    if not fields:
        skipped[name] = f"{_type_text(array)}: a record with no field"
        return
    direct = inlist and key == name
    full = item.parameter(NAMES_PARAMETER) if direct else None
    if not (isinstance(full, list) and len(full) == len(fields)):
        full = [f"{name}{sep}{f}" if direct else f"{name}.{f}" for f in fields]
    for f, child in zip(fields, full):
        _walk(array[f], str(child), key, inlist, sep, leaves, skipped)


def describe_skipped(skipped: dict[str, str], limit: int = 6) -> str:
    """``'a' (string: text, not numbers), 'b' (...) and 3 more``."""
    items = list(skipped.items())
    text = ", ".join(f"{k!r} ({t})" for k, t in items[:limit])
    return text + (f" and {len(items) - limit} more" if len(items) > limit else "")

