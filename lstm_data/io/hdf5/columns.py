"""The columns of an HDF5 group of plain arrays (lstm_ee's PyTables files, h5py files).

Every dataset of the group gives columns by what it holds:

========================================  ==============================================
dataset                                   columns
========================================  ==============================================
``(n,)`` numbers (float, int, bool, enum)  one scalar column, the dataset's name (an enum
                                          reads as its integer codes)
``(n, k)``, ``(n, k, m)`` numbers          one scalar column per element: ``name[0]`` ...
                                          ``name[k-1]`` (``name[i][j]``)
``(n,)`` variable-length numbers           one prong variable (PyTables ``VLArray``);
                                          of arrays (an atom of shape ``(k,)``): the
                                          variables ``name[0]`` ... of one group
``(n,)`` compound (a PyTables ``Table``)   one scalar column per numeric field,
                                          ``name.field`` (nested: ``name.pos.x``; array
                                          fields: ``name.v[0]`` ...)
========================================  ==============================================

What is not numbers is **skipped** and listed (:attr:`Columns.skipped`, name -> what it
holds): strings, HDF5 time types (``Time32``/``Time64`` columns, which h5py cannot read),
complex numbers, opaque bytes, references, PyTables pseudo-atoms (pickled objects,
variable-length strings), single values (shape ``()``), variable-length data of more than
one dimension, subgroups. A compound whose numeric fields are read keeps them even when
other fields are skipped: the read asks HDF5 for those fields only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import h5py
import numpy as np
from h5py import h5t

from lstm_data.errors import FormatError
from lstm_data.io.hdf5.checks import load_filter_plugins, missing_filter_error

__all__ = ["Column", "Columns", "classify", "read_compound", "skip_reason", "record_leaves"]

_NUMERIC_KINDS = "fiub"
_TYPE_WORDS = {h5t.OPAQUE: "opaque bytes", h5t.REFERENCE: "object references",
               h5t.VLEN: "variable-length values"}
#: PyTables pseudo-atoms, stored as vlen bytes or code points but not numbers
_PSEUDO_ATOMS = {"object": "pickled Python objects (PyTables ObjectAtom)",
                 "vlstring": "variable-length byte strings (PyTables VLStringAtom)",
                 "vlunicode": "variable-length unicode strings (PyTables VLUnicodeAtom)"}


@dataclass
class Column:
    """One output column of a dataset.

    Attributes
    ----------
    name : str
        The column's name (``calE``, ``dir[1]``, ``events.pos.x``).
    key : str
        The dataset's name in its group.
    path : tuple of str
        Field names inside a compound (empty for a plain dataset).
    index : tuple of int
        Element of a fixed-size array (empty for one number per row).
    ragged : bool
        A variable-length column (a prong variable).
    """

    name: str
    key: str
    path: tuple[str, ...] = ()
    index: tuple[int, ...] = ()
    ragged: bool = False

    def take(self, block: np.ndarray) -> np.ndarray:
        """This column of a block read from its dataset (structured or plain, ``(rows, ...)``)."""
        for f in self.path:
            block = block[f]
        return block[(slice(None),) + self.index] if self.index else block


@dataclass
class Columns:
    """What a group's datasets give: columns by name, per-dataset read dtypes, skipped ones.

    Attributes
    ----------
    columns : dict
        Column name -> :class:`Column`, in file order.
    datasets : dict
        Dataset name -> the dataset.
    rows : dict
        Dataset name -> its rows (first dimension).
    compound : dict
        Dataset name -> the numpy dtype of its numeric fields (compound datasets only).
    skipped : dict
        Name (dataset, or ``dataset.field``) -> what it holds, for what is not numbers.
    """

    columns: dict[str, Column] = field(default_factory=dict)
    datasets: dict[str, h5py.Dataset] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    compound: dict[str, np.dtype] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def add(self, col: Column) -> None:
        if col.name in self.columns:
            raise FormatError(f"two columns are named {col.name!r} (datasets {self.columns[col.name].key!r} "
                              f"and {col.key!r})", variable=col.name)
        self.columns[col.name] = col


def _suffixes(shape: tuple[int, ...]) -> list[tuple[tuple[int, ...], str]]:
    """``[((0,), "[0]"), ...]`` for every element of a fixed ``shape`` (``[((), "")]`` for ``()``)."""
    return [(idx, "".join(f"[{i}]" for i in idx)) for idx in np.ndindex(*shape)] if shape else [((), "")]


def _pseudo_atom(ds: h5py.Dataset) -> str | None:
    value = ds.attrs.get("PSEUDOATOM")
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def skip_reason(tid: Any) -> str | None:
    """Why an HDF5 type is not numbers, naming the type (``None`` for integers, floats, bitfields,
    enums)."""
    cls = tid.get_class()
    if cls in (h5t.INTEGER, h5t.FLOAT, h5t.BITFIELD, h5t.ENUM):
        try:
            dt = tid.dtype
        except (TypeError, ValueError):  # e.g. 128-bit floats: no numpy type holds them
            return f"{tid.get_size() * 8}-bit numbers that numpy cannot represent"
        return None if dt.kind in _NUMERIC_KINDS else f"{dt} values"
    if cls == h5t.COMPOUND:
        try:
            if tid.dtype.kind == "c":
                return f"complex numbers ({tid.dtype})"
        except TypeError:
            pass
        return "records"
    if cls == h5t.ARRAY:
        inner = skip_reason(tid.get_super())
        return None if inner is None else f"arrays of {inner}"
    if cls == h5t.STRING:
        return "variable-length strings" if tid.is_variable_str() else f"strings of {tid.get_size()} bytes"
    if cls == h5t.TIME:
        return f"{tid.get_size() * 8}-bit HDF5 time values (h5py cannot read them)"
    return _TYPE_WORDS.get(cls, "values of an unknown HDF5 type")


Keep = Callable[[str, str], bool]


def record_leaves(tid: Any, key: str, out: Columns, keep: Keep = lambda name, key: True) -> Any:
    """Add the numeric fields of compound type ``tid`` of dataset ``key`` to ``out`` as columns
    (``key.field``); return the numpy dtype that reads them (``None``: no numeric field)."""
    return _leaves(tid, (), key, out, keep)


def _leaves(tid: Any, path: tuple[str, ...], key: str, out: Columns, keep: Keep) -> Any:
    """Add the numeric leaves of compound type ``tid`` as columns; return their numpy dtype (or None)."""
    fields: list[tuple[str, np.dtype[Any]] | tuple[str, np.dtype[Any], tuple[int, ...]]] = []
    for i in range(tid.get_nmembers()):
        name = tid.get_member_name(i).decode(errors="replace")
        sub = tid.get_member_type(i)
        where = ".".join((key,) + path + (name,))
        cls = sub.get_class()
        if cls == h5t.COMPOUND and skip_reason(sub) == "records":
            inner = _leaves(sub, path + (name,), key, out, keep)
            if inner is not None:
                fields.append((name, inner))
            continue
        why = skip_reason(sub)
        if why is not None:
            if keep(where, key):
                out.skipped[where] = why
            continue
        shape = tuple(sub.get_array_dims()) if cls == h5t.ARRAY else ()
        base = sub.get_super() if cls == h5t.ARRAY else sub
        taken = [(idx, s) for idx, s in _suffixes(shape) if keep(where + s, key)]
        if not taken:
            continue
        for idx, s in taken:
            out.add(Column(where + s, key, path + (name,), idx))
        dt = np.dtype(base.dtype.str)  # an enum's or bool's base integer type as numpy has it
        if base.dtype.kind == "b":
            dt = np.dtype(bool)
        fields.append((name, dt, shape) if shape else (name, dt))
    return np.dtype(fields) if fields else None


def classify(group: h5py.Group, get: Callable[[str], Any], *, keep: Keep = lambda name, key: True,
             file: str) -> Columns:
    """The columns of every dataset of ``group`` (see the module documentation).

    Parameters
    ----------
    group
        The group whose members are read.
    get
        Member name -> the object (links checked: see :func:`lstm_data.io.hdf5.checks.member`).
    keep
        ``(column name, dataset name)`` -> whether the column is wanted
        (``columns``/``exclude``); datasets without a wanted column are not read.
    """
    out = Columns()
    for key in group:
        obj = get(key)
        if obj is None:
            continue
        if not isinstance(obj, h5py.Dataset):
            if keep(key, key):
                out.skipped[key] = "a group (open it with root=...)"
            continue
        try:
            _dataset(obj, key, out, keep)
        except FormatError as exc:
            raise exc.located(file=file) from None
    return out


def _dataset(ds: h5py.Dataset, key: str, out: Columns, keep: Keep) -> None:
    tid = ds.id.get_type()
    cls = tid.get_class()
    if ds.shape is None or ds.ndim == 0:
        if keep(key, key):
            out.skipped[key] = ("no values (a null dataspace)" if ds.shape is None
                                else "a single value (shape ()), not a column")
        return
    if cls == h5t.COMPOUND and skip_reason(tid) == "records":
        if ds.ndim != 1:
            if keep(key, key):
                out.skipped[key] = f"records of shape {ds.shape}"
            return
        dt = _leaves(tid, (), key, out, keep)
        if dt is not None:
            out.datasets[key], out.rows[key], out.compound[key] = ds, ds.shape[0], dt
        return
    if cls == h5t.VLEN:
        atom = _pseudo_atom(ds)
        sup = tid.get_super()
        inner = skip_reason(sup)
        shape = tuple(sup.get_array_dims()) if sup.get_class() == h5t.ARRAY else ()
        if atom is not None:
            why = _PSEUDO_ATOMS.get(atom, f"PyTables {atom!r} pseudo-atoms")
        elif inner is not None:
            why = f"variable-length {inner}"
        elif ds.ndim != 1:
            why = f"variable-length numbers of shape {ds.shape}"
        else:
            why = None
        if why is not None:
            if keep(key, key):
                out.skipped[key] = why
            return
        taken = [(idx, s) for idx, s in _suffixes(shape) if keep(key + s, key)]
        for idx, s in taken:  # arrays per value (a PyTables atom of shape (3,)): one variable each
            out.add(Column(key + s, key, (), idx, ragged=True))
        if taken:
            out.datasets[key], out.rows[key] = ds, ds.shape[0]
        return
    why = skip_reason(tid)
    pseudo = _pseudo_atom(ds)
    if why is None and pseudo is not None:
        why = _PSEUDO_ATOMS.get(pseudo, "PyTables pseudo-atoms")
    if why is not None:
        if keep(key, key):
            out.skipped[key] = why
        return
    if cls == h5t.ARRAY:  # an array type per element: as one more dimension
        shape = ds.shape[1:] + tuple(tid.get_array_dims())
    else:
        shape = ds.shape[1:]
    taken = [(idx, s) for idx, s in _suffixes(shape) if keep(key + s, key)]
    for idx, s in taken:
        out.add(Column(key + s, key, (), idx))
    if taken:
        out.datasets[key], out.rows[key] = ds, ds.shape[0]


def read_compound(ds: h5py.Dataset, dtype: np.dtype, lo: int, hi: int, *, file: str) -> np.ndarray:
    """Records ``lo:hi`` of compound ``ds`` (of any rank: ``(hi - lo,) + ds.shape[1:]``), only the
    fields of ``dtype`` (HDF5 converts by name).

    Raises
    ------
    FormatError
        HDF5 refuses the read (a damaged chunk, a missing filter; names file and dataset).
    """
    out = np.empty((max(0, hi - lo),) + tuple(ds.shape[1:]), dtype=dtype)
    if hi <= lo or out.size == 0:
        return out
    fspace = ds.id.get_space()
    fspace.select_hyperslab((lo,) + (0,) * (ds.ndim - 1), out.shape)
    mspace = h5py.h5s.create_simple(out.shape)
    try:
        ds.id.read(mspace, fspace, out, h5t.py_create(dtype))
    except OSError as exc:
        missing = missing_filter_error(ds, file=file)
        if missing is not None:
            if load_filter_plugins():
                return read_compound(ds, dtype, lo, hi, file=file)
            raise missing from exc
        key = ds.name.lstrip("/")
        raise FormatError(f"cannot read records {lo}:{hi} of dataset {key!r}: damaged or unreadable "
                          f"(HDF5: {exc})", file=file, variable=key) from exc
    return out
