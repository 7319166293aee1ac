"""Every format :func:`lstm_data.open` reads, in one table: :data:`FORMATS`.

A row says what a format is called, how its content is told (magic bytes, a test of
the file, the files that mark a store's directory), its extensions, the options of
:class:`~lstm_data.io.read_options.ReadOptions` its reader takes, and the reader
itself. Everything else is derived from the rows: format detection and the call of
the reader (:mod:`lstm_data.io.dispatch`), the formats read at URLs and their magic
bytes (:mod:`lstm_data.io.plumbing.remote`), and which options each format takes
(:data:`~lstm_data.io.read_options.READER_OPTIONS`).

Adding a format is its reader module and its row here. The order of the rows is the
order in which content is tested: the first row whose content test passes names the
format; the extension is looked at only when no content test passes.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from lstm_data.io.plumbing.signatures import COMPRESSED_PREFIXES, HDF5_SIGNATURE, PARQUET_MAGIC, ROOT_MAGIC

__all__ = ["FileFormat", "FORMATS", "format_named", "has_hdf5_signature"]

#: how many first bytes of a file the content tests look at
HEAD_BYTES = 4096


@dataclass(frozen=True)
class FileFormat:
    """One format that :func:`lstm_data.open` reads.

    Attributes
    ----------
    name
        Its name in messages, logs and :data:`~lstm_data.io.read_options.READER_OPTIONS`
        (``"parquet"``).
    title
        How a sentence names it (``"Parquet"``).
    reader
        ``"module:function"`` of the reader, imported only when a file of the format is
        opened; called as ``reader(path, schema=..., **options)``.
    options
        The :class:`~lstm_data.io.read_options.ReadOptions` the reader takes, under their
        own names (the options of reads at URLs are added when ``remote``).
    extensions
        File name suffixes, lower case, looked at when no content test passes.
    magic
        First bytes, any of which names the format.
    sniff
        A test of the file and its first bytes, for formats that magic bytes alone do not
        tell (HDF5 after a user block, NOvA tables inside HDF5).
    markers
        Files whose presence in a directory names it a store of this format.
    directories
        Whether a directory of files with its extensions is one dataset of this format.
    text
        Whether text that no other row claims is this format (CSV).
    remote
        Whether it is read at URLs (then told there by ``markers`` or ``magic``).
    schema
        Whether the reader takes a ``schema`` (stores that record their groups do not).
    extra
        The extra to install for its reader (``pip install 'lstm_data[extra]'``), if any.
    """

    name: str
    title: str
    reader: str
    options: frozenset[str]
    extensions: tuple[str, ...] = ()
    magic: tuple[bytes, ...] = ()
    sniff: Callable[[Path, bytes], bool] | None = None
    markers: tuple[str, ...] = ()
    directories: bool = False
    text: bool = False
    remote: bool = False
    schema: bool = True
    extra: str | None = None

    def claims(self, path: Path, head: bytes) -> bool:
        """Whether the content of file ``path`` (whose first bytes are ``head``) is this format."""
        if self.sniff is not None:
            return self.sniff(path, head)
        return bool(self.magic) and head.startswith(self.magic)

    @property
    def signed(self) -> bool:
        """Whether a file of this format always carries its signature (so that a file with its
        extension and without it is damaged, not another format)."""
        return (bool(self.magic) or self.sniff is not None) and not self.text

    def open_function(self) -> Callable[..., Any]:
        """The reader, imported now.

        Raises
        ------
        ImportError
            Its module cannot be imported.
        """
        module, _, function = self.reader.partition(":")
        reader: Callable[..., Any] = getattr(importlib.import_module(module), function)
        return reader


def has_hdf5_signature(path: Path, head: bytes = b"") -> bool:
    """HDF5 files start with the signature at 0 or after a user block of 512 * 2**k bytes."""
    if head.startswith(HDF5_SIGNATURE):
        return True
    size = path.stat().st_size
    with path.open("rb") as fh:
        offset = 0
        while offset + 8 <= size:
            fh.seek(offset)
            if fh.read(8) == HDF5_SIGNATURE:
                return True
            offset = 512 if offset == 0 else offset * 2
    return False


def _is_nova(path: Path, head: bytes) -> bool:
    if not has_hdf5_signature(path, head):
        return False
    from lstm_data.io.nova import is_nova_file
    return is_nova_file(path)


_COLUMNS = frozenset({"columns", "exclude"})

#: every format, in the order their content is tested
FORMATS: tuple[FileFormat, ...] = (
    FileFormat("nova", "NOvA HDF5", "lstm_data.io.nova:read_nova", sniff=_is_nova,
               options=frozenset({"dtype", "slice_table", "aliases", "trust_external", "tables"}) | _COLUMNS),
    FileFormat("hdf5", "HDF5", "lstm_data.io.hdf5.reader:read_hdf5", extensions=(".h5", ".hdf5", ".hdf"),
               sniff=has_hdf5_signature,
               options=frozenset({"dtype", "root", "max_run_chunks", "trust_external"}) | _COLUMNS),
    FileFormat("root", "ROOT", "lstm_data.io.root:read_root", extensions=(".root",), magic=(ROOT_MAGIC,),
               remote=True, extra="root",
               options=frozenset({"dtype", "tree", "threads", "progress", "in_ram", "cache_chunks",
                                  "block_bytes"}) | _COLUMNS),
    FileFormat("parquet", "Parquet", "lstm_data.io.parquet:read_parquet", extensions=(".parquet", ".pq"),
               magic=(PARQUET_MAGIC,), directories=True, remote=True, extra="parquet",
               options=frozenset({"dtype", "in_ram", "threads"}) | _COLUMNS),
    FileFormat("arrow", "Arrow IPC", "lstm_data.io.arrow_ipc:read_arrow_ipc", extensions=(".arrow", ".feather", ".ipc"),
               magic=(b"ARROW1",), extra="parquet", options=frozenset({"dtype", "threads"}) | _COLUMNS),
    FileFormat("zarr", "zarr v3", "lstm_data.io.ours.zarr:read_zarr", extensions=(".zarr",),
               markers=("zarr.json",), remote=True, schema=False,
               options=frozenset({"dtype", "max_run_chunks"})),
    FileFormat("l5kit", "zarr v2 (L5Kit)", "lstm_data.io.l5kit.reader:read_l5kit", markers=(".zgroup", ".zarray"),
               schema=False, options=frozenset({"dtype", "parent", "relations", "cache_chunks"})),
    FileFormat("csv", "CSV", "lstm_data.io.csv.reader:read_csv",
               extensions=(".csv", ".gz", ".xz", ".bz2", ".txt"), magic=COMPRESSED_PREFIXES, text=True,
               options=frozenset({"dtype", "sep", "list_sep", "progress", "threads", "block_bytes",
                                  "max_line_bytes", "max_columns"})),
)


def format_named(name: str) -> FileFormat:
    """The row of :data:`FORMATS` called ``name``.

    Raises
    ------
    KeyError
        No format is called ``name``.
    """
    for fmt in FORMATS:
        if fmt.name == name:
            return fmt
    raise KeyError(f"no format {name!r}; formats: {', '.join(f.name for f in FORMATS)}")
