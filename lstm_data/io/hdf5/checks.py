"""What an HDF5 file may make its reader do (stay inside the file) and need (filters).

HDF5 can keep a dataset's bytes, or a whole object, somewhere else:

* an **external link** (``h5py.ExternalLink``) names an object of another file;
* **external storage** (``create_dataset(..., external=[...])``) keeps a dataset's
  raw bytes in other, non-HDF5 files, at given offsets: any local file;
* a **virtual dataset** maps pieces of datasets of other files.

HDF5 follows all three on any read, so an untrusted ``.h5`` could make a reader
return the bytes of any file on the machine as values. Every HDF5 reader of
lstm_data (our layout, lstm_ee's PyTables files, NOvA tables) gets its objects
through :func:`member`, which refuses them with a ``FormatError`` naming the link
or dataset and its target, unless the caller trusts the file
(``trust_external=True``, an option of :class:`~lstm_data.io.read_options.ReadOptions`).
Soft links and virtual datasets whose sources are in the same file stay inside it
and are followed. HDF5 looks for a trusted dataset's external raw files with
relative names in the current directory (or ``HDF5_EXTFILE_PREFIX``; ``${ORIGIN}``
there means next to the HDF5 file).

A dataset compressed with a filter this machine's HDF5 library lacks (blosc,
bitshuffle, zstd, lz4... registered by plugins) cannot be read; that is not damage.
:func:`missing_filter_error` names the filter and the package that provides it
(``hdf5plugin``), which is loaded, when installed, before giving up.
"""
from __future__ import annotations

from typing import Sequence

import importlib
import logging

import h5py

from lstm_data.errors import FormatError

__all__ = ["member", "check_dataset", "check_declared_size", "MAX_RATIO", "root_names", "TRUST_HINT", "missing_filters",
           "missing_filter_error", "load_filter_plugins"]

_log = logging.getLogger("lstm_data")
#: HDF5 filters that the ``hdf5plugin`` package registers: id -> name
PLUGIN_FILTERS = {307: "bzip2", 32001: "blosc", 32004: "lz4", 32008: "bitshuffle", 32013: "zfp",
                  32015: "zstd", 32017: "sz", 32018: "fcidecomp", 32024: "sz3", 32026: "blosc2",
                  32028: "sperr"}
#: PyTables' LZO filter: compiled into PyTables only, no plugin package provides it
_PYTABLES_LZO = 305
_plugins_tried = False

#: how an outside reference can be allowed (the end of every refusal)
TRUST_HINT = ("refused: an untrusted file could make lstm_data read any local file as values; "
              "open it with trust_external=True (lstm_data.ReadOptions) if you trust it")
#: virtual datasets whose sources are virtual datasets of the same file: followed this deep
_MAX_VIRTUAL_DEPTH = 8
#: stored bytes expand at most this much (zlib's limit is 1032): more is fill values never written
MAX_RATIO = 1100
#: a dataset of at most this many bytes is read whatever it declares
_ALWAYS_READ = 64 << 20


def _short(items: Sequence[str]) -> str:
    shown = ", ".join(items[:3])
    return shown + (f" and {len(items) - 3} more" if len(items) > 3 else "")


def member(group: h5py.Group, path: str, *, file: str, trust_external: bool = False
           ) -> h5py.Group | h5py.Dataset | None:
    """The object at ``path`` below ``group`` (``None`` when absent), every link on the way checked.

    Parameters
    ----------
    group
        Where ``path`` starts (``"a/b"``; ``""`` or ``"/"`` is ``group`` itself).
    file
        The file's name, for errors.
    trust_external
        Follow external links, external storage and virtual datasets of other files.

    Raises
    ------
    FormatError
        (Unless ``trust_external``) a link on the way is an external link, or leads
        to another file through a soft link, or the object is a dataset whose values
        are outside the file (see :func:`check_dataset`). Names the link or dataset
        and its target.
    """
    node: h5py.Group | h5py.Dataset = group
    for part in (p for p in path.split("/") if p):
        if not isinstance(node, h5py.Group):
            return None
        link = node.get(part, getlink=True)
        if link is None:
            return None
        where = f"{node.name.rstrip('/')}/{part}"
        if isinstance(link, h5py.ExternalLink) and not trust_external:
            raise FormatError(f"{where!r} is an external link to {link.filename}:{link.path}; "
                              f"{TRUST_HINT}", file=file, variable=where.lstrip("/"))
        child = node.get(part)
        if child is None:  # a dangling link
            return None
        if not trust_external and child.id.fileno != node.id.fileno:
            raise FormatError(f"{where!r} leads to another file ({child.file.filename}:{child.name}) "
                              f"through the link {link.path!r}; {TRUST_HINT}", file=file,
                              variable=where.lstrip("/"))
        node = child
    if isinstance(node, h5py.Dataset):
        check_dataset(node, file=file, trust_external=trust_external)
        check_declared_size(node, file=file)
    return node


