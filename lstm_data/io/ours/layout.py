"""Our on-disk layout (docs: formats), shared by the zarr v3 and HDF5 readers and writers.

Root attributes::

    lstm_data_format   "lstm_data"
    lstm_data_version  1
    lstm_data_layout   {"n_rows": N,
                        "scalars": {variable: node key},
                        "groups": {group: {"key": node key, "names": [variables]}},
                        "requires": ["manifest"]}   (zarr stores written with a manifest)

Scalars are 1-D arrays at the root; each ragged group is a subgroup holding
``offsets`` (N + 1, int64) and ``values`` (total, V). The layout attribute is
written last, so a half-written store is never mistaken for a complete one.

zarr stores also carry ``lstm_data_every_chunk_stored: true`` (:data:`EVERY_CHUNK_ATTR`):
every chunk was written, all-zero ones too, so a missing chunk file is damage
(a ``FormatError``), not the fill value. Stores written before lack it; there a
lost chunk cannot be told from zeros (:data:`OLD_ZARR_NOTE`).

Readers check what they load at open (:func:`check_scalar`,
:func:`check_group_arrays`): scalars and values must be numeric (float, integer,
bool), offsets integers that start at 0, never decrease and end at
``len(values)``. A bad array is a ``FormatError`` naming the file, the
variable or group, the array and (for offsets) the first bad row. Values are
never read for this; only their dtype and shape.
"""
from __future__ import annotations

import json
import re
from typing import Any, Mapping, TypeVar

import numpy as np

from lstm_data.errors import FormatError

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "node_keys", "make_layout", "parse_layout",
           "layout_attrs", "is_ours", "CHUNK_BYTES", "value_dtype", "check_scalar",
           "check_group_arrays", "stored_array", "scalar_column", "BATCH_STORE_ATTR",
           "EVERY_CHUNK_ATTR", "every_chunk_stored", "OLD_ZARR_NOTE", "LAYOUT_ATTR"]

FORMAT_NAME = "lstm_data"
FORMAT_VERSION = 1
#: target size of one uncompressed chunk
CHUNK_BYTES = 1 << 20
#: root attribute holding the layout (which records, in zarr stores, that the manifest is required)
LAYOUT_ATTR = "lstm_data_layout"
#: root attribute that marks a store of precomputed batches (:mod:`lstm_data.store`, which
#: writes it); a reader that meets it says to use ``open_batches`` instead
BATCH_STORE_ATTR = "lstm_data_batches"
#: root attribute of a zarr store whose every chunk was written (none left out as fill value)
EVERY_CHUNK_ATTR = "lstm_data_every_chunk_stored"
#: what ``inspect`` says of a zarr store without :data:`EVERY_CHUNK_ATTR` (the reader adds
#: how to rewrite it)
OLD_ZARR_NOTE = ("written by an lstm_data before every chunk was stored: a lost or deleted chunk "
                 "reads back as zeros here, indistinguishable from stored zeros, and chunks carry "
                 "no checksum")

#: dtype kinds of stored numbers: float, signed and unsigned integer, bool
_NUMERIC_KINDS = "fiub"
#: what the ``dtype`` option may ask for
_VALUE_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

_SAFE_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")
#: node keys readers accept (those of every version of our writers)
_STORED_KEY = re.compile(r"^[A-Za-z0-9_.\-]+$")
#: longest name used as a node key (file systems allow 255 bytes per path component)
_MAX_KEY = 100

A = TypeVar("A")
#: names that mean something in a store, never a variable's node: zarr's metadata files, and
#: our own nodes (the manifest), whatever their case
_RESERVED = {"zarr.json", "c", "_lstm_data_manifest"}


def _usable(name: str) -> bool:
    """Whether ``name`` can be a node key as it is: one plain path component of our store."""
    return (bool(_SAFE_KEY.match(name)) and len(name) <= _MAX_KEY and not name.startswith("__")
            and name.casefold() not in _RESERVED and not name.casefold().startswith("_lstm_data"))


def _key_for(name: str, fallback: str, taken: set[str]) -> str:
    """``name`` when it is a usable node name (see :func:`_usable`), else ``fallback``; never a
    key taken already, case-insensitively (``A`` and ``a`` are one file on some file systems)."""
    key = name if _usable(name) and name.casefold() not in taken else fallback
    k = 0
    while key.casefold() in taken:
        k += 1
        key = f"{fallback}_{k}"
    taken.add(key.casefold())
    return key


