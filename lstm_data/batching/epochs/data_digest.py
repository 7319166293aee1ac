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
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np

from lstm_data._util.cores import available_cores
from lstm_data.batching.spec.derived import DerivedDataset, file_bounds
from lstm_data.data.concat import ConcatDataset
from lstm_data.data.dataset import Dataset
from lstm_data.errors import redact

__all__ = ["part_digests", "file_digest", "SETTLE_SECONDS"]

#: a file's digest is kept once its mtime is this many seconds old
SETTLE_SECONDS = 2.0
#: bytes hashed at a time (a piece of a column or a file): pieces are hashed on several threads
_PIECE = 8 << 20
#: pieces given to each hashing thread ahead of it, at most
_PENDING = 2
#: threads hashing pieces, at most
_MAX_THREADS = 8
#: rows read at a time from a part read on demand that is not a local file
_READ_ROWS = 65536
#: hex digits kept of each part's digest
_HEX = 16

_cache: dict[tuple[str, int, int, int], str] = {}
_cache_lock = threading.Lock()


def part_digests(dataset: Dataset, bounds: np.ndarray | None = None) -> list[tuple[str, str]]:
    """The digest of every value of each file part of ``dataset``.

    Parameters
    ----------
    dataset
        The data batches are made from (derived variables are left out: the spec
        that makes them is part of a state's identity; a selection's rows too).
    bounds
        The row bounds of its files as a view of it knows them (default: those the
        dataset knows of).

    Returns
    -------
    list of (str, str)
        One ``(label, digest)`` per part, in row order: the label names the part's
        files (credentials of URLs left out), or is empty for data without files.
    """
    if isinstance(dataset, DerivedDataset):
        bounds = None  # the base's own parts are hashed
    while isinstance(dataset, DerivedDataset):
        dataset = dataset.base
    workers = _workers()
    with ThreadPoolExecutor(workers, thread_name_prefix="lstm_data-digest") as pool:
        hash_with = _Threads(pool, workers)
        if isinstance(dataset, ConcatDataset):
            return [(_label(p), _with_values(_dataset_digest(p, hash_with), per_file))
                    for p, per_file in _flat_parts(dataset, {})]
        bounds = file_bounds(dataset) if bounds is None else bounds
        if bounds is None or len(bounds) < 2:
            return [(_label(dataset), _dataset_digest(dataset, hash_with))]
        source = tuple(dataset.source)
        labels = [redact(s) for s in source] if len(source) == len(bounds) - 1 else [""] * (len(bounds) - 1)
        return [(labels[i], _values_digest(dataset, int(bounds[i]), int(bounds[i + 1]), hash_with))
                for i in range(len(bounds) - 1)]


class _Threads(NamedTuple):
    """The threads that hash pieces of a stream, and how many there are."""

    pool: Executor | None = None
    workers: int = 1

    def hasher(self) -> "_Hasher":
        return _Hasher(self.pool, self.workers)


def _workers() -> int:
    """Threads for hashing: the cores this process may run on, at most :data:`_MAX_THREADS`."""
    return max(1, min(available_cores(), _MAX_THREADS))


def _flat_parts(dataset: Dataset, per_file: dict[str, str]) -> list[tuple[Dataset, dict[str, str]]]:
    """The parts of several files, each with its per-file columns' values (``ConcatDataset.part_values``)."""
    if not isinstance(dataset, ConcatDataset):
        return [(dataset, per_file)]
    return [p for i, d in enumerate(dataset.datasets) for p in _flat_parts(
        d, {**per_file, **{name: repr(values[i].item()) for name, values in dataset.part_values.items()}})]


def _with_values(digest: str, per_file: dict[str, str]) -> str:
    """A part's digest with the values its per-file columns give its rows."""
    if not per_file:
        return digest
    return hashlib.sha256((digest + repr(sorted(per_file.items()))).encode()).hexdigest()[:_HEX]


def _label(part: Dataset) -> str:
    return redact(", ".join(part.source))


def _dataset_digest(part: Dataset, threads: _Threads) -> str:
    files = _local_files(part)
    if files is None:
        return _values_digest(part, 0, len(part), threads)
    h = hashlib.sha256()
    for path in files:
        h.update(os.path.relpath(path, part.source[0]).encode() + b"\0")  # a directory's files by name
        h.update(file_digest(path, threads).encode())
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


