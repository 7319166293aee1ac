"""Cheap pickling of in-RAM datasets: spill once to ``.npy`` files, reopen memory-mapped.

Worker processes (Keras ``use_multiprocessing``, torch ``DataLoader`` with spawn)
receive a pickled ``Batches``. Pickling an :class:`InMemoryDataset` by value would
copy every array into every worker. Instead its arrays are written once to a
temporary directory and the pickle carries only that path; each worker maps the
same files, so the page cache holds one copy for all of them.

The spill directory is removed when the process that made it exits; one left by a
process that was killed is removed by the next spill on the same host. Set
``LSTM_DATA_SHARE_DIR`` to choose where it goes (default: the system temp dir).
"""
from __future__ import annotations

import atexit
import os
import shutil
import threading
import weakref
from pathlib import Path
from typing import Callable

import numpy as np

from lstm_data._util.safe_output import spill_dir
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup

__all__ = ["MappedDataset", "share"]

_LOCK = threading.Lock()
_SPILLED: "weakref.WeakKeyDictionary[InMemoryDataset, MappedDataset]" = weakref.WeakKeyDictionary()


class MappedDataset:
    """A picklable reference to an in-RAM dataset spilled to ``.npy`` files.

    Unpickling (or :meth:`open`) gives an :class:`InMemoryDataset` whose arrays are
    read-only memory maps of the files.
    """

    def __init__(self, directory: str, scalars: list[str], groups: dict[str, list[str]],
                 source: tuple[str, ...]) -> None:
        self.directory = directory
        self.scalars = scalars
        self.groups = groups
        self.source = source

    def open(self) -> InMemoryDataset:
        """Map the spilled arrays back into an :class:`InMemoryDataset`."""
        d = Path(self.directory)
        if not d.is_dir():
            raise FileNotFoundError(f"shared dataset directory {d} is gone (its owner process exited?)")
        scalars = {s: np.load(d / f"s{i}.npy", mmap_mode="r") for i, s in enumerate(self.scalars)}
        groups = {g: RaggedGroup(names, np.load(d / f"g{i}_values.npy", mmap_mode="r"),
                                 np.load(d / f"g{i}_offsets.npy", mmap_mode="r"))
                  for i, (g, names) in enumerate(self.groups.items())}
        return InMemoryDataset(scalars, groups, source=self.source)

    def __reduce__(self) -> tuple[Callable[..., InMemoryDataset],
                                  tuple[str, list[str], dict[str, list[str]], tuple[str, ...]]]:
        return (_open_mapped, (self.directory, self.scalars, self.groups, self.source))


def _open_mapped(directory: str, scalars: list[str], groups: dict[str, list[str]],
                 source: tuple[str, ...]) -> InMemoryDataset:
    return MappedDataset(directory, scalars, groups, source).open()


def _is_mapped(ds: InMemoryDataset) -> str | None:
    """The directory of ``ds`` when all its arrays are already maps of one spill directory."""
    arrays = [ds.scalar(s) for s in ds.scalar_names]
    for g in ds.groups:
        arrays.extend(ds.ragged(g))
    names = {os.path.dirname(a.filename) for a in arrays if isinstance(a, np.memmap) and a.filename}
    if len(names) == 1 and all(isinstance(a, np.memmap) for a in arrays):
        return names.pop()
    return None


def share(ds: InMemoryDataset) -> MappedDataset:
    """Spill ``ds`` to memory-mappable files once (cached per dataset) and return the reference."""
    with _LOCK:
        ref = _SPILLED.get(ds)
        if ref is not None and Path(ref.directory).is_dir():
            return ref
        directory = _is_mapped(ds)
        if directory is None:
            # named by host and PID: the next process removes it if this one is killed
            directory = spill_dir("share", os.environ.get("LSTM_DATA_SHARE_DIR"))
            atexit.register(shutil.rmtree, directory, True)
            for i, s in enumerate(ds.scalar_names):
                np.save(os.path.join(directory, f"s{i}.npy"), np.ascontiguousarray(ds.scalar(s)))
            for i, g in enumerate(ds.groups):
                values, offsets = ds.ragged(g)
                np.save(os.path.join(directory, f"g{i}_values.npy"), np.ascontiguousarray(values))
                np.save(os.path.join(directory, f"g{i}_offsets.npy"), np.ascontiguousarray(offsets))
        ref = MappedDataset(directory, ds.scalar_names, ds.groups, tuple(ds.source))
        _SPILLED[ds] = ref
        return ref
