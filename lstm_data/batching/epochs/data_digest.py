"""A digest of every value of a dataset, one per file part, for the identity of saved states.

A part is a file of the data (a part of several files, or the rows one file gave
to data read into RAM), or the whole dataset when it has no files. Its digest is
made of

- its files' bytes, when its rows are read from local files on demand (HDF5,
  zarr, Parquet, ROOT left on disk): each file's digest is kept in memory under
  its (path, size, mtime_ns, inode), so a file is read for it once per process;
- else the values it holds (every scalar column and every ragged group's values
  and row lengths), read from RAM, or through the reader in runs of rows.

A file changed less than :data:`SETTLE_SECONDS` ago is digested again each
time: its mtime may not yet tell a later write of the same size apart.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
import numpy as np

from lstm_data.batching.spec.derived import DerivedDataset, file_bounds
from lstm_data.data.concat import ConcatDataset
from lstm_data.data.dataset import Dataset
from lstm_data.errors import redact

__all__ = ["part_digests", "file_digest", "SETTLE_SECONDS"]

#: a file's digest is kept once its mtime is this many seconds old
SETTLE_SECONDS = 2.0
#: bytes read at a time from a file being digested
_READ_BYTES = 8 << 20
#: rows read at a time from a part read on demand that is not a local file
_READ_ROWS = 65536
#: hex digits kept of each part's digest
_HEX = 16

_cache: dict[tuple[str, int, int, int], str] = {}
_cache_lock = threading.Lock()


def part_digests(dataset: Dataset) -> list[tuple[str, str]]:
    """The digest of every value of each file part of ``dataset``.

    Parameters
    ----------
    dataset
        The data batches are made from (derived variables are left out: the spec
        that makes them is part of a state's identity; a selection's rows too).

    Returns
    -------
    list of (str, str)
        One ``(label, digest)`` per part, in row order: the label names the part's
        files (credentials of URLs left out), or ``"part i"`` for data without files.
    """
    while isinstance(dataset, DerivedDataset):
        dataset = dataset.base
    if isinstance(dataset, ConcatDataset):
        parts = _flat_parts(dataset)
        return [(_label(p, i), _dataset_digest(p)) for i, p in enumerate(parts)]
    bounds = file_bounds(dataset)
    if bounds is None or len(bounds) < 2:
        return [(_label(dataset, 0), _dataset_digest(dataset))]
    source = tuple(dataset.source)
    labels = [redact(s) for s in source] if len(source) == len(bounds) - 1 else [
        f"part {i}" for i in range(len(bounds) - 1)]
    return [(labels[i], _values_digest(dataset, int(bounds[i]), int(bounds[i + 1])))
            for i in range(len(bounds) - 1)]


def _flat_parts(dataset: Dataset) -> list[Dataset]:
    if not isinstance(dataset, ConcatDataset):
        return [dataset]
    return [p for d in dataset.datasets for p in _flat_parts(d)]


def _label(part: Dataset, i: int) -> str:
    return redact(", ".join(part.source)) if part.source else f"part {i}"


def _dataset_digest(part: Dataset) -> str:
    files = _local_files(part)
    if files is None:
        return _values_digest(part, 0, len(part))
    h = hashlib.sha256()
    for path in files:
        h.update(file_digest(path).encode())
    return h.hexdigest()[:_HEX]


def _local_files(part: Dataset) -> list[str] | None:
    """The files a part read on demand reads (a directory's, walked in name order); ``None``: none such."""
    if part.in_ram or not part.source or any("://" in s or not os.path.exists(s) for s in part.source):
        return None
    files: list[str] = []
    for source in part.source:
        if not os.path.isdir(source):
            files.append(source)
            continue
        for root, dirs, names in os.walk(source):
            dirs.sort()
            files.extend(os.path.join(root, n) for n in sorted(names))
    return files


def file_digest(path: str) -> str:
    """The digest of a file's name (relative to nothing: as given) and bytes, kept per (path, size, mtime, inode).

    Parameters
    ----------
    path
        A local file.

    Returns
    -------
    str
        Hex digits of its SHA-256.
    """
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino)
    with _cache_lock:
        kept = _cache.get(key)
    if kept is not None:
        return kept
    h = hashlib.sha256()
    buffer = bytearray(_READ_BYTES)
    view = memoryview(buffer)
    with open(path, "rb") as f:
        while n := f.readinto(buffer):
            h.update(view[:n])
    digest = h.hexdigest()[:_HEX]
    if time.time_ns() - st.st_mtime_ns > SETTLE_SECONDS * 1e9:
        with _cache_lock:
            _cache[key] = digest
    return digest


def _values_digest(dataset: Dataset, lo: int, hi: int) -> str:
    """The digest of the values of rows ``lo .. hi - 1``: every scalar column, then every group's
    values and row lengths (the same whether read whole or in runs of rows)."""
    whole = dataset.in_ram
    step = max(hi - lo, 1) if whole else _READ_ROWS
    digests = []
    for name in dataset.scalar_names:
        h = _Hasher()
        column = dataset.scalar(name) if whole else None
        for a in range(lo, hi, step):
            b = min(a + step, hi)
            h.update(column[a:b] if column is not None else dataset.scalar(name, slice(a, b)))
        digests.append(h.hexdigest())
    for group in dataset.groups:
        h, lengths = _Hasher(), _Hasher()
        if whole:
            values, offsets = dataset.ragged(group)
            h.update(values[int(offsets[lo]):int(offsets[hi])])
            lengths.update(np.diff(offsets[lo:hi + 1]))
        else:
            for a in range(lo, hi, step):
                values, offsets = dataset.ragged_range(group, a, min(a + step, hi))
                h.update(values)
                lengths.update(np.diff(offsets))
        digests += [h.hexdigest(), lengths.hexdigest()]
    return hashlib.sha256(" ".join(digests).encode()).hexdigest()[:_HEX]


class _Hasher:
    """SHA-256 of the bytes of arrays fed one after another, and of their dtypes."""

    def __init__(self) -> None:
        self._h = hashlib.sha256()
        self._dtypes: list[str] = []

    def update(self, array: np.ndarray) -> None:
        array = np.ascontiguousarray(array)  # no copy when it is contiguous
        if array.dtype.str not in self._dtypes:
            self._dtypes.append(array.dtype.str)
        self._h.update(memoryview(array).cast("B"))

    def hexdigest(self) -> str:
        return ",".join(self._dtypes) + ":" + self._h.hexdigest()
