"""What to read of a TTree: its columns, groups and dtypes, decided once (for :mod:`.root`).

:func:`plan_tree` checks the selection and the schema against the tree's branches and
gives a :class:`TreePlan`; :func:`open_root` opens a local file or a URL with located
errors.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lstm_data.errors import FormatError, SchemaError, redact
from lstm_data.io.awkward import refuse_named_skipped
from lstm_data.io.columns.select import ColumnSelection
from lstm_data.io.columns.groups import plan_groups
from lstm_data.io.plumbing.remote import is_url, remote_read_error
from lstm_data.io.plumbing.remote_errors import RemoteSettings
from lstm_data.io.root.tree import TreeColumns

__all__ = ["TreePlan", "plan_tree", "open_root", "remote_member"]

_log = logging.getLogger("lstm_data")


@dataclass
class TreePlan:
    """The columns of one tree to read, and how.

    Attributes
    ----------
    cols : TreeColumns
        The tree's readable branches (after ``columns`` / ``exclude``).
    scalars : list of str
    groups : dict
        Group -> its branches, in order.
    dt : numpy dtype or None
        The dtype every column is cast to (``None``: the branches' own).
    declared : set of str
        Groups a schema declares (their branches must have equal lengths; never cut).
    free : set of str
        Jagged branches without a counter, grouped by their lengths (see
        :mod:`lstm_data.io.columns.groups`).
    """

    cols: TreeColumns
    scalars: list[str]
    groups: dict[str, list[str]]
    dt: np.dtype | None
    declared: set[str] = field(default_factory=set)
    free: set[str] = field(default_factory=set)

    def keyed(self, group: str) -> bool:
        """Whether ``group`` holds a branch its counter groups (it keeps its name when cut by lengths)."""
        return any(v not in self.free for v in self.groups[group])

    def dtypes(self) -> dict[str, np.dtype]:
        """Column -> the dtype it is read as (a group's columns take their common type)."""
        cols, dt = self.cols, self.dt
        out = {s: np.dtype(dt if dt is not None else cols.dtype(s)) for s in self.scalars}
        for names in self.groups.values():
            common = dt if dt is not None else np.result_type(*[cols.dtype(v) for v in names])
            out.update({v: np.dtype(common) for v in names})
        return out

    def decoded_bytes(self) -> int:
        """About how many bytes the planned columns take once read."""
        dtypes = self.dtypes()
        return self.cols.decoded_bytes(list(dtypes), dtypes)

    def n_columns(self) -> int:
        return len(self.scalars) + sum(len(v) for v in self.groups.values())


def remote_member(name: str, tree: str | None) -> tuple[str, str | None]:
    """``(url, tree)`` of ``"https://host/f.root:Events"`` (uproot's spelling); other names unchanged."""
    if not is_url(name):
        return name, tree
    head, sep, member = name.rpartition(":")
    if sep and member and "/" not in member and head.lower().endswith(".root"):
        if tree not in (None, member):
            raise SchemaError(f"tree={tree!r} given for {redact(name)}, which names tree {member!r}",
                              file=redact(head))
        return head, member
    return name, tree


def open_root(uproot: Any, name: str, *, lazy: bool, remote: RemoteSettings | None = None) -> Any:
    """``uproot.open`` of a path or URL, without caches.

    A local file is memory-mapped for a whole read; for reads on demand (``lazy``) it
    is read with ``pread`` instead, so pages read once do not stay in the process's
    memory, and opened for each read, so that no file is held open between reads
    (:class:`~lstm_data.io.root.local_source.PerReadFileSource`). A URL goes to uproot's handler of its protocol (HTTP(S), ``root://``
    through the XRootD client, any other through
    :class:`~lstm_data.io.root.remote_source.CheckedSource` with the timeouts and retries
    of ``remote``): only the byte ranges of the baskets read are fetched.

    Raises
    ------
    ImportError
        ``root://`` without the XRootD client (or another protocol's package).
    FormatError
        Not a ROOT file (damaged or truncated?).
    lstm_data.errors.RemoteError
        For a URL: nothing there (a ``FileNotFoundError``), no server, no answer in time, an
        HTTP error, or a server that does not serve byte ranges (``NoByteRangesError``); see
        :func:`lstm_data.io.plumbing.remote.remote_read_error`. A server that answers with
        other bytes than those asked is a ``FormatError`` naming the URL and the range.
    """
    shown = redact(name)
    is_remote = is_url(name)
    extra: dict[str, Any] = {}
    if is_remote:
        target: Any = {name: None}
        if not name.lower().startswith(("root://", "xroot://")):
            from lstm_data.io.root.remote_source import SETTINGS_OPTION, CheckedSource

            extra = {"handler": CheckedSource, SETTINGS_OPTION: remote or RemoteSettings()}
    elif lazy:  # pread on the calling thread (no thread to fork), no file held open between reads
        from lstm_data.io.root.local_source import PerReadFileSource

        target = Path(name)  # a Path: uproot would read 'a.root:tree' in a str as an object path
        extra = {"handler": PerReadFileSource, "use_threads": False}
    else:
        target = Path(name)
        extra = {"handler": uproot.MemmapSource}
    try:
        return uproot.open(target, array_cache=None, object_cache=None, **extra)
    except MemoryError:
        raise
    except ImportError as exc:
        if name.lower().startswith(("root://", "xroot://")):
            raise ImportError(f"reading {shown} needs the XRootD Python client, which is not installed "
                              f"(conda install -c conda-forge xrootd, or pip install xrootd); or copy the "
                              f"file locally (xrdcp) [{exc}]") from None
        raise ImportError(f"reading {shown}: {redact(exc)}") from None
    except FormatError:  # a server's wrong answer, named with the URL and the range
        raise
    except Exception as exc:  # uproot raises many types for a file it cannot parse
        cause = remote_read_error(exc, name) if is_remote else None
        if cause is not None:  # nothing there, no server, an HTTP error, no byte ranges: said as such
            raise cause from None
        if isinstance(exc, FileNotFoundError):
            raise
        if is_remote and isinstance(exc, OSError):
            raise OSError(f"cannot read {shown}: {type(exc).__name__}: {redact(exc)}") from None
        raise FormatError(f"cannot open as a ROOT file, damaged or truncated? "
                          f"({type(exc).__name__}: {redact(exc)})", file=shown) from exc


def plan_tree(ttree: Any, tree_name: str, name: str, schema: Any, dt: np.dtype | None,
              selection: ColumnSelection) -> TreePlan:
    """The columns of ``ttree`` to read, checked (see :func:`lstm_data.io.root.read_root`'s errors)."""
    cols = TreeColumns(ttree, tree_name, name, selection if selection else None)
    where = f"tree {tree_name!r}: "
    selection.check_all_used(cols.available(), file=name, where=where)
    refuse_named_skipped(selection, cols.skipped, name)
    _check_collisions(cols, name)
    if not cols.scalars and not cols.jagged and selection and cols.readable:
        raise SchemaError(f"{where}columns={list(selection.columns or ['*'])} with exclude="
                          f"{list(selection.exclude)} leaves no column to read", file=name)
    if not cols.scalars and not cols.jagged:
        raise SchemaError(f"{where}nothing to read: {cols.n} entries but no branch of numbers or "
                          f"jagged lists of numbers; it holds {cols.describe_skipped()}", file=name)
    try:
        planned = plan_groups(schema, cols.scalars, cols.jagged, cols.counter_groups(), file=name)
    except SchemaError as exc:
        if exc.variable not in cols.skipped:
            raise
        raise SchemaError(f"{where}the schema names branch {exc.variable!r} of type "
                          f"{cols.skipped[exc.variable]}", file=name, variable=exc.variable) from None
    if cols.skipped:
        _log.info("%s: %sskipped %d branches that are not numbers or jagged lists of numbers: %s",
                  name, where, len(cols.skipped), cols.describe_skipped())
    return TreePlan(cols, list(planned.scalars), {g: list(v) for g, v in planned.groups.items()},
                    dt if dt is not None else planned.dtype, planned.declared, planned.free)


def _check_collisions(cols: TreeColumns, file: str) -> None:
    """Two read branches of the same name: a SchemaError naming them and how to pick one."""
    clash = cols.collisions()
    if not clash:
        return
    first = next(iter(clash))
    top = first.split("/", 1)[0]
    shared = top.split(";", 1)[0]
    raise SchemaError(
        f"tree {cols.tree!r} holds {len(clash)} pairs of branches with the same name, e.g. "
        f"{clash[first]!r} twice (uproot would read only the first); the second copies are named "
        f"{top!r}...: read one of them with exclude=[{top + '*'!r}] (keeps the first) or "
        f"exclude=[{shared + '/*'!r}, {shared!r}] (keeps the second)", file=file, variable=clash[first])
