"""uproot's reads of a local ROOT file read on demand, holding no file open between reads.

A tree read on demand (:class:`~lstm_data.io.root.lazy.RootDataset`) keeps its
uproot file for as long as the dataset lives. With uproot's own file source that
is one open file per dataset, and thousands of files (5,000 under ``ulimit -n
1024``) run out of file descriptors. :class:`PerReadFileSource` opens the file for
each read (``os.pread``, on the calling thread) and closes it at once: a dataset
holds no file between reads, and costs one ``open`` per basket read (microseconds,
against the basket's inflation). The basket path of :mod:`lstm_data.io.root.fast`
opens the file once per read of a chunk of clusters, as before.
"""
from __future__ import annotations

import os
from types import TracebackType
from typing import Any

import uproot.source.chunk
import uproot.source.file
import uproot.source.futures

from lstm_data.io.plumbing.open_files import too_many_open_files

__all__ = ["PerReadFileSource"]


class _PerRead(uproot.source.chunk.Resource):  # type: ignore[misc] # uproot is untyped
    """A file opened for each read of its bytes."""

    def __init__(self, file_path: str) -> None:
        self._file_path = file_path  # uproot's ``Resource.file_path`` reads it
        self.closed = False

    def __enter__(self) -> "_PerRead":
        return self

    def __exit__(self, exception_type: type[BaseException] | None, exception_value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.closed = True

    def get(self, start: int, stop: int) -> bytes:
        """Bytes ``start:stop`` of the file (fewer at its end)."""
        try:
            fd = os.open(self._file_path, os.O_RDONLY)
        except OSError as exc:
            err = too_many_open_files(exc, self._file_path)
            if err is not None:
                raise err from exc
            raise
        try:
            return os.pread(fd, stop - start, start)
        finally:
            os.close(fd)

    @staticmethod
    def future(source: Any, start: int, stop: int) -> Any:
        def task(resource: _PerRead) -> bytes:
            return resource.get(start, stop)
        return uproot.source.futures.ResourceFuture(task)


class PerReadFileSource(uproot.source.file.MultithreadedFileSource):  # type: ignore[misc] # uproot is untyped
    """uproot's file source, opening the file for each read (see the module)."""

    ResourceClass = _PerRead

    def _open(self) -> None:
        self._executor = uproot.source.futures.ResourceTrivialExecutor(_PerRead(self._file_path))
        self._num_bytes = os.path.getsize(self._file_path)