def node_keys(scalar_names: list[str], groups: Mapping[str, list[str]]
              ) -> tuple[dict[str, str], dict[str, str]]:
    """Store keys for scalars and groups: the names themselves when safe and unique.

    A name that is not one plain path component (``/``, ``..``, a leading ``.``,
    too long) or that means something in a store (``zarr.json``, ``c``, our
    manifest) is stored under a generated key (``_scalar3``, ``_group1``); the
    layout attribute maps every variable to its key, so names come back exactly.

    Returns
    -------
    scalars : dict, variable -> key
    groups : dict, group -> key
    """
    taken: set[str] = set()
    group_keys = {g: _key_for(g, f"_group{i}", taken) for i, g in enumerate(groups)}
    scalar_keys = {s: _key_for(s, f"_scalar{i}", taken) for i, s in enumerate(scalar_names)}
    return scalar_keys, group_keys


def make_layout(n_rows: int, scalar_keys: Mapping[str, str], group_keys: Mapping[str, str],
                groups: Mapping[str, list[str]]) -> dict[str, Any]:
    """The ``lstm_data_layout`` attribute."""
    return {"n_rows": int(n_rows), "scalars": dict(scalar_keys),
            "groups": {g: {"key": group_keys[g], "names": list(groups[g])} for g in groups}}


def layout_attrs(layout: dict[str, Any], *, as_json: bool) -> dict[str, Any]:
    """Root attributes to write (JSON text for HDF5, a mapping for zarr)."""
    return {"lstm_data_format": FORMAT_NAME, "lstm_data_version": FORMAT_VERSION,
            LAYOUT_ATTR: json.dumps(layout) if as_json else layout}


def is_ours(attrs: Mapping[str, Any]) -> bool:
    """Whether root attributes mark our layout."""
    fmt = attrs.get("lstm_data_format")
    return (fmt.decode() if isinstance(fmt, bytes) else fmt) == FORMAT_NAME


def every_chunk_stored(attrs: Mapping[str, Any]) -> bool:
    """Whether root attributes record that every chunk of the store was written."""
    return attrs.get(EVERY_CHUNK_ATTR) is True


def parse_layout(attrs: Mapping[str, Any], *, file: str) -> dict[str, Any]:
    """Validate root attributes and return the layout mapping.

    Raises
    ------
    FormatError
        Not our layout, a newer version, or a damaged layout attribute.
    """
    if not is_ours(attrs):
        if BATCH_STORE_ATTR in attrs:  # made by precompute
            raise FormatError("this is a store of precomputed batches, not a dataset; open it "
                              "with lstm_data.open_batches()", file=file)
        raise FormatError("not an lstm_data store (root attribute 'lstm_data_format' missing; "
                          "an interrupted write leaves it out)", file=file)
    version = int(attrs.get("lstm_data_version", -1))
    if version > FORMAT_VERSION:
        raise FormatError(f"layout version {version} is newer than this lstm_data "
                          f"(reads up to {FORMAT_VERSION}); upgrade lstm_data", file=file)
    raw: Any = attrs.get(LAYOUT_ATTR)  # JSON text (HDF5), a mapping (zarr), or damage
    try:
        layout = json.loads(raw) if isinstance(raw, (str, bytes)) else dict(raw)
        layout["n_rows"] = int(layout["n_rows"])
        layout["scalars"] = dict(layout["scalars"])
        layout["groups"] = {g: {"key": str(v["key"]), "names": list(v["names"])}
                            for g, v in dict(layout["groups"]).items()}
    except (TypeError, KeyError, ValueError) as exc:
        raise FormatError(f"damaged 'lstm_data_layout' attribute ({exc})", file=file) from None
    keys = list(layout["scalars"].values()) + [v["key"] for v in layout["groups"].values()]
    for key in keys:  # what our writers make: one plain path component, never outside the store
        if not (isinstance(key, str) and _STORED_KEY.match(key)) or key in (".", ".."):
            raise FormatError(f"damaged 'lstm_data_layout' attribute: node key {key!r} is not one "
                              "plain name inside the store", file=file)
    return layout


def value_dtype(dtype: Any, *, file: str) -> np.dtype | None:
    """The ``dtype`` reader option as a float dtype (``None`` keeps the stored dtypes).

    Raises
    ------
    ValueError
        ``dtype`` is not float32 or float64 (a cast to integers would silently
        truncate numbers).
    """
    if dtype is None:
        return None
    try:
        dt: np.dtype[Any] | None = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt not in _VALUE_DTYPES:
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r} (file {file})")
    return dt


def _check_numeric(what: str, dtype: Any, *, file: str, variable: str) -> None:
    """Raise ``FormatError`` unless ``dtype`` is float, integer or bool."""
    if np.dtype(dtype).kind not in _NUMERIC_KINDS:
        raise FormatError(f"{what} has dtype {dtype}; it must be numeric (float, integer or "
                          "bool)", file=file, variable=variable)


