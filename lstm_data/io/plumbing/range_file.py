"""A file at a URL as a binary file object whose reads are byte-range requests (for pyarrow).

:class:`RangeFile` has no read-ahead and no cache: each ``read`` asks the
filesystem for exactly the bytes wanted (``cat_file(path, start, end)``), so a
Parquet reader's reads of the footer and of the column chunks it needs are the
requests. An answer of another length than asked is a
:class:`~lstm_data.errors.FormatError` naming the URL and the range (fsspec
filesystems other than our checked HTTP one do not check it), and any other failure
a :class:`~lstm_data.errors.RemoteError` naming the URL.
"""
from __future__ import annotations

import io
import threading
from typing import Any

from lstm_data.io.plumbing.remote_errors import remote_error, wrong_answer

__all__ = ["RangeFile"]


class RangeFile(io.RawIOBase):
    """The file at ``url`` (``path`` of filesystem ``fs``), ``size`` bytes, read by ranges.

    Parameters
    ----------
    fs
        An fsspec filesystem (its ``cat_file(path, start, end)`` is each read).
    path
        The file's path in ``fs``.
    url
        The URL, for errors (shown without credentials).
    size
        The file's size in bytes.
    """

    def __init__(self, fs: Any, path: str, url: str, size: int) -> None:
        super().__init__()
        self.fs, self.path, self.url, self.size = fs, path, url, int(size)
        self._pos = 0
        self._lock = threading.Lock()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset}")
        self._pos = base + offset
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        with self._lock:
            start = self._pos
            stop = self.size if size is None or size < 0 else min(self.size, start + size)
            if stop <= start:
                return b""
            data = self.read_range(start, stop)
            self._pos = stop
            return data

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(memoryview(buffer)))
        memoryview(buffer).cast("B")[:len(data)] = data
        return len(data)

    def read_range(self, start: int, stop: int) -> bytes:
        """Bytes ``start:stop`` of the file (``stop <= size``), checked for their length."""
        try:
            data = bytes(self.fs.cat_file(self.path, start=start, end=stop))
        except Exception as exc:  # noqa: BLE001 - every failure named with the URL
            raise remote_error(exc, self.url) from None
        if len(data) != stop - start:
            raise wrong_answer(self.url, f"bytes {start}-{stop - 1}", f"{len(data)} bytes")
        return data
