"""The branches of one TTree as columns, read through uproot with located errors (for :mod:`.root`)."""
from __future__ import annotations

from functools import reduce
from typing import Any, Iterator, Sequence

import numpy as np

from lstm_data._util.optional import require
from lstm_data.errors import FormatError, SchemaError
from lstm_data.io.jagged_groups import jagged_prefix

__all__ = ["import_uproot", "pick_tree", "TreeColumns", "entry_ranges"]

_TREE_CLASSES = ("TTree", "TNtuple", "TNtupleD")
#: read whole, through :func:`lstm_data.io.awkward.from_awkward`
RNTUPLE_CLASS = "ROOT::RNTuple"
_NUMERIC_KINDS = "fiub"
#: errors that are not a damaged file
_NOT_DAMAGE = (ImportError, MemoryError, SchemaError, FormatError)


def import_uproot() -> Any:
    """``import uproot`` (and check awkward), or an ImportError naming the extra to install."""
    return require("reading ROOT files", "root", "uproot", "awkward")  # uproot's arrays are awkward


def pick_tree(fh: Any, tree: str | None, file: str) -> tuple[Any, str, str]:
    """The TTree (or RNTuple) named ``tree``, or the file's only one, its name and class name.

    Raises
    ------
    FormatError
        The file holds no TTree (names what it holds) or cannot be read.
    SchemaError
        Several TTrees and no ``tree``, or no TTree named ``tree`` (lists the TTrees).
    """
    try:
        classes = fh.classnames(cycle=False)
    except Exception as exc:
        if isinstance(exc, _NOT_DAMAGE):
            raise
        raise FormatError(f"cannot list the objects of this ROOT file, damaged? ({type(exc).__name__}: "
                          f"{exc})", file=file) from exc
    trees = [k for k, c in classes.items() if c in _TREE_CLASSES or c == RNTUPLE_CLASS]
    listed = ", ".join(repr(t) for t in trees)
    if tree is None:
        if not trees:
            held = ", ".join(f"{k!r} ({c})" for k, c in list(classes.items())[:8]) or "nothing"
            raise FormatError(f"no TTree in this ROOT file; it holds {held}", file=file)
        if len(trees) > 1:
            raise SchemaError(f"this ROOT file holds {len(trees)} TTrees: {listed}; pick one with "
                              f"tree={trees[0]!r}, or as {file}:{trees[0]} on the command line",
                              file=file)
        tree = trees[0]
    elif tree.split(";")[0] not in trees:
        raise SchemaError(f"no TTree {tree!r} in this ROOT file; its TTrees: {listed or 'none'}", file=file)
    try:
        return fh[tree], tree.split(";")[0], classes[tree.split(";")[0]]
    except Exception as exc:
        if isinstance(exc, _NOT_DAMAGE):
            raise
        raise FormatError(f"cannot read TTree {tree!r}, damaged? ({type(exc).__name__}: {exc})",
                          file=file) from exc


def _numeric(interp: Any, uproot: Any) -> np.dtype | None:
    """The native dtype of a one-number-per-item interpretation, else ``None``."""
    if not isinstance(interp, uproot.interpretation.numerical.Numerical):
        return None
    dt = np.dtype(interp.to_dtype)
    if dt.shape != () or dt.kind not in _NUMERIC_KINDS:
        return None
    return dt.newbyteorder("=")


