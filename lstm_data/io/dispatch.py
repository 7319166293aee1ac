"""``lstm_data.open``: one entry point for every format.

The format is decided by content first (magic bytes, store metadata files) and
by extension second, by the rows of :data:`lstm_data.io.formats.FORMATS` (one per
format: its detection, its options, its reader) in their order.

A list of paths, or a glob pattern, gives one :class:`~lstm_data.data.concat.ConcatDataset`.

A TTree of a ROOT file is named after the file as uproot does, ``file.root:Events``
(or ``file.root:dir/Events``; in a pattern, ``data/*.root:Events``): the part after
the last colon is the tree, when the whole path is not itself a file.
"""
from __future__ import annotations

import errno
import glob
import itertools
import json
import logging
import os
from pathlib import Path
from typing import Any, Iterable, Sequence, cast

from lstm_data._util.deprecation import refuses_renamed
from lstm_data._util.paths import MAX_LISTED, missing_path
from lstm_data._util.types import Forwarded
from lstm_data.data.dataset import Dataset
from lstm_data.errors import FormatError, OptionError, RemoteError, SchemaError, redact
from lstm_data.io.formats import FORMATS, HEAD_BYTES, FileFormat, format_named
from lstm_data.io.read_options import (
    ReadOptions,
    file_value_columns,
    read_options_from,
    unknown_open_keyword,
)
from lstm_data.io.plumbing.remote import is_url, remote_format
from lstm_data.io.plumbing.remote_errors import RemoteSettings
from lstm_data.io.plumbing.special import STDIN, check_readable_kind, is_stream
from lstm_data.io.schema import SchemaLike

__all__ = ["open", "detect_format", "expand_paths", "split_member", "input_bytes"]

#: text files that are never event tables (a spec or config passed by mistake); other text is CSV
_NOT_DATA = {".toml", ".json", ".yaml", ".yml", ".ini", ".cfg", ".py", ".md", ".rst", ".ipynb"}


def split_member(path: str | os.PathLike[str]) -> tuple[str, str | None]:
    """``(file, tree)`` of ``"file.root:tree"``; ``(path, None)`` for any other path.

    The suffix is split off only when ``path`` itself does not exist and the part
    before the last colon is a ``.root`` file or pattern, so a file whose name
    holds a colon still opens as itself.
    """
    text = os.fspath(path)
    if is_url(text) or os.path.exists(text):
        return text, None
    head, sep, member = text.rpartition(":")
    if sep and member and head.lower().endswith(".root") and (os.path.exists(head)
                                                              or glob.has_magic(head)):
        return head, member
    return text, None


def input_bytes(path: str | os.PathLike[str]) -> int:
    """Bytes on disk of an input: a file, every file of a directory (a store), or the
    file of ``file.root:tree``."""
    if is_stream(path):
        return 0
    p = Path(split_member(path)[0])
    if p.is_dir():
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return p.stat().st_size


def detect_format(path: str | os.PathLike[str], remote: RemoteSettings | None = None) -> str:
    """The format of ``path``: the name of a row of :data:`~lstm_data.io.formats.FORMATS`
    (``"csv"``, ``"hdf5"``, ``"nova"`` for NOvA HDF5 tables, ``"parquet"``, ``"root"``,
    ``"zarr"`` for our v3 store, ``"l5kit"`` for zarr v2, ...).

    ``remote``: the timeouts and retries of a URL's reads (default: the defaults of
    :class:`~lstm_data.io.plumbing.remote_errors.RemoteSettings`).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    FormatError
        Neither content nor extension tells the format.
    """
    if is_url(path):
        return remote_format(str(path), remote)
    if check_readable_kind(path) is not None:  # a pipe or stdin: CSV text, read once
        return "csv"
    file, member = split_member(path)
    if member is not None:
        fmt = detect_format(file)
        if fmt != "root":
            raise FormatError(f"':{member}' names a tree, but this is not a ROOT file ({fmt})", file=file)
        return fmt
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(missing_path(p))
    if p.is_dir():
        return _directory_format(p).name
    with p.open("rb") as fh:
        head = fh.read(HEAD_BYTES)
    for row in FORMATS:
        if row.claims(p, head):
            return row.name
    suffix = p.suffix.lower()
    by_ext = next((fmt for fmt in FORMATS if suffix in fmt.extensions), None)
    if suffix in _NOT_DATA:
        raise FormatError(f"a {p.suffix} file is not a data file; lstm_data reads {_what_is_read()}", file=str(p))
    if by_ext is not None and by_ext.signed:
        article = "an" if by_ext.title.startswith(("A", "E", "I", "O", "U")) else "a"
        raise FormatError(f"file has {article} {by_ext.title} extension ({p.suffix}) but no {by_ext.title} "
                          "signature (damaged or truncated?)", file=str(p))
    text = next(fmt for fmt in FORMATS if fmt.text)
    if by_ext is text or (head and b"\x00" not in head):
        return text.name
    raise FormatError("cannot tell the format: not HDF5, zarr, or (compressed) CSV text",
                      file=str(p))