def file_digest(path: str, threads: _Threads = _Threads()) -> str:
    """The digest of a file's name (relative to nothing: as given) and bytes, kept per (path, size, mtime, inode).

    Parameters
    ----------
    path
        A local file.
    threads
        Threads that hash its pieces (none: this one).

    Returns
    -------
    str
        Hex digits of its digest.
    """
    st = os.stat(path)
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino)
    with _cache_lock:
        kept = _cache.get(key)
    if kept is not None:
        return kept
    h = threads.hasher()
    with open(path, "rb") as f:
        while piece := f.read(_PIECE):
            h.feed(memoryview(piece))
    digest = h.hexdigest()[-_HEX:]
    if time.time_ns() - st.st_mtime_ns > SETTLE_SECONDS * 1e9:
        with _cache_lock:
            _cache[key] = digest
    return digest


def _values_digest(dataset: Dataset, lo: int, hi: int, threads: _Threads) -> str:
    """The digest of the values of rows ``lo .. hi - 1``: every scalar column, then every group's
    values and row lengths (the same whether read whole or in runs of rows)."""
    whole = dataset.in_ram
    step = max(hi - lo, 1) if whole else _READ_ROWS
    digests = []
    for name in dataset.scalar_names:
        h = threads.hasher()
        column = dataset.scalar(name) if whole else None
        for a in range(lo, hi, step):
            b = min(a + step, hi)
            h.update(column[a:b] if column is not None else dataset.scalar(name, slice(a, b)))
        digests.append(h.hexdigest())
    for group in dataset.groups:
        h, lengths = threads.hasher(), threads.hasher()
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


def _bulk() -> Any:
    """The hash of bulk bytes: SHA-1, about twice as fast as SHA-256 and ample against accidental change."""
    return hashlib.sha1(usedforsecurity=False)


def _piece_digest(piece: memoryview) -> bytes:
    h = _bulk()
    h.update(piece)
    digest: bytes = h.digest()
    return digest


class _Hasher:
    """The digest of a stream of bytes (arrays' bytes and their dtypes) cut in pieces of :data:`_PIECE` bytes.

    Each whole piece is hashed on its own, on ``pool``'s threads when given (hashlib lets go of
    the GIL), at most :data:`_PENDING` pieces a thread ahead; the digest is that of the pieces'
    digests, the last partial piece's and the length: the same however the stream is fed.
    """

    def __init__(self, pool: Executor | None = None, workers: int = 1) -> None:
        self._pool, self._workers = pool, workers
        self._pieces: list[Future[bytes] | bytes] = []
        self._h = _bulk()
        self._filled = self._length = 0
        self._dtypes: list[str] = []

    def update(self, array: np.ndarray) -> None:
        array = np.ascontiguousarray(array)  # no copy when it is contiguous
        if array.dtype.str not in self._dtypes:
            self._dtypes.append(array.dtype.str)
        self.feed(array.reshape(-1).view(np.uint8).data)

    def feed(self, data: memoryview) -> None:
        i, n = 0, len(data)
        self._length += n
        while i < n:
            if self._filled == 0 and n - i >= _PIECE and self._pool is not None:
                self._wait_for_room()
                self._pieces.append(self._pool.submit(_piece_digest, data[i:i + _PIECE]))
                i += _PIECE
                continue
            take = min(n - i, _PIECE - self._filled)
            self._h.update(data[i:i + take])
            self._filled += take
            i += take
            if self._filled == _PIECE:
                self._pieces.append(self._h.digest())
                self._h, self._filled = _bulk(), 0

    def _wait_for_room(self) -> None:
        pending = [p for p in self._pieces if isinstance(p, Future) and not p.done()]
        if len(pending) >= _PENDING * self._workers:
            pending[0].result()

    def hexdigest(self) -> str:
        h = hashlib.sha256(str(self._length).encode())
        for piece in self._pieces:
            h.update(piece.result() if isinstance(piece, Future) else piece)
        if self._filled:
            h.update(self._h.digest())
        return ",".join(self._dtypes) + ":" + h.hexdigest()
