"""How data is read: :class:`ReadOptions`, the one home of every reader option.

Every format declares the options its reader takes, in its row of the format table
:data:`lstm_data.io.formats.FORMATS`, from which :data:`READER_OPTIONS` is derived
(the formats that take each option are listed there, and by the error for an option
given to a format that does not take it). An option
that does not exist is an :class:`~lstm_data.errors.OptionError` naming it and
the close match; an option that exists but does not apply to a file's format is
an error too, naming the format and what it takes, never silence.

===================  ==========================================================
option               meaning
===================  ==========================================================
``dtype``            float dtype of values: ``"float32"`` or ``"float64"``
``threads``          threads that decompress and parse (``None``: every core)
``block_bytes``      bytes handled per step (parse block, tree step)
``in_ram``           read every value at open (``None``: the format's default;
                     ``False``: by row group / cluster on demand)
``max_run_chunks``   longest single read of an on-disk store, in chunks
``sep``              CSV field separator
``list_sep``         separator of the numbers inside a CSV list cell
``tree``             the TTree (or RNTuple) of a ROOT file
``columns``          read only these columns (names or globs ``Muon_*``)
``exclude``          never read these columns (names or globs; beats columns)
``root``             the HDF5 group holding lstm_ee's arrays
``trust_external``   follow HDF5 external links, external storage, virtual
                     datasets of other files (default: refuse them)
``trust_unchecked``  open a store without a manifest (written before manifests,
                     or by another tool) without the warning that says what is
                     not checked there
``tables``           the NOvA tables to read
``slice_table``      the NOvA table whose rows are the events
``aliases``          NOvA column renames ``{old: new}``
``parent``           L5Kit: the array whose rows are the events
``relations``        L5Kit: child array -> interval column of the parent
``cache_chunks``     decoded chunks kept (L5Kit: per array; ROOT read on demand)
``needed``           the columns a spec needs: read only those where the format
                     selects columns (a hint: ignored elsewhere)
``file_values``      scalar columns taken from the file, not its rows: name ->
                     ``"index"`` (the file's position) or ``{glob: number}``
                     (a label or weight per path pattern; first match wins)
``connect_timeout``  seconds to wait for a connection to a server (default 10)
``read_timeout``     seconds to wait for each piece of a server's answer
                     (default 30): a server that stalls is an error
``retries``          times a read at a URL is asked again after an HTTP 5xx, a
                     reset or an answer cut short (default 3; 0: never)
``max_line_bytes``   the longest CSV line (or quoted record), in bytes (default
                     64 MiB): a longer one is a ParseError naming its line
``max_columns``      the most columns a CSV header may name (default 10,000):
                     more is a ParseError naming the file, line and count
``progress``         a progress callback or bar (not written to TOML)
===================  ==========================================================

Readers take these options under these names (``read_csv(path, block_bytes=...)``).
Older spellings (``use_threads``, ``block_size``, ``step_bytes``, ``workers``) are
errors naming the new one (:mod:`lstm_data._util.deprecation`). ``read_ahead`` moved to
:class:`~lstm_data.batching.order.options.Order` (``Order(read_ahead=...)``), the
home of the block shuffle it reads ahead for.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, Mapping, Sequence

import numpy as np

from lstm_data._util.types import PlainDict, PlainMapping
from lstm_data._util.checks import count_option, flag_option, positive_int_option, seconds_option, text_option
from lstm_data._util.close_names import close_names
from lstm_data._util.declared import DeclaredOptions, unknown_option
from lstm_data.errors import OptionError
from lstm_data.io.formats import FORMATS
from lstm_data.io.plumbing.remote_errors import RemoteSettings

__all__ = ["ReadOptions", "READER_OPTIONS", "REMOTE_OPTIONS", "read_options_from", "file_value_columns",
           "unknown_open_keyword"]

#: the options of reads at URLs, handed to a reader as one ``remote=RemoteSettings(...)``
REMOTE_OPTIONS = ("connect_timeout", "read_timeout", "retries")


def _dtype(value: Any) -> str:
    try:
        dt: np.dtype = np.dtype(value)
    except TypeError:
        raise OptionError(f"dtype must be float32 or float64, got {value!r}") from None
    if dt not in (np.float32, np.float64):
        raise OptionError(f"dtype must be float32 or float64, got {dt}")
    return dt.name


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise OptionError(f"tables must be a list of names, got {value!r}")
    return tuple(value)


def _patterns(name: str) -> Any:
    def check(value: Any) -> tuple[str, ...]:
        if isinstance(value, str):
            value = (value,)
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
            raise OptionError(f"{name} must be a list of column names or glob patterns, got {value!r}")
        return tuple(value)
    return check


def _mapping(name: str) -> Any:
    def check(value: Any) -> dict[str, str]:
        if not isinstance(value, Mapping):
            raise OptionError(f"{name} must be a table of names, got {value!r}")
        return {str(k): str(v) for k, v in value.items()}
    return check


def _file_values(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise OptionError(f"file_values must be a table of column name -> 'index' or {{pattern: number}}, "
                          f"got {value!r}")
    out: dict[str, Any] = {}
    for name, rule in value.items():
        if rule == "index":
            out[str(name)] = "index"
            continue
        if not isinstance(rule, Mapping) or not rule or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in rule.values()):
            raise OptionError(f"file_values[{name!r}] must be 'index' or a table of path pattern -> "
                              f"number, got {rule!r}")
        out[str(name)] = {str(k): v for k, v in rule.items()}
    return out


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReadOptions(DeclaredOptions):
    """How data is read; see the table of :mod:`lstm_data.io.read_options`.

    Every option defaults to ``None``: the reader's own default. Give options to
    :func:`lstm_data.open` as ``read=ReadOptions(...)`` or as keywords
    (``lstm_data.open(path, threads=2)``); both are checked against the format.
    The formats in brackets are those that take an option made for them; options
    that several formats take (``threads``, ``columns``, ``exclude``, ...) go to the
    formats whose row in :data:`lstm_data.io.formats.FORMATS` lists them.

    Parameters
    ----------
    dtype
        Float dtype of the values, ``"float32"`` or ``"float64"`` (every format).
    threads
        Threads that decompress and parse; ``None``: every core.
    block_bytes
        Bytes handled per step: a parse block, a tree step (csv, root).
    in_ram
        Read every value at open; ``None``: the format's default; ``False``: read row
        groups / clusters on demand, memory bounded (parquet, root).
    max_run_chunks
        Longest single read of an on-disk store, in chunks (hdf5, zarr).
    sep
        CSV field separator; ``None``: detected from the header (csv).
    list_sep
        Separator of the numbers inside a CSV list cell; default ``,`` (csv).
    tree
        The TTree or RNTuple of a ROOT file (root).
    columns
        Read only these columns: names or glob patterns such as ``Muon_*`` (formats
        that read columns one by one).
    exclude
        Never read these columns: names or globs; beats ``columns`` (formats that
        take ``columns``).
    root
        The HDF5 group holding lstm_ee's arrays (hdf5).
    tables
        The NOvA tables to read, names or patterns (nova).
    slice_table
        The NOvA table whose rows are the events (nova).
    aliases
        NOvA renames, new name -> table or variable of the file (nova).
    parent
        L5Kit: the array whose rows are the events (l5kit).
    relations
        L5Kit: child array -> interval column of the parent (l5kit).
    cache_chunks
        Decoded chunks kept: per array (l5kit); clusters of a ROOT file read on
        demand (root).
    read_ahead
        Deprecated: give ``Order(read_ahead=...)`` (see
        :class:`~lstm_data.batching.order.options.Order`), the home of the block
        shuffle it reads ahead for; ``Batches(read=ReadOptions(read_ahead=...))``
        still works for one release, with a ``DeprecationWarning``.
    trust_external
        Follow HDF5 external links, external storage and virtual datasets of other
        files, which are refused by default (hdf5, nova).
    trust_unchecked
        Open a precomputed batch store that has no manifest (written before
        manifests, or by another tool) without the warning that names what is not
        checked there: chunks moved, swapped or copied from elsewhere and edited
        metadata (batch stores: ``open_batches(path, read=...)``).
    file_values
        Scalar columns taken from the file rather than its rows: column name ->
        ``"index"`` (the file's position) or ``{glob: number}`` (a label or weight
        per path pattern, first match wins) (every format, several files).
    needed
        The columns the caller needs (a spec's variables): a hint, not a rule.
        Formats that read columns one by one (those that take ``columns``) read only
        these unless ``columns`` is given; the others read as usual. ``lstm-data
        precompute`` sets it from the spec.
    connect_timeout
        Seconds to wait for a connection to the server of a URL (default 10; zarr,
        root, parquet at URLs).
    read_timeout
        Seconds to wait for each piece of a server's answer, its headers and then
        every read of its body (default 30): a server that stalls longer is a
        ``RemoteError`` (a ``TimeoutError``) naming the URL.
    retries
        Times a read at a URL is asked again after an HTTP 500, 502, 503 or 504, a
        reset or a connection closed before the end of the answer, waiting 0.25 s,
        0.5 s, 1 s, ... between tries (default 3; 0: never).
    max_line_bytes
        The longest line of CSV text, or record when a quoted cell holds line breaks,
        in bytes (default 64 MiB): a longer one is a ``ParseError`` naming the file and
        its line, read in memory and time linear in this bound (csv).
    max_columns
        The most columns a CSV header may name (default 10,000; each costs the parser
        about 13 KB): more is a ``ParseError`` naming the file, the header's line and
        the count, before any row is parsed (csv).
    progress
        A progress callback or bar; never written to TOML (csv, root).
    """

    dtype: str | None = None
    threads: int | None = None
    block_bytes: int | None = None
    in_ram: bool | None = None
    max_run_chunks: int | None = None
    sep: str | None = None
    list_sep: str | None = None
    tree: str | None = None
    columns: tuple[str, ...] | None = None
    exclude: tuple[str, ...] | None = None
    root: str | None = None
    tables: tuple[str, ...] | None = None
    slice_table: str | None = None
    aliases: Mapping[str, str] | None = None
    parent: str | None = None
    relations: Mapping[str, str] | None = None
    cache_chunks: int | None = None
    read_ahead: bool | None = None
    trust_external: bool | None = None
    trust_unchecked: bool | None = None
    file_values: PlainMapping | None = None
    needed: tuple[str, ...] | None = None
    connect_timeout: float | None = None
    read_timeout: float | None = None
    retries: int | None = None
    max_line_bytes: int | None = None
    max_columns: int | None = None
    progress: Callable[[int, int], object] | None = None

    TOML_TABLE: ClassVar[str] = "read"
    CHECKS: ClassVar[Mapping[str, Any]] = {
        "dtype": _dtype, "threads": positive_int_option("threads"), "block_bytes": positive_int_option("block_bytes"),
        "in_ram": flag_option("in_ram"), "max_run_chunks": positive_int_option("max_run_chunks"), "sep": text_option("sep"),
        "list_sep": text_option("list_sep"), "tree": text_option("tree"), "columns": _patterns("columns"),
        "exclude": _patterns("exclude"), "root": text_option("root"), "tables": _names,
        "slice_table": text_option("slice_table"), "aliases": _mapping("aliases"), "parent": text_option("parent"),
        "relations": _mapping("relations"), "cache_chunks": positive_int_option("cache_chunks"),
        "read_ahead": flag_option("read_ahead"), "trust_external": flag_option("trust_external"),
        "trust_unchecked": flag_option("trust_unchecked"), "file_values": _file_values, "needed": _patterns("needed"),
        "connect_timeout": seconds_option("connect_timeout"), "read_timeout": seconds_option("read_timeout"),
        "retries": count_option("retries"), "max_line_bytes": positive_int_option("max_line_bytes"),
        "max_columns": positive_int_option("max_columns"),
    }
    #: options that live only in the running process (never written to TOML)
    RUNTIME: ClassVar[frozenset[str]] = frozenset({"progress"})

    def to_dict(self) -> PlainDict:
        """The options that differ from their defaults (runtime-only ones left out).

        Returns
        -------
        dict
            Option name -> value, as the ``[read]`` table of a TOML file holds them.
        """
        kept = self.replace(**{name: None for name in self.RUNTIME})
        return DeclaredOptions.to_dict(kept)

    def remote_settings(self) -> RemoteSettings:
        """The timeouts and retries of reads at URLs (the defaults where unset).

        Returns
        -------
        RemoteSettings
            ``connect_timeout``, ``read_timeout`` and ``retries``.
        """
        given = {name: getattr(self, name) for name in REMOTE_OPTIONS if getattr(self, name) is not None}
        return RemoteSettings(**given)

    def reader_keywords(self, fmt: str, where: str = "") -> PlainDict:
        """The keywords for the reader of ``fmt``: each set option it takes, under its own name.

        Parameters
        ----------
        fmt
            A format of :data:`READER_OPTIONS` (``"csv"``, ``"hdf5"``, ...).
        where
            What the options were given for (a path), named in errors.

        Returns
        -------
        dict
            Option name -> value (the reader function's keywords).

        Raises
        ------
        OptionError
            A set option does not apply to ``fmt`` (names the format and what it takes).
        """
        declared = READER_OPTIONS[fmt]
        out: dict[str, Any] = {}
        for name, value in self.changed().items():
            if name == "needed":  # a hint: pushed down where the format selects columns
                if "columns" in declared and self.columns is None:
                    out["columns"] = value
                continue
            if name in REMOTE_OPTIONS and name in declared:  # together, as one RemoteSettings
                out["remote"] = self.remote_settings()
                continue
            if name in REMOTE_OPTIONS and name in declared:  # together, as one RemoteSettings
                out["remote"] = self.remote_settings()
                continue
            if name not in declared:
                raise OptionError(
                    f"{where + ': ' if where else ''}option {name!r} does not apply to {fmt} data"
                    f"{_where_it_applies(name)}; {fmt} takes {', '.join(sorted(declared))}")
            out[name] = value
        return out


def file_value_columns(rules: Mapping[str, Any], paths: list[str]) -> dict[str, Sequence[float]]:
    """Each ``file_values`` column's value for each of ``paths`` (``fnmatch`` on the whole path).

    Raises
    ------
    OptionError
        A path matches no pattern of a column (names the path and the patterns).
    """
    import fnmatch

    out: dict[str, Sequence[float]] = {}
    for name, rule in rules.items():
        if rule == "index":
            out[name] = list(range(len(paths)))
            continue
        column = []
        for path in paths:
            value = next((v for pattern, v in rule.items() if fnmatch.fnmatch(path, pattern)), None)
            if value is None:
                raise OptionError(f"file_values[{name!r}]: {path} matches none of the patterns "
                                  f"{list(rule)}; add one (e.g. '*' for a default)")
            column.append(value)
        out[name] = column
    return out


def _where_it_applies(name: str) -> str:
    formats = [fmt for fmt, opts in READER_OPTIONS.items() if name in opts]
    if name == "file_values":
        return " (it is applied by lstm_data.open)"
    if formats == ["batch store"]:
        return " (it applies to precomputed batch stores: open_batches(path, read=...))"
    if not formats:
        return " (it is Order(read_ahead=...), used by Batches, not by readers)" if name == "read_ahead" else ""
    return f" (only to {', '.join(formats)})"


#: format -> the options its reader takes (as keywords of the same names; the options of reads at URLs
#: as one ``remote``): the ``options`` of each row of :data:`~lstm_data.io.formats.FORMATS`
READER_OPTIONS: dict[str, frozenset[str]] = {
    **{fmt.name: fmt.options | (frozenset(REMOTE_OPTIONS) if fmt.remote else frozenset())
       for fmt in sorted(FORMATS, key=lambda fmt: fmt.name)},
    #: precomputed batch stores (``open_batches``), not a reader of ``open``
    "batch store": frozenset({"trust_unchecked", *REMOTE_OPTIONS}),
}


#: what ``lstm_data.open`` takes besides the options of :class:`ReadOptions`
OPEN_PARAMETERS = ("schema", "read")
#: options ``lstm_data.open`` applies itself, whatever the format
_OPEN_OPTIONS = ("file_values",)


def unknown_open_keyword(name: str, fmt: str | None, where: str = "lstm_data.open") -> OptionError:
    """The error for a keyword of ``lstm_data.open`` that is neither a parameter nor an option.

    Parameters
    ----------
    name
        The keyword given.
    fmt
        The format of the data (a key of :data:`READER_OPTIONS`), or ``None`` when unknown.
    where
        What it was given to, for the message.

    Returns
    -------
    OptionError
        Naming ``name``, its close match among the parameters and every option (saying
        which format an option is for, when not this one), and what ``open`` takes for
        this format: its parameters and this format's options only.
    """
    own = sorted(set(READER_OPTIONS[fmt]) | set(_OPEN_OPTIONS)) if fmt in READER_OPTIONS else \
        sorted(set(ReadOptions.option_names()) - {"needed", "read_ahead"})
    pool = [*OPEN_PARAMETERS, *own, *ReadOptions.option_names()]
    close = close_names(name, pool, n=1)
    hint = ""
    if close:
        match = close[0]
        if match in OPEN_PARAMETERS:
            what = f" It is a parameter of {where}"
        elif match in own:
            what = ""
        else:
            formats = [f for f, o in READER_OPTIONS.items() if match in o]
            what = f" It is an option of {', '.join(formats)} data, not of {fmt}" if formats and fmt else ""
        hint = f" (did you mean {match!r}?{what})"
    data, options = (f"for {fmt} data it", "the options") if fmt else ("it", "the options of each format:")
    return OptionError(f"{where}: unknown keyword {name!r}{hint}; {data} takes the parameters "
                       f"{' and '.join(OPEN_PARAMETERS)}, and {options} {', '.join(own)}")


def read_options_from(read: ReadOptions | None, keywords: Mapping[str, Any],
                      where: str = "lstm_data.open") -> ReadOptions:
    """One :class:`ReadOptions` from ``read`` and keyword options (keywords win).

    Raises
    ------
    OptionError
        A keyword names no option (with the close match), or ``read`` is not a
        :class:`ReadOptions`.
    """
    if read is None:
        read = ReadOptions()
    elif not isinstance(read, ReadOptions):
        raise OptionError(f"{where}: read must be a ReadOptions, got {type(read).__name__}")
    if not keywords:
        return read
    known = ReadOptions.option_names()
    for name in keywords:
        if name not in known:
            raise unknown_option(name, known, where)
    return read.replace(**keywords)