def _directory_format(p: Path) -> FileFormat:
    """The format of directory ``p``: a store marked by its files, or a directory of files of one format."""
    for fmt in FORMATS:
        if any((p / marker).is_file() for marker in fmt.markers):
            return fmt
    for fmt in FORMATS:
        if fmt.directories and any(any(p.glob(f"*{ext}")) for ext in fmt.extensions):
            return fmt
    _csv_folder(p)
    stores = [fmt for fmt in FORMATS if fmt.markers]
    markers = [m for fmt in stores for m in fmt.markers]
    folders = [f"a directory of {fmt.extensions[0]} files" for fmt in FORMATS if fmt.directories]
    raise FormatError(f"directory is not a zarr store (no {', '.join(markers[:-1])} or {markers[-1]}) nor "
                      f"{' nor '.join(folders)}", file=str(p))


#: compression suffixes of text files (their pattern keeps the suffix before: ``*.csv.xz``)
_PACKED = (".gz", ".xz", ".bz2")


def _csv_folder(p: Path) -> None:
    """Refuse a directory of CSV files, naming how many and the pattern that reads them all."""
    text = next(fmt for fmt in FORMATS if fmt.text)
    ends: dict[str, int] = {}
    with os.scandir(p) as entries:
        for entry in itertools.islice(entries, MAX_LISTED):
            suffixes = Path(entry.name).suffixes
            if not suffixes or suffixes[-1].lower() not in text.extensions or not entry.is_file():
                continue
            end = "".join(suffixes[-2:] if suffixes[-1].lower() in _PACKED and len(suffixes) > 1 else suffixes[-1:])
            ends[end] = ends.get(end, 0) + 1
    if ends:
        end = max(ends, key=lambda e: ends[e])
        n = sum(ends.values())
        pattern = os.path.join(str(p), "*" + end)
        raise FormatError(f"a directory of {n} {text.title} file{'s' if n != 1 else ''} is not one dataset: "
                          f"pass the pattern {pattern!r} (quoted) to read them as one, in name order, "
                          "or name the files", file=str(p))


def _what_is_read() -> str:
    """The files lstm_data reads, for a message."""
    files = [f"{fmt.title} ({'/'.join(fmt.extensions)})" for fmt in FORMATS
             if fmt.extensions and not fmt.markers and not fmt.text]
    text = next(fmt for fmt in FORMATS if fmt.text)
    return (f"{text.title} text ({', '.join(text.extensions)}), {', '.join(files)} and zarr stores "
            "(directories)")