def stored_array(node: object, kind: type[A], key: str, *, file: str, variable: str) -> A:
    """``node`` (found at ``key``, ``None`` when absent) if it is an array, else ``FormatError``.

    ``kind`` is the array class of the reader's library (``h5py.Dataset``,
    ``zarr.Array``); anything else there is a group.
    """
    if node is None or not isinstance(node, kind):
        raise FormatError(f"damaged or incomplete: the layout names array {key!r}, which is "
                          f"{'missing' if node is None else 'a group'}", file=file,
                          variable=variable)
    return node


def scalar_column(var: str, key: str, array: Any, n_rows: int, dtype: np.dtype | None, *,
                  file: str) -> np.ndarray:
    """Stored scalar ``var`` (``array`` at ``key``) loaded, checked, cast to ``dtype`` if given."""
    col = np.asarray(array[...])
    check_scalar(var, key, col, n_rows, file=file)
    return col if dtype is None else col.astype(dtype, copy=False)


def check_scalar(var: str, key: str, column: np.ndarray, n_rows: int, *, file: str) -> None:
    """Raise ``FormatError`` unless a stored scalar is ``n_rows`` numbers.

    Parameters
    ----------
    var
        The variable.
    key
        Its node in the store, named in the message.
    column
        The loaded array.
    n_rows, file
        Rows of the dataset, and the store (for the message).
    """
    _check_numeric(f"scalar array {key!r}", column.dtype, file=file, variable=var)
    if column.shape != (n_rows,):
        raise FormatError(f"scalar array {key!r} has shape {column.shape}, expected ({n_rows},)",
                          file=file, variable=var)


def check_group_arrays(group: str, offsets: np.ndarray, values: Any, width: int, n_rows: int,
                       *, file: str, key: str | None = None) -> np.ndarray:
    """Check a stored group's ``offsets`` (loaded) and ``values`` (on disk, metadata only).

    Offsets must be integers, ``n_rows + 1`` long, start at 0, never decrease and end
    at ``len(values)``; values must be numeric of shape ``(total, width)``. The
    values themselves are not read. The cost is one vectorised pass over the
    offsets, which every reader loads at open anyway.

    Parameters
    ----------
    group
        The group's name.
    offsets
        The ``offsets`` array as stored (any dtype).
    values
        The on-disk ``values`` array (h5py or zarr; ``shape``/``ndim``/``dtype`` used).
    width, n_rows
        Variables of the group and rows of the dataset.
    file
        The store, for messages.
    key
        The group's node in the store (default: ``group``), for messages.

    Returns
    -------
    ndarray of int64
        The offsets.

    Raises
    ------
    FormatError
        Naming the file, the group, the array and, for offsets that decrease, the
        first row whose range runs backwards.
    """
    where = key if key is not None else group
    off_name, val_name = f"{where}/offsets", f"{where}/values"
    if np.dtype(offsets.dtype).kind not in "iu":
        raise FormatError(f"array {off_name!r} of group {group!r} has dtype {offsets.dtype}; "
                          "offsets must be integers", file=file, variable=group)
    if offsets.shape != (n_rows + 1,):
        raise FormatError(f"array {off_name!r} of group {group!r} has shape {offsets.shape}, "
                          f"expected ({n_rows + 1},) for {n_rows} rows", file=file, variable=group)
    _check_numeric(f"array {val_name!r} of group {group!r}", values.dtype, file=file,
                   variable=group)
    if values.ndim != 2 or values.shape[1] != width:
        raise FormatError(f"array {val_name!r} of group {group!r} has shape {values.shape}, "
                          f"expected (total, {width})", file=file, variable=group)
    offsets = offsets.astype(np.int64, copy=False)
    _check_offset_values(group, off_name, offsets, int(values.shape[0]), file=file)
    return offsets


def _check_offset_values(group: str, name: str, offsets: np.ndarray, total: int, *,
                         file: str) -> None:
    """Raise ``FormatError`` unless ``offsets`` start at 0, never decrease and end at ``total``."""
    if offsets[0] != 0:
        raise FormatError(f"array {name!r} of group {group!r} starts at {offsets[0]}; offsets "
                          "must start at 0", file=file, variable=group, row=0)
    back = np.flatnonzero(offsets[1:] < offsets[:-1])
    if len(back):
        row = int(back[0])
        raise FormatError(f"array {name!r} of group {group!r} decreases at row {row} (value "
                          f"range [{offsets[row]}, {offsets[row + 1]})); offsets must never "
                          "decrease", file=file, variable=group, row=row)
    if offsets[-1] != total:
        raise FormatError(f"array {name!r} of group {group!r} ends at {offsets[-1]} but the "
                          f"group has {total} values; offsets must end at len(values)",
                          file=file, variable=group, row=len(offsets) - 2)
