"""Fixed-size padded arrays with a validity flag, read as ragged groups.

Training-dataset dumpers store a variable number of objects per event as a
fixed-size array padded to ``M`` slots, with a flag that says which slots hold an
object:

* a compound dataset of shape ``(N, M)`` (ATLAS training-dataset-dumper ``tracks``)
  with a boolean or integer field named ``valid`` or ``mask``: its other numeric
  fields are the variables ``tracks.d0``, ``tracks.pt`` ... of the group ``tracks``;
* a numeric dataset of shape ``(N, M, F)`` or ``(N, M)`` with a mask dataset of shape
  ``(N, M)`` next to it, named ``X_mask``, ``X_valid``, ``mask_X``, ``valid_X`` for the
  dataset ``X``, or ``mask`` / ``valid`` alone (then it flags every such dataset): the
  variables ``X[0]`` ... ``X[F-1]`` (``X`` for a 2-D one);
* a float dataset of shape ``(N, M, F)`` whose last feature is a mask (JetNet's
  ``particle_features``: ``etarel, phirel, ptrel, mask``): taken as such only when that
  feature holds only 0 and 1, its ones come first in every row and every other
  feature of every unflagged slot is 0, as padding is; the variables are ``X[0]`` ...
  ``X[F-2]``. Otherwise the dataset stays ``(n, k, m)`` scalar columns.

**The valid slots must come first in each row.** Padding that follows the objects
is what these dumpers write; a flag with a hole (a valid slot after an invalid
one) means the file is not what the layout says (the flag is something else, or the
array was reordered), so it is a ``FormatError`` naming the file, the flag, the row
and the slots, never silently compacted. A declared mask whose values are not 0/1
is one too. The group's rows are the valid slots, in slot order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import h5py
import numpy as np
from h5py import h5t

from lstm_data.errors import FormatError
from lstm_data.io.hdf5.columns import Column, Columns, Keep, read_compound, record_leaves, skip_reason
from lstm_data.io.hdf5.rows import read_rows

__all__ = ["Padded", "find_padded", "prefix_lengths", "MASK_FIELDS"]

#: names of a compound's flag field
MASK_FIELDS = ("valid", "mask")


@dataclass
class Padded:
    """One padded dataset read as a ragged group.

    Attributes
    ----------
    key
        The dataset.
    mask
        Where its flag is: ``key.valid`` (a field), another dataset's key, or
        ``key[F-1]`` (its last feature).
    columns
        Its variables, as columns of the compacted ``(total,)`` or ``(total, F)`` block.
    lengths
        Valid slots per row (checked to be a prefix).
    flag
        ``(N, M)`` boolean flags.
    dtype
        Of a compound: the numpy dtype of the fields read.
    consumed
        Datasets whose columns this group replaces (its own and a mask dataset).
    """

    key: str
    mask: str
    columns: list[Column]
    lengths: np.ndarray
    flag: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), bool))
    dtype: np.dtype[Any] | None = None
    consumed: tuple[str, ...] = ()
    _block: np.ndarray | None = field(default=None, repr=False)

    def describe(self) -> str:
        """``tracks[40] flagged by tracks.valid``."""
        return f"{self.key} flagged by {self.mask}"

    def block(self, ds: h5py.Dataset, *, file: str) -> np.ndarray:
        """The valid slots of every row, in row then slot order (read once)."""
        if self._block is None:
            if self.dtype is not None:
                whole = read_compound(ds, self.dtype, 0, ds.shape[0], file=file)
            else:
                whole = read_rows(ds, file=file, variable=self.key)
            self._block = whole[self.flag]
        return self._block


def prefix_lengths(flag: np.ndarray, *, key: str, mask: str, file: str) -> np.ndarray:
    """Valid slots per row of the ``(N, M)`` boolean ``flag``, after checking they come first.

    Raises
    ------
    FormatError
        A row has a valid slot after an invalid one: names file, flag, row and both slots.
    """
    lengths: np.ndarray = flag.sum(axis=1, dtype=np.int64)
    expected = np.arange(flag.shape[1]) < lengths[:, None]
    bad = np.flatnonzero((flag != expected).any(axis=1))
    if len(bad):
        row = int(bad[0])
        hole = int(np.argmin(flag[row]))
        after = hole + int(np.argmax(flag[row, hole:]))
        raise FormatError(f"{mask!r} flags slot {after} of row {row} of {key!r} valid after the invalid slot "
                          f"{hole}: a padded array must hold its valid entries first (padding after them); "
                          f"{len(bad)} rows have such holes", file=file, variable=mask, row=row)
    return lengths


def _as_flag(raw: np.ndarray, *, mask: str, file: str) -> np.ndarray:
    """A declared mask as booleans; its values must be 0 or 1."""
    if raw.dtype == bool:
        return raw
    odd = np.flatnonzero(((raw != 0) & (raw != 1)).reshape(len(raw), -1).any(axis=1))
    if len(odd):
        row = int(odd[0])
        raise FormatError(f"mask {mask!r} holds a value other than 0 and 1 in row {row}", file=file,
                          variable=mask, row=row)
    return raw.astype(bool)


def _numeric(ds: h5py.Dataset) -> bool:
    tid = ds.id.get_type()
    return tid.get_class() != h5t.VLEN and skip_reason(tid) is None


def _mask_for(key: str, masks: dict[str, h5py.Dataset], shape: tuple[int, ...]) -> str | None:
    for name in (f"{key}_mask", f"{key}_valid", f"mask_{key}", f"valid_{key}", "mask", "valid"):
        ds = masks.get(name)
        if ds is not None and tuple(ds.shape) == shape:
            return name
    return None


def find_padded(group: h5py.Group, get: Callable[[str], Any], *, keep: Keep, file: str) -> list[Padded]:
    """The padded datasets of ``group`` (see the module), with their checked lengths.

    Raises
    ------
    FormatError
        A flag with a hole, a declared mask that is not 0/1 (see :func:`prefix_lengths`).
    """
    datasets = {k: ds for k in group if isinstance(ds := get(k), h5py.Dataset) and ds.shape is not None}
    masks = {k: ds for k, ds in datasets.items() if ds.ndim == 2 and _numeric(ds)
             and (k in ("mask", "valid") or k.endswith(("_mask", "_valid")) or k.startswith(("mask_", "valid_")))}
    out: list[Padded] = []
    for key, ds in datasets.items():
        if key in masks or not keep(key, key):
            continue
        tid = ds.id.get_type()
        found: Padded | None = None
        if tid.get_class() == h5t.COMPOUND and ds.ndim == 2:
            found = _compound(key, ds, tid, keep, file)
        elif ds.ndim in (2, 3) and _numeric(ds) and tid.get_class() != h5t.COMPOUND:
            name = _mask_for(key, masks, tuple(ds.shape[:2]))
            if name is not None:
                flag = _as_flag(read_rows(masks[name], file=file, variable=name), mask=name, file=file)
                found = _plain(key, ds, flag, name, keep, file, last=False)
                found.consumed = (key, name)
            elif ds.ndim == 3 and ds.shape[2] >= 2 and ds.dtype.kind == "f":
                found = _last_feature(key, ds, keep, file)
        if found is not None and found.columns:
            out.append(found)
    return out


def _compound(key: str, ds: h5py.Dataset, tid: Any, keep: Keep, file: str) -> Padded | None:
    names = [tid.get_member_name(i).decode(errors="replace") for i in range(tid.get_nmembers())]
    flag_field = next((f for f in MASK_FIELDS if f in names), None)
    if flag_field is None:
        return None
    cols = Columns()
    dtype = record_leaves(tid, key, cols, lambda name, k: name == f"{key}.{flag_field}" or keep(name, k))
    if dtype is None or f"{key}.{flag_field}" not in cols.columns:
        return None
    where = f"{key}.{flag_field}"
    raw = read_compound(ds, np.dtype([(flag_field, dtype[flag_field])]), 0, ds.shape[0], file=file)
    flag = _as_flag(raw[flag_field], mask=where, file=file)
    lengths = prefix_lengths(flag, key=key, mask=where, file=file)
    columns = [Column(c.name, key, c.path, c.index, ragged=True) for n, c in cols.columns.items() if n != where]
    return Padded(key, where, columns, lengths, flag, dtype, consumed=(key,))


def _plain(key: str, ds: h5py.Dataset, flag: np.ndarray, mask: str, keep: Keep, file: str, *,
           last: bool) -> Padded:
    lengths = prefix_lengths(flag, key=key, mask=mask, file=file)
    if ds.ndim == 2:
        columns = [Column(key, key, ragged=True)] if keep(key, key) else []
    else:
        width = ds.shape[2] - (1 if last else 0)
        columns = [Column(f"{key}[{j}]", key, (), (j,), ragged=True) for j in range(width)
                   if keep(f"{key}[{j}]", key)]
    return Padded(key, mask, columns, lengths, flag)


def _last_feature(key: str, ds: h5py.Dataset, keep: Keep, file: str) -> Padded | None:
    """JetNet's layout: the last feature is the mask, if it looks like one (see the module)."""
    whole = read_rows(ds, file=file, variable=key)
    last = whole[..., -1]
    if not bool(((last == 0) | (last == 1)).all()):
        return None
    flag = last == 1
    lengths = flag.sum(axis=1, dtype=np.int64)
    if not bool((flag == (np.arange(flag.shape[1]) < lengths[:, None])).all()):
        return None
    if bool((whole[~flag][:, :-1] != 0).any()):
        return None
    where = f"{key}[{ds.shape[2] - 1}]"
    found = _plain(key, ds, flag, where, keep, file, last=True)
    found.consumed = (key,)
    found._block = whole[flag]
    return found