def check_declared_size(ds: h5py.Dataset, *, file: str) -> None:
    """Raise ``FormatError`` if ``ds`` declares more values than its file stores and memory holds.

    A dataset's shape is only a declaration: chunks never written read as its fill value, so
    a file of a few kilobytes can declare 10**11 rows. Values that no compression could
    have stored in the bytes the file holds for them (more than :data:`MAX_RATIO` times
    those), and that would not fit in the memory left, are refused before anything is
    allocated. Virtual datasets and external storage are left to their own checks.

    Raises
    ------
    FormatError
        Names the file, the dataset, its shape and declared bytes, and the bytes stored.
    """
    if ds.shape is None:  # an empty (null) dataspace holds nothing
        return
    declared = int(ds.size) * int(ds.id.get_type().get_size())  # types numpy lacks have a size too
    if declared <= _ALWAYS_READ or ds.is_virtual or ds.id.get_create_plist().get_external_count():
        return
    stored = int(ds.id.get_storage_size())
    if declared <= MAX_RATIO * stored:
        return
    from lstm_data.io.root.memory import available_bytes

    left = available_bytes()
    if left is not None and declared <= left:
        return
    key = ds.name.lstrip("/")
    room = "" if left is None else f" and this process can take only {left:,}"
    raise FormatError(f"dataset {key!r} declares shape {ds.shape}, {declared:,} bytes, but the "
                      f"file stores {stored:,} bytes of it{room}: refused before reading (damaged or forged "
                      "file?)", file=file, variable=key)


def check_dataset(ds: h5py.Dataset, *, file: str, trust_external: bool = False, _depth: int = 0) -> None:
    """Raise ``FormatError`` if the values of ``ds`` lie outside its file (unless trusted).

    Raises
    ------
    FormatError
        ``ds`` uses external storage (names its raw files) or is a virtual dataset
        with a source in another file (names the sources).
    """
    if trust_external:
        return
    key = ds.name.lstrip("/")
    plist = ds.id.get_create_plist()
    n = plist.get_external_count()
    if n:
        raw = [plist.get_external(i)[0].decode(errors="replace") for i in range(n)]
        raise FormatError(f"dataset {key!r} keeps its values outside this file, in {_short(raw)} "
                          f"(HDF5 external storage); {TRUST_HINT}", file=file, variable=key)
    if not ds.is_virtual:
        return
    sources = ds.virtual_sources()
    outside = [f"{s.file_name}:{s.dset_name}" for s in sources if s.file_name != "."]
    if outside:
        raise FormatError(f"dataset {key!r} is a virtual dataset of datasets in other files "
                          f"({_short(outside)}); {TRUST_HINT}", file=file, variable=key)
    if _depth >= _MAX_VIRTUAL_DEPTH:
        raise FormatError(f"dataset {key!r} is a virtual dataset nested more than "
                          f"{_MAX_VIRTUAL_DEPTH} deep", file=file, variable=key)
    for name in {s.dset_name for s in sources}:
        source = member(ds.file, name, file=file)
        if isinstance(source, h5py.Dataset) and source != ds:
            check_dataset(source, file=file, _depth=_depth + 1)


def root_names(fh: h5py.Group, *, groups_only: bool, trust_external: bool = False) -> list[str]:
    """The names of ``fh``'s members, in file order; with ``groups_only``, those that are groups.

    An untrusted external link is not followed to learn what it is: it is listed, so
    that reading it gives :func:`member`'s error.
    """
    out = []
    for name in fh:
        link = fh.get(name, getlink=True)
        if isinstance(link, h5py.ExternalLink) and not trust_external:
            out.append(name)
        elif not groups_only or fh.get(name, getclass=True) is h5py.Group:
            out.append(name)
    return out


def missing_filters(ds: h5py.Dataset) -> list[tuple[int, str]]:
    """``(id, name)`` of every filter of ``ds``'s pipeline that this HDF5 library lacks."""
    plist = ds.id.get_create_plist()
    out = []
    for i in range(plist.get_nfilters()):
        fid, _flags, _values, name = plist.get_filter(i)
        if not h5py.h5z.filter_avail(fid):
            out.append((int(fid), name.decode(errors="replace") if isinstance(name, bytes) else str(name)))
    return out


def load_filter_plugins() -> bool:
    """Import ``hdf5plugin`` (which registers its filters with h5py's HDF5) once, if installed.

    Returns
    -------
    bool
        Whether it was imported now (a failed read is then worth retrying).
    """
    global _plugins_tried
    if _plugins_tried:
        return False
    _plugins_tried = True
    try:
        importlib.import_module("hdf5plugin")
    except ImportError:
        return False
    _log.info("loaded hdf5plugin for HDF5 compression filters this HDF5 library lacks")
    return True


def missing_filter_error(ds: h5py.Dataset, *, file: str, variable: str | None = None) -> FormatError | None:
    """The error for a dataset whose filters this machine lacks (``None`` when it has them all).

    Names the dataset, each missing filter (name and id) and what provides it.
    """
    missing = missing_filters(ds)
    if not missing:
        return None
    key = ds.name.lstrip("/")
    named = []
    for fid, name in missing:
        known = PLUGIN_FILTERS.get(fid)
        named.append(f"{known or name or 'unnamed'} (HDF5 filter id {fid})")
    known_ids = [fid for fid, _ in missing if fid in PLUGIN_FILTERS]
    if len(known_ids) == len(missing):
        how = ("the hdf5plugin package provides it: pip install hdf5plugin (lstm_data loads it "
               "when installed)")
    elif any(fid == _PYTABLES_LZO for fid, _ in missing):
        how = ("PyTables' own build of HDF5 reads it; rewrite the file with another compressor, e.g. "
               "ptrepack --complib=blosc:zstd --complevel=5 IN.h5 OUT.h5 (or h5repack -f GZIP=5)")
    else:
        how = ("find the filter's plugin in the HDF Group's list of registered filters and put it "
               "on HDF5_PLUGIN_PATH" + ("; hdf5plugin provides the others" if known_ids else ""))
    s = "s" if len(missing) > 1 else ""
    return FormatError(f"dataset {key!r} is compressed with the filter{s} {', '.join(named)}, which "
                       f"this machine's HDF5 library lacks (the data is not damaged); {how}",
                       file=file, variable=variable or key)