def expand_paths(path_or_paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    """Expand a path, a glob pattern or a list of either into existing paths (globs sorted).

    Raises
    ------
    FileNotFoundError
        A path does not exist, or a pattern matches nothing.
    """
    items = [path_or_paths] if isinstance(path_or_paths, (str, os.PathLike)) else list(path_or_paths)
    out: list[str] = []
    for item in items:
        text = os.fspath(item)
        if is_url(text) or text == STDIN:  # a remote store: checked when opened; stdin
            out.append(text)
            continue
        file, member = split_member(text)
        if member is not None:  # file.root:tree, or a pattern of them
            out.extend(f"{p}:{member}" for p in expand_paths(file))
            continue
        if os.path.exists(text) or not glob.has_magic(text):
            if not os.path.exists(text):
                raise FileNotFoundError(missing_path(text))
            out.append(text)
            continue
        matches = sorted(glob.glob(text))
        if not matches:
            raise FileNotFoundError(f"pattern {text!r} matches no file")
        out.extend(matches)
    if not out:
        raise FileNotFoundError("no paths given")
    return out


#: what a damaged file raises from inside h5py, zarr or numcodecs, naming no file
_log = logging.getLogger("lstm_data")
_DAMAGE = (KeyError, OSError, RuntimeError, json.JSONDecodeError)


def _is_csv(path: str) -> bool:
    return not is_url(path) and detect_format(path) == "csv"


def _open_one(path: str, schema: Any, read: ReadOptions) -> Dataset:
    fmt = detect_format(path, read.remote_settings())
    options = read.reader_keywords(fmt, where=path)
    try:
        dataset = _read(path, fmt, schema, options)
        _log.info("opened %s (%s%s): %d rows, %d scalars, groups %s", path, fmt,
                  "" if dataset.in_ram else ", read from disk on demand", len(dataset),
                  len(dataset.scalar_names), list(dataset.groups))
        return dataset
    except (PermissionError, RemoteError):  # said as such: neither damage nor the data's fault
        raise
    except OSError as exc:
        if exc.errno == errno.EMFILE:  # the process's limit of open files: not damage
            raise
        raise FormatError(f"cannot read this {fmt} data, damaged or incomplete? "
                          f"({type(exc).__name__}: {exc})", file=path) from exc
    except _DAMAGE as exc:  # e.g. a missing array, a truncated HDF5 file, a bad zarr.json
        raise FormatError(f"cannot read this {fmt} data, damaged or incomplete? "
                          f"({type(exc).__name__}: {exc})", file=path) from exc


def _read(path: str, fmt: str, schema: Any, options: dict[str, Any]) -> Dataset:
    """Open ``path`` with the reader of format ``fmt`` (a row of :data:`~lstm_data.io.formats.FORMATS`)."""
    row = format_named(fmt)
    if schema is not None and not row.schema:
        raise SchemaError("schema given, but this store records its own groups: schema is for CSV and "
                          "lstm_ee HDF5 files; drop it (choose columns with a BatchSpec)", file=path)
    file, member = split_member(path)
    if member is not None:  # file.root:tree, a tree named in the path
        if options.get("tree") not in (None, member):
            raise SchemaError(f"tree={options['tree']!r} given for {path}, which names tree "
                              f"{member!r}", file=file)
        path, options = file, dict(options, tree=member)
    try:
        reader = row.open_function()
    except ImportError as exc:
        if row.extra is not None:  # the reader says which extra to install when it runs
            raise
        raise FormatError(f"the {row.title} reader is not available ({exc})", file=path) from None
    if row.schema:
        options = dict(options, schema=schema)
    return cast(Dataset, reader(path, **options))


def _in_ram_for_many(paths: list[str], schema: Any, read: ReadOptions) -> ReadOptions:
    """Several local ROOT or Parquet files and ``in_ram`` unset: read them all on demand
    (``in_ram=False``) when together they would not fit, as each alone might.

    The total is the first file's decoded size scaled by the files' sizes on disk.
    """
    if read.in_ram is not None or len(paths) < 2 or any(is_url(p) or is_stream(p) for p in paths):
        return read
    fmts = {detect_format(p) for p in paths}
    if fmts not in ({"root"}, {"parquet"}):
        return read
    fmt = fmts.pop()
    options = read.reader_keywords(fmt, where=paths[0])
    if fmt == "root":
        from lstm_data.io.root import decoded_bytes
        from lstm_data.io.root.memory import fits
        file, member = split_member(paths[0])
        first = decoded_bytes(file, schema=schema, **dict(options, tree=member or options.get("tree")))
    else:
        from lstm_data.io.parquet import RAM_FRACTION, parquet_decoded_bytes
        from lstm_data.io.root.memory import fits
        first = parquet_decoded_bytes(paths[0], schema=schema, **options)
    sizes = [input_bytes(p) for p in paths]
    total = int(first * sum(sizes) / max(1, sizes[0]))
    if fits(total) if fmt == "root" else fits(total, RAM_FRACTION):
        return read
    _log.info("%d %s files: their values (about %.2f GiB) would take too much of the memory left: read "
              "on demand (in_ram=True reads them whole)", len(paths), fmt, total / 2**30)
    return read.replace(in_ram=False)


def _format_or_none(path_or_paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> str | None:
    """The format of the first local file given, for a message; ``None`` when it cannot be told
    without more (a URL, a missing file, a damaged one)."""
    try:
        first = expand_paths(path_or_paths)[0]
        return None if is_url(first) else detect_format(first)
    except Exception:  # noqa: BLE001 - the message then lists every format's options
        return None


@refuses_renamed("lstm_data.open")
def open(path_or_paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *,
         schema: SchemaLike = None, read: ReadOptions | None = None, **options: Forwarded) -> Dataset:
    """Open a dataset of any format, or several files as one.

    The formats of :data:`~lstm_data.io.formats.FORMATS` (CSV, HDF5, Parquet, ROOT, zarr,
    ...) are told apart by their content first, their extension second.

    Parameters
    ----------
    path_or_paths
        A path, a glob pattern (``"data/*.h5"``), a URL of a zarr store
        (``"https://host/data.zarr"``, ``"s3://bucket/data.zarr"``: see
        :mod:`lstm_data.io.plumbing.remote`), or a list of them. Several files
        give one :class:`~lstm_data.data.concat.ConcatDataset` whose rows are the files'
        rows in order; their columns and groups must match.
    schema
        Declared groups (and optionally scalars, dtype) for formats that do not
        store them: a ``lstm_data.io.schema.Schema``, a TOML path, or ``{group: [vars]}``.
    read
        How to read: a :class:`~lstm_data.io.read_options.ReadOptions`.
    **options
        Options of :class:`~lstm_data.io.read_options.ReadOptions` given as keywords
        (they override ``read``), e.g. ``dtype="float64"`` (every format) or
        ``threads=2`` (CSV, Parquet, ROOT). Each is checked against the format of
        every file: a misspelt option, or one the format does not take, is an
        :class:`~lstm_data.errors.OptionError` naming it.

    Returns
    -------
    Dataset
        The rows of every file, in order: in RAM (CSV, lstm_ee HDF5, small Parquet) or
        read from disk on demand (our zarr and HDF5 layouts, L5Kit, Parquet and ROOT files
        whose values would not fit, alone or together, or with ``in_ram=False``).

    Raises
    ------
    FileNotFoundError, FormatError, ParseError, SchemaError, OptionError
    """
    try:
        unknown = [k for k in options if k not in ReadOptions.option_names()]
        if unknown:
            raise unknown_open_keyword(unknown[0], _format_or_none(path_or_paths))
        read = read_options_from(read, options)
    except OptionError as exc:  # name the data the options were given for
        shown = path_or_paths if isinstance(path_or_paths, (str, os.PathLike)) else ", ".join(
            map(str, path_or_paths))
        raise OptionError(f"{redact(os.fspath(shown) if isinstance(shown, os.PathLike) else shown)}: "
                          f"{exc}") from None
    paths = expand_paths(path_or_paths)
    per_file = read.file_values
    if per_file is not None:
        read = read.replace(file_values=None)
    read = _in_ram_for_many(paths, schema, read)
    datasets = [_open_one(p, schema, read) for p in paths]
    if len(datasets) == 1 and per_file is None:
        return datasets[0]
    if len(datasets) > 1 and any(_is_csv(p) for p in paths):
        from lstm_data.io.csv.kinds import unify_kinds  # CSV column kinds decided across the files
        datasets = unify_kinds(datasets, paths, lambda p, s: _open_one(p, s, read), schema, is_csv=_is_csv)
    from lstm_data.data.concat import ConcatDataset
    part_values = None if per_file is None else file_value_columns(per_file, paths)
    return ConcatDataset(datasets, names=paths, part_values=part_values)
