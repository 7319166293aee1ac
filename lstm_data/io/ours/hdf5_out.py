"""The HDF5 output of our layout, written so that a failed write never takes the process down.

When a write fails inside HDF5 (a full disk, a quota, an I/O error), HDF5 leaves
its objects half closed: the file's close fails too, and h5py releasing those
objects later (at the next garbage collection, or at exit) crashes the process
with a signal. So HDF5 never sees a failed write here: it writes through a
:class:`GuardedFile` (h5py's file-object driver), which remembers the first
failure and from then on discards writes. HDF5 then closes cleanly, and
:class:`HDF5Sink` raises the remembered ``OSError``, naming the output, at the
next write of ours (or at :meth:`HDF5Sink.close`). The caller removes the
temporary file.
"""
from __future__ import annotations

import io
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["GuardedFile", "HDF5Sink", "LAYOUT_DIGEST_ATTR", "layout_digest", "check_layout_digest"]

#: root attribute: CRC-32 of what the layout's meaning rests on (see :func:`layout_digest`)
LAYOUT_DIGEST_ATTR = "lstm_data_layout_crc32"


def layout_digest(fh: Any) -> int:
    """CRC-32 of the layout-relevant metadata of an open HDF5 file in our layout.

    Covers the layout attribute (variables, their order, node keys, rows), each
    group's ``names`` attribute, and every stored array's dtype (byte order
    included) and shape: editing any of them changes the numbers a reader would
    give, so :func:`check_layout_digest` refuses such a file.
    """
    import json
    import zlib

    raw = fh.attrs["lstm_data_layout"]
    raw = raw.decode() if isinstance(raw, bytes) else str(raw)
    layout = json.loads(raw)
    record: dict[str, Any] = {"layout": raw}
    keys = list(layout["scalars"].values())
    for spec in layout["groups"].values():
        names = fh[spec["key"]].attrs.get("names")
        record[spec["key"] + "@names"] = [n.decode() if isinstance(n, bytes) else str(n)
                                          for n in ([] if names is None else list(names))]
        keys += [f"{spec['key']}/offsets", f"{spec['key']}/values"]
    for key in keys:
        node = fh.get(key)
        record[key] = None if node is None else [node.dtype.str, list(node.shape)]
    return zlib.crc32(json.dumps(record, sort_keys=True).encode())


def check_layout_digest(fh: Any, *, file: str) -> bool:
    """Raise ``FormatError`` if the file records a layout digest that its metadata no longer
    matches (naming the file); ``False`` for files written before the digest (unchecked)."""
    from lstm_data.errors import FormatError

    recorded = fh.attrs.get(LAYOUT_DIGEST_ATTR)
    if recorded is None:
        return False
    try:
        now = layout_digest(fh)
    except Exception as exc:  # noqa: BLE001 - metadata too damaged to read
        raise FormatError(f"the layout metadata is damaged ({type(exc).__name__}: {exc})",
                          file=file) from None
    if int(recorded) != now:
        raise FormatError("the layout metadata (variables, their order, dtypes, byte order or "
                          "shapes) was changed after the file was written: its digest does not "
                          "match", file=file)
    return True


