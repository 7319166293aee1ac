"""L5Kit zarr v2 datasets: interval relations as ragged groups.

An L5Kit store holds structured arrays (``scenes``, ``frames``, ``agents``,
``traffic_light_faces``). A parent record's ``[start, end)`` field such as
``frames.agent_index_interval`` points into a child array; we expose it as a
ragged group over the parent rows:

* rows are the parent's records (``frames`` by default);
* scalars are the parent's numeric fields, subarrays flattened
  (``ego_translation_0``, ``ego_rotation_1_2``); interval fields are left out;
* each relation is a group named after the child array, whose variables are the
  child's numeric fields flattened likewise (``centroid_0``, ``label_probabilities_16``).

The parent loads on open (it holds the intervals); child chunks are decoded on
demand, each touched chunk once per request, with a small LRU cache across requests.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np
from numpy.typing import DTypeLike

from lstm_data.errors import FormatError, SchemaError
from lstm_data.io.ours.ondisk import DiskGroup, OnDiskDataset
from lstm_data.io.l5kit.zarr_v2 import V2Array, list_v2_arrays

__all__ = ["L5KitDataset", "read_l5kit", "flat_fields", "records_to_matrix"]

_INTERVAL_SUFFIX = "_index_interval"


def flat_fields(dtype: np.dtype[Any]) -> list[tuple[str, str]]:
    """Numeric fields of a structured dtype as ``(field, flat variable name)`` pairs.

    A subarray field yields one name per element in C order: ``centroid`` of shape
    (2,) gives ``centroid_0, centroid_1``; ``ego_rotation`` of shape (3, 3) gives
    ``ego_rotation_0_0`` ... ``ego_rotation_2_2``. Strings and nested records are skipped.
    """
    out: list[tuple[str, str]] = []
    for field in dtype.names or ():
        sub = dtype[field]
        base, shape = (sub.subdtype if sub.subdtype else (sub, ()))
        if base.kind not in "fiub":
            continue
        if not shape:
            out.append((field, field))
            continue
        for idx in np.ndindex(*shape):
            out.append((field, field + "_" + "_".join(map(str, idx))))
    return out


def records_to_matrix(records: np.ndarray, fields: list[str], dtype: DTypeLike) -> np.ndarray:
    """Copy numeric ``fields`` of structured ``records`` into an ``(n, V)`` matrix.

    ``fields`` lists each field once, in order; subarrays spread over their
    flattened columns. One vectorised copy per field.
    """
    n = len(records)
    widths = [int(np.prod(records.dtype[f].shape, dtype=np.int64)) for f in fields]
    out = np.empty((n, sum(widths)), dtype=dtype)
    col = 0
    for f, w in zip(fields, widths):
        out[:, col:col + w] = records[f].reshape(n, w)
        col += w
    return out


def _child_of(field: str, arrays: list[str]) -> str | None:
    base = field[: -len(_INTERVAL_SUFFIX)]
    for candidate in (base, base + "s", base + "es"):
        if candidate in arrays:
            return candidate
    return None


class L5KitDataset(OnDiskDataset):
    """Rows of one L5Kit array with its interval relations as ragged groups.

    Parameters
    ----------
    path
        The ``*.zarr`` directory (zarr v2).
    parent
        Array whose records are the rows (default ``frames``).
    relations
        ``{group (child array): interval field}``; default: every parent field
        ``X_index_interval`` whose child array ``X``/``Xs`` exists.
    dtype
        Dtype of group values; default the common type of the child's numeric fields.
    cache_chunks
        Decoded child chunks kept between requests.

    Attributes
    ----------
    arrays : dict of V2Array
        The opened arrays; ``arrays[name].decoded`` counts chunk decompressions.
    """

    def __init__(self, path: str | os.PathLike[str], *, parent: str = "frames",
                 relations: Mapping[str, str] | None = None, dtype: DTypeLike | None = None,
                 cache_chunks: int = 4) -> None:
        self._reopen = ((path,), {"parent": parent, "relations": relations, "dtype": dtype,
                                  "cache_chunks": cache_chunks})
        root = Path(path)
        name = str(root)
        available = list_v2_arrays(root)
        if parent not in available:
            raise FormatError(f"no array {parent!r} in the L5Kit store (arrays: {available})",
                              file=name)
        self.arrays = {parent: V2Array(root / parent, cache_chunks=0)}
        records = self.arrays[parent].read(0, len(self.arrays[parent]))
        if relations is None:
            found: dict[str, str] = {}
            for field in records.dtype.names or ():
                child = _child_of(field, available) if field.endswith(_INTERVAL_SUFFIX) else None
                if child is not None:
                    found[child] = field
            relations = found
        interval_fields = {f for f in records.dtype.names or () if f.endswith(_INTERVAL_SUFFIX)}
        interval_fields |= set(relations.values())
        scalars: dict[str, np.ndarray] = {}
        pairs = [(f, flat) for f, flat in flat_fields(records.dtype) if f not in interval_fields]
        for field in dict.fromkeys(f for f, _ in pairs):
            col = records[field].reshape(len(records), -1)
            for k, flat in enumerate(flat for f, flat in pairs if f == field):
                scalars[flat] = np.ascontiguousarray(col[:, k])
        groups: dict[str, DiskGroup] = {}
        for child, field in relations.items():
            if child not in available:
                raise FormatError(f"relation {field!r} points to missing array {child!r}",
                                  file=name, variable=field)
            if field not in (records.dtype.names or ()):
                raise SchemaError(f"{parent!r} has no field {field!r}", file=name, variable=field)
            self.arrays[child] = V2Array(root / child, cache_chunks=cache_chunks)
            groups[child] = self._relation(name, parent, records[field], child, dtype)
        self._setup(len(records), scalars, groups, (name,))

    def _relation(self, name: str, parent: str, intervals: np.ndarray, child: str,
                  dtype: DTypeLike | None) -> DiskGroup:
        arr = self.arrays[child]
        intervals = np.asarray(intervals, dtype=np.int64).reshape(len(intervals), -1)
        if intervals.shape[1] != 2:
            raise FormatError(f"interval field of {parent!r} -> {child!r} must hold 2 numbers",
                              file=name, variable=child)
        starts, ends = np.ascontiguousarray(intervals[:, 0]), np.ascontiguousarray(intervals[:, 1])
        bad = np.flatnonzero((starts < 0) | (ends < starts) | (ends > len(arr)))
        if len(bad):
            row = int(bad[0])
            raise FormatError(f"interval [{starts[row]}, {ends[row]}) of {parent!r} row {row} is "
                              f"outside {child!r} (length {len(arr)})",
                              file=name, row=row, variable=child)
        pairs = flat_fields(arr.dtype)
        fields = list(dict.fromkeys(f for f, _ in pairs))
        if not fields:
            raise FormatError(f"array {child!r} has no numeric fields", file=name, variable=child)
        out_dtype = np.dtype(dtype) if dtype is not None else np.result_type(
            *[arr.dtype[f].base for f in fields])

        def read(lo: int, hi: int) -> np.ndarray:
            return records_to_matrix(arr.read(lo, hi), fields, out_dtype)

        return DiskGroup(names=[flat for _, flat in pairs], starts=starts, ends=ends,
                         n_values=len(arr), chunk_len=arr.chunk_len, read=read, dtype=out_dtype, key=child)


def read_l5kit(path: str | os.PathLike[str], **options: Any) -> L5KitDataset:
    """Open an L5Kit zarr v2 store (see :class:`L5KitDataset`)."""
    return L5KitDataset(path, **options)