class TreeColumns:
    """The readable branches of ``ttree``: scalars, jagged branches with their counters, skipped ones.

    Attributes
    ----------
    scalars, jagged : list of str
        Flat numeric branches; jagged branches of numbers (counted arrays and ``std::vector``).
    skipped : dict
        Branch -> why it is not read (its type).
    """

    def __init__(self, ttree: Any, tree: str, file: str) -> None:
        uproot = import_uproot()
        self.ttree, self.tree, self.file = ttree, tree, file
        self.n = int(ttree.num_entries)
        self.scalars: list[str] = []
        self.jagged: list[str] = []
        self.skipped: dict[str, str] = {}
        self._branch: dict[str, Any] = {}
        self._dtype: dict[str, np.dtype] = {}
        self._counter: dict[str, str | None] = {}
        self._cache: dict[str, np.ndarray] = {}
        for key in ttree.keys(recursive=True, full_paths=True):
            b = ttree[key]
            if len(b.branches):
                continue  # a container: its sub-branches are listed too
            self._add(key, b, uproot)

    def _add(self, key: str, b: Any, uproot: Any) -> None:
        try:
            interp = b.interpretation
        except Exception as exc:  # a type uproot cannot interpret
            self.skipped[key] = f"{b.typename or '?'}: {type(exc).__name__}"
            return
        dt = _numeric(interp, uproot)
        if dt is not None:
            self.scalars.append(key)
        else:
            counter = None
            if isinstance(interp, uproot.AsJagged):
                dt = _numeric(interp.content, uproot)
                leaf = b.count_leaf
                counter = None if leaf is None else str(leaf.member("fName"))
            elif (isinstance(interp, uproot.AsObjects)
                  and isinstance(interp.model, uproot.containers.AsVector)):  # std::vector<number>
                values = interp.model.values
                if isinstance(values, np.dtype) and values.shape == () and values.kind in _NUMERIC_KINDS:
                    dt = values.newbyteorder("=")
            if dt is None:
                self.skipped[key] = str(b.typename or interp)
                return
            self.jagged.append(key)
            self._counter[key] = counter
        self._branch[key] = b
        self._dtype[key] = dt

    def describe_skipped(self) -> str:
        items = list(self.skipped.items())
        text = ", ".join(f"{k!r} ({t})" for k, t in items[:6])
        return text + (f" and {len(items) - 6} more" if len(items) > 6 else "")

    def dtype(self, name: str) -> np.dtype:
        return self._dtype[name]

    def counter_groups(self) -> dict[str, str]:
        """Jagged branch -> group name, for counters shared by several jagged branches."""
        members: dict[str, list[str]] = {}
        for v in self.jagged:
            c = self._counter[v]
            if c is not None:
                members.setdefault(c, []).append(v)
        out = {}
        for c, vs in members.items():
            if len(vs) < 2:
                continue  # a counter of its own: the branch groups by prefix
            head = c[1:] if c[:1] in "nN" and len(c) > 1 else ""
            if head and all(v.startswith(head) for v in vs):
                name = head
            elif len({jagged_prefix(v) for v in vs}) == 1:
                name = jagged_prefix(vs[0])
            else:
                name = c
            out.update({v: name for v in vs})
        return out

    def shared_counter(self, names: Sequence[str]) -> str | None:
        """The counter branch all ``names`` share, if it is a readable scalar branch."""
        counters = {self._counter.get(v) for v in names}
        c = counters.pop() if len(counters) == 1 else None
        return c if c in self._branch and c in self.scalars else None

    def uncompressed_bytes(self, name: str) -> int:
        return int(self._branch[name].uncompressed_bytes)

    def cluster_bounds(self, names: Sequence[str]) -> np.ndarray:
        """Entries at which every branch of ``names`` starts a basket (0 and N included)."""
        offsets = [np.asarray(self._branch[v].entry_offsets, dtype=np.int64) for v in names]
        return reduce(np.intersect1d, offsets) if offsets else np.array([0, self.n], dtype=np.int64)

    def read(self, name: str) -> np.ndarray:
        """A flat branch, whole, as a numpy array (kept for a second call)."""
        if name not in self._cache:
            array = np.asarray(self._call(name, 0, self.n, "np"))
            # never a view of the memory-mapped file, which is closed after reading
            self._cache[name] = array if array.flags.owndata else array.copy()
        return self._cache[name]

    def read_range(self, name: str, start: int, stop: int) -> Any:
        """Entries ``start:stop`` of a branch as an awkward array."""
        return self._call(name, start, stop, "ak")

    def _call(self, name: str, start: int, stop: int, library: str) -> Any:
        branch = self._branch[name]
        try:
            return branch.array(entry_start=start, entry_stop=stop, library=library)
        except Exception as exc:
            if isinstance(exc, _NOT_DAMAGE):
                raise
            where, row = self._damaged_basket(branch, start, stop, library)
            raise FormatError(f"tree {self.tree!r}: cannot read {where} of branch {name!r}; damaged "
                              f"file? ({type(exc).__name__}: {exc})", file=self.file,
                              variable=name, row=row) from exc

    @staticmethod
    def _damaged_basket(branch: Any, start: int, stop: int, library: str) -> tuple[str, int]:
        """Retry basket by basket: which basket of ``start:stop`` fails (its entries)."""
        try:
            bounds = [int(x) for x in branch.entry_offsets]
        except Exception:
            return f"entries {start}:{stop}", start
        for i, (a, z) in enumerate(zip(bounds[:-1], bounds[1:])):
            if z <= start or a >= stop:
                continue
            try:
                branch.array(entry_start=max(a, start), entry_stop=min(z, stop), library=library)
            except Exception:
                return f"basket {i} (entries {a}:{z})", a
        return f"entries {start}:{stop}", start

    def check_counts(self, counts: np.ndarray, lengths: dict[str, np.ndarray], start: int) -> None:
        """Raise unless each branch's lengths are its counter's values (entries from ``start``)."""
        for v, lens in lengths.items():
            if len(lens) != len(counts):
                raise FormatError(f"tree {self.tree!r}: branch {v!r} gave {len(lens)} entries for entries "
                                  f"{start}:{start + len(counts)}; damaged file?", file=self.file,
                                  variable=v, row=start)
            bad = np.flatnonzero(lens != counts)
            if len(bad):
                e = start + int(bad[0])
                raise FormatError(f"tree {self.tree!r}: branch {v!r} holds {int(lens[bad[0]])} values in "
                                  f"entry {e} but its counter {self._counter[v]!r} says "
                                  f"{int(counts[bad[0]])}; damaged file?", file=self.file,
                                  variable=v, row=e)


def entry_ranges(cols: TreeColumns, names: Sequence[str], step_bytes: int) -> Iterator[tuple[int, int]]:
    """Entry ranges of about ``step_bytes`` uncompressed bytes of ``names``, ending on cluster bounds."""
    n = cols.n
    if not names or n == 0:
        return
    total = sum(cols.uncompressed_bytes(v) for v in names)
    per = max(1, int(step_bytes * n // max(total, 1)))
    bounds = cols.cluster_bounds(names)
    start = 0
    while start < n:
        target = min(n, start + per)
        i = int(np.searchsorted(bounds, target, side="right")) - 1
        stop = int(bounds[i]) if target < n and i >= 0 and bounds[i] > start else target
        yield start, stop
        start = stop