class GuardedFile(io.RawIOBase):
    """A read/write file for h5py's ``fileobj`` driver that never hands HDF5 a write error.

    Attributes
    ----------
    error : OSError or None
        The first failed write, flush or truncate; later writes are discarded
        (their position is kept, so HDF5's bookkeeping stays consistent).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__()
        self.path = str(path)
        self._fh = open(path, "w+b", buffering=0)  # noqa: SIM115 - closed in close()
        self.error: OSError | None = None

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, pos: int, whence: int = 0) -> int:
        return self._fh.seek(pos, whence)

    def tell(self) -> int:
        return self._fh.tell()

    def readinto(self, buffer: Any) -> int:
        return self._fh.readinto(buffer)

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        n = len(view)
        if self.error is None:
            done = 0
            try:
                while done < n:  # a raw write may be short when the disk fills
                    wrote = self._fh.write(view[done:])
                    if not wrote:
                        raise OSError(28, os.strerror(28))
                    done += wrote
                return n
            except OSError as exc:
                self.error = exc
                self._fh.seek(n - done, 1)
                return n
        self._fh.seek(n, 1)
        return n

    def truncate(self, size: int | None = None) -> int:
        if self.error is None:
            try:
                return self._fh.truncate(size)
            except OSError as exc:
                self.error = exc
        return self.tell() if size is None else size

    def flush(self) -> None:
        if self.error is None and not self._fh.closed:
            try:
                self._fh.flush()
            except OSError as exc:
                self.error = exc

    def close(self) -> None:
        if not self.closed:
            super().close()  # flushes
            try:
                self._fh.close()
            except OSError as exc:
                self.error = self.error or exc


class _Checked:
    """An h5py dataset whose writes raise the output's first failed write right away."""

    def __init__(self, dataset: Any, sink: "HDF5Sink") -> None:
        self._dataset, self._sink = dataset, sink

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._dataset.shape)

    def resize(self, shape: tuple[int, ...]) -> None:
        self._dataset.resize(shape)
        self._sink.check()

    def __setitem__(self, key: Any, value: Any) -> None:
        self._dataset[key] = value
        self._sink.check()


class HDF5Sink:
    """Our layout's arrays in a new HDF5 file at ``path`` (see the module notes).

    Parameters
    ----------
    path
        The (temporary) file to write.
    compression, level
        ``"gzip"`` (``level`` 0-9, default 4), ``"lzf"`` or ``None``; every dataset
        also carries ``fletcher32``.
    name
        The output, named in errors (default: ``path``).
    """

    def __init__(self, path: Path, compression: str | None, level: int | None, *,
                 name: str | None = None) -> None:
        import h5py

        self.name = str(path) if name is None else name
        self._guard = GuardedFile(path)
        try:
            self._file = h5py.File(self._guard, "w")
        except BaseException:
            self._guard.close()
            raise
        # fletcher32 checksums every chunk as stored (after compression), so a damaged
        # chunk is a read error whatever the filter; lzf alone would decode it to numbers
        self._filters: dict[str, Any] = {"fletcher32": True}
        if compression is not None:
            self._filters.update(compression=compression, shuffle=True)
        if compression == "gzip":
            self._filters["compression_opts"] = 4 if level is None else level

    def check(self) -> None:
        """Raise the first failed write as an ``OSError`` naming the output."""
        exc = self._guard.error
        if exc is not None:
            raise OSError(exc.errno, f"cannot write {self.name}: {exc.strerror or exc}",
                          self.name) from exc

    def group(self, key: str, attrs: dict[str, Any]) -> None:
        grp = self._file.create_group(key)
        grp.attrs["names"] = list(attrs["names"])
        self.check()

    def array(self, key: str, row_shape: tuple[int, ...], dtype: np.dtype[Any], chunk_len: int,
              length: int = 0) -> _Checked:
        """A resizable dataset of ``length`` rows of ``row_shape``, chunked ``chunk_len`` rows."""
        chunks = (max(1, chunk_len),) + tuple(max(1, d) for d in row_shape)
        ds = self._file.create_dataset(key, shape=(length,) + row_shape, maxshape=(None,) + row_shape,
                                       dtype=dtype, chunks=chunks, **self._filters)
        self.check()
        return _Checked(ds, self)

    def finish(self, layout: dict[str, Any]) -> None:
        from lstm_data.io.ours.layout import layout_attrs

        self._file.attrs.update(layout_attrs(layout, as_json=True))
        self._file.attrs[LAYOUT_DIGEST_ATTR] = layout_digest(self._file)
        self._file.flush()
        self.check()

    def close(self) -> None:
        """Close the file (HDF5 closes cleanly even after a failed write), then raise that failure."""
        try:
            self._file.close()
        finally:
            self._guard.close()
        self.check()
