"""awkward arrays saved in HDF5 the way awkward's documentation shows (extra ``awkward``).

awkward has no ``to_hdf5``; its guide stores an array as the buffers of
``ak.to_buffers`` in an HDF5 group, with the form and length as attributes::

    group = h5file.create_group("awkward")
    form, length, _ = ak.to_buffers(ak.to_packed(array), container=group)
    group.attrs["form"] = form.to_json()
    group.attrs["length"] = json.dumps(length)

A group with ``form`` and ``length`` attributes (the opened group, or its only member
group) is read back with ``ak.from_buffers`` and then as any awkward record array
(:func:`lstm_data.io.awkward.from_awkward`): ``var * record`` fields are ragged groups.
The buffers are checked first: a form that is not awkward's JSON, a length that is not
a non-negative integer, buffers shorter than the form needs, and offsets that decrease
or point past their content (``ak.validity_error``) are ``FormatError`` naming the file
and the group.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Sequence

import h5py
import numpy as np
from numpy.typing import DTypeLike

from lstm_data.data.dataset import InMemoryDataset
from lstm_data.errors import FormatError
from lstm_data.io.hdf5.rows import read_rows

__all__ = ["awkward_group", "read_awkward_group", "LAYOUT"]

LAYOUT = "awkward buffers (ak.to_buffers)"


def _marked(obj: Any) -> bool:
    return isinstance(obj, h5py.Group) and "form" in obj.attrs and "length" in obj.attrs


def awkward_group(node: h5py.Group, get: Callable[[str], Any]) -> tuple[str, h5py.Group] | None:
    """``(path below node, group)`` of the group holding awkward buffers, or ``None``: ``node``
    itself, or its only member when that is such a group."""
    if _marked(node):
        return "", node
    members = list(node)
    if len(members) == 1 and _marked(child := get(members[0])):
        return members[0], child
    return None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def read_awkward_group(group: h5py.Group, get: Callable[[str], Any], *, file: str, schema: Any = None,
                       dtype: DTypeLike | None = None, columns: Sequence[str] | str | None = None,
                       exclude: Sequence[str] | str | None = None) -> InMemoryDataset:
    """The awkward array stored in ``group`` (see the module), as an in-RAM dataset.

    Parameters
    ----------
    get
        Member name -> the dataset (links and declared sizes checked).

    Raises
    ------
    FormatError
        The form, length or buffers do not make a valid array (names file and group).
    ImportError
        awkward is not installed.
    """
    from lstm_data.io.awkward import from_awkward
    from lstm_data.io.awkward.layout import import_awkward

    ak = import_awkward()
    where = group.name.lstrip("/") or "/"
    try:
        form = ak.forms.from_json(_text(group.attrs["form"]))
        length = json.loads(_text(group.attrs["length"]))
    except (ValueError, TypeError, KeyError) as exc:
        raise FormatError(f"group {where!r}: its 'form' or 'length' attribute is not awkward's JSON ({exc})",
                          file=file, variable=where) from None
    if isinstance(length, bool) or not isinstance(length, int) or length < 0:
        raise FormatError(f"group {where!r}: length {length!r} is not a non-negative integer", file=file,
                          variable=where)
    buffers: dict[str, np.ndarray] = {}
    for key in group:
        ds = get(key)
        if isinstance(ds, h5py.Dataset):
            buffers[key] = read_rows(ds, file=file, variable=f"{where}/{key}")
    try:
        array = ak.from_buffers(form, length, buffers, highlevel=True)
        problem = ak.validity_error(array)
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise FormatError(f"group {where!r}: its buffers do not make the array its form and length "
                          f"describe ({exc})", file=file, variable=where) from None
    if problem:
        raise FormatError(f"group {where!r}: the stored array is not valid: {problem}", file=file,
                          variable=where)
    dataset = from_awkward(array, schema=schema, dtype=dtype, columns=columns, exclude=exclude, where=file)
    dataset.layout = LAYOUT
    return dataset
