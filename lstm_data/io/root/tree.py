"""The branches of one TTree as columns, read through uproot with located errors (for :mod:`.root`)."""
from __future__ import annotations

from functools import reduce
from typing import Any, Iterator, Sequence

import numpy as np

from lstm_data._util.optional import require
from lstm_data.errors import FormatError, RemoteError, SchemaError
from lstm_data.io.columns.groups import name_prefix
from lstm_data.io.plumbing.remote_errors import TRANSPORT_ERRORS
from lstm_data.io.plumbing.remote import is_url
from lstm_data.io.root.baskets import plan_branch

__all__ = ["import_uproot", "pick_tree", "TreeColumns", "entry_ranges"]

_TREE_CLASSES = ("TTree", "TNtuple", "TNtupleD")
#: read whole, through :func:`lstm_data.io.awkward.from_awkward`
RNTUPLE_CLASS = "ROOT::RNTuple"
_NUMERIC_KINDS = "fiub"
#: errors that are not a damaged file
#: errors that say what happened themselves: never reported as damage of the file
_NOT_DAMAGE = (ImportError, MemoryError, SchemaError, FormatError, RemoteError)


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


def _numeric(interp: Any, uproot: Any) -> list[tuple[str, np.dtype, tuple[Any, ...]]] | None:
    """The numeric columns of a numbers interpretation: ``(name suffix, native dtype, index)``.

    One number gives ``[("", dtype, ())]``; ``float[3]`` gives ``("[0]", float32, (0,))``, ...;
    a leaf list ``struct {double x; int y[2];}`` gives ``(".x", float64, ("x",))``,
    ``(".y[0]", int32, ("y", 0))``, ... ``None``: not numbers.
    """
    if not isinstance(interp, uproot.interpretation.numerical.Numerical):
        return None
    parts = _dtype_parts(np.dtype(interp.to_dtype), "", ())
    return parts or None


def _dtype_parts(dt: np.dtype, suffix: str,
                 index: tuple[Any, ...]) -> list[tuple[str, np.dtype, tuple[Any, ...]]]:
    if dt.fields is not None:
        out = []
        for f in dt.names or ():
            path = f.split("/")  # a member of a member (TLorentzVector's fP/fX): nested records
            if not any(p.startswith("@") for p in path):  # uproot's own fields (version, byte count)
                out += _dtype_parts(dt.fields[f][0], suffix + "." + ".".join(path), index + tuple(path))
        return out
    base = dt.base if dt.shape else dt
    if base.fields is not None:
        return [p for idx in np.ndindex(*dt.shape)
                for p in _dtype_parts(base, suffix + "".join(f"[{i}]" for i in idx), index + idx)]
    if base.kind not in _NUMERIC_KINDS:
        return []
    native = base.newbyteorder("=")
    if not dt.shape:
        return [(suffix, native, index)]
    return [(suffix + "".join(f"[{i}]" for i in idx), native, index + tuple(idx))
            for idx in np.ndindex(*dt.shape)]


def _describe(b: Any) -> str:
    try:
        return str(b.interpretation)
    except Exception:
        return "?"


def _to_numpy(array: Any) -> np.ndarray:
    import awkward as ak

    return np.asarray(ak.to_numpy(array))


def _pick(array: Any, index: tuple[Any, ...], jagged: bool) -> Any:
    """Part ``index`` (field names and element numbers) of a whole branch's array."""
    for k in index:
        array = array[k] if isinstance(k, str) else array[(slice(None),) * (1 + jagged) + (k,)]
    return array


class TreeColumns:
    """The readable branches of ``ttree``: scalars, jagged branches with their counters, skipped ones.

    A fixed-size array branch (``float x[3]``, ``std::array``) gives one column per
    element, ``x[0]``, ``x[1]``, ...; inside a jagged branch (``x[n][3]``) they are
    jagged columns sharing its counter. A second branch of the same name (Delphes
    writes such trees) is named with ``;2`` after its top-level name
    (``Particle;2/Particle.PT``); see :meth:`collisions`.

    Attributes
    ----------
    scalars, jagged : list of str
        Flat numeric columns; jagged columns of numbers (counted arrays and ``std::vector``).
    skipped : dict
        Branch -> its type and why it is not read.
    """

    def __init__(self, ttree: Any, tree: str, file: str, selection: Any = None) -> None:
        uproot = import_uproot()
        self.ttree, self.tree, self.file = ttree, tree, file
        self.n = int(ttree.num_entries)
        self.scalars: list[str] = []
        self.jagged: list[str] = []
        self.skipped: dict[str, str] = {}
        self.renamed: dict[str, str] = {}
        self._branch: dict[str, Any] = {}
        self._part: dict[str, tuple[str, tuple[int, ...]]] = {}
        self._dtype: dict[str, np.dtype] = {}
        self._counter: dict[str, str | None] = {}
        self._cache: dict[str, np.ndarray] = {}
        self._range_cache: tuple[Any, Any] = (None, None)
        self._plans: dict[str, Any] = {}
        seen: dict[str, int] = {}
        for key, b in ttree.iteritems(recursive=True, full_paths=True):
            top, slash, rest = key.partition("/")
            count = seen[key] = seen.get(key, 0) + 1
            if count > 1:  # a second branch of this name: ROOT allows it, names must not collide
                renamed = f"{top};{count}{slash}{rest}"
                self.renamed[renamed] = key
                key = renamed
            if len(b.branches):
                continue  # a container: its sub-branches are listed too
            self._add(key, b, uproot)
        self._numeric_scalars = set(self.scalars)  # counters stay readable when not selected
        self._all = self.scalars + self.jagged + list(self.skipped)
        self.readable = len(self.scalars) + len(self.jagged)  # before columns / exclude
        if selection is not None:
            keys = self.counter_groups()
            self.scalars = [v for v in self.scalars if selection.wants(v, self._part[v][0])]
            self.jagged = [v for v in self.jagged
                           if selection.wants(v, keys.get(v) or name_prefix(v), self._part[v][0])]
            self.skipped = {k: why for k, why in self.skipped.items() if selection.wants(k)}

    def _skip(self, key: str, why: str) -> None:
        self.skipped[key] = why

    def _add(self, key: str, b: Any, uproot: Any) -> None:
        try:
            typename = b.typename or "?"
        except Exception:  # uproot cannot name some types (subarrays of structs)
            typename = str(b.member("fClassName", none_if_missing=True) or "") or _describe(b)
        try:
            interp = b.interpretation
        except Exception as exc:  # a type uproot cannot interpret
            self._skip(key, f"{typename}: uproot cannot interpret it ({type(exc).__name__})")
            return
        stored = int(b.num_entries)
        if stored != self.n:
            self._skip(key, f"{typename}: holds {stored} of the tree's {self.n} entries (no baskets "
                            "were written for the rest)")
            return
        parts = _numeric(interp, uproot)
        counter = None
        jagged = False
        if parts is None:
            if isinstance(interp, uproot.AsJagged):
                parts = _numeric(interp.content, uproot)
                leaf = b.count_leaf
                counter = None if leaf is None else str(leaf.member("fName"))
                jagged = True
            elif (isinstance(interp, uproot.AsObjects)
                  and isinstance(interp.model, uproot.containers.AsVector)):
                values = interp.model.values
                if isinstance(values, np.dtype) and values.shape == () and values.kind in _NUMERIC_KINDS:
                    parts, jagged = [("", values.newbyteorder("="), ())], True
                elif isinstance(values, (uproot.containers.AsVector, uproot.containers.AsRVec,
                                         uproot.containers.AsArray)):
                    self._skip(key, f"{typename}: a list of lists (doubly jagged); which level is a "
                                    "row is not known")
                    return
            if parts is None:
                why = "text, not numbers" if isinstance(interp, uproot.AsStrings) else \
                    "not numbers or lists of numbers"
                self._skip(key, f"{typename}: {why}")
                return
        if any(isinstance(k, str) for _, _, idx in parts for k in idx) and not self._probe(b):
            self._skip(key, f"{typename}: uproot cannot read this object type here")
            return
        for suffix, dt, idx in parts:
            name = key + suffix
            (self.jagged if jagged else self.scalars).append(name)
            if jagged:
                self._counter[name] = counter
            self._branch[name] = b
            self._part[name] = (key, tuple(idx))
            self._dtype[name] = dt

    def _probe(self, b: Any) -> bool:
        """Whether uproot reads the first basket of an object branch (struct members) at all."""
        if self.n == 0:
            return True
        try:  # the first entry (a range ending on a basket boundary trips uproot for some objects)
            b.array(entry_start=0, entry_stop=1, library="ak")
            return True
        except Exception as exc:
            if isinstance(exc, (ImportError, MemoryError, *TRANSPORT_ERRORS)):
                raise
            return False

    def collisions(self) -> dict[str, str]:
        """Renamed duplicate -> the name it shares, for the read columns only."""
        read = set(self.scalars) | set(self.jagged)
        out = {}
        for renamed, key in self.renamed.items():
            for name in read:
                if name == renamed or name.startswith(renamed + "["):
                    original = key + name[len(renamed):]
                    if original in read:
                        out[name] = original
        return out

    def available(self) -> list[str]:
        """Every column name, read or skipped (for messages)."""
        return list(self._all)

    def part(self, name: str) -> tuple[str, tuple[int, ...]]:
        """The branch key of column ``name`` and its element index (``()`` for a whole branch)."""
        return self._part[name]

    def branch(self, name: str) -> Any:
        """The uproot branch that holds column ``name``."""
        return self._branch[name]

    def cached(self, name: str) -> np.ndarray | None:
        """Column ``name`` if it was read whole already."""
        return self._cache.get(name)

    def forget(self, name: str) -> None:
        """Drop column ``name`` if :meth:`read` kept it (a column needed once, at open)."""
        self._cache.pop(name, None)

    def remember(self, name: str, array: np.ndarray) -> None:
        """Keep a whole column read elsewhere, so :meth:`read` does not read it again."""
        self._cache[name] = array

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
            elif len({name_prefix(v) for v in vs}) == 1:
                name = name_prefix(vs[0])
            else:
                name = c
            out.update({v: name for v in vs})
        return out

    def shared_counter(self, names: Sequence[str]) -> str | None:
        """The counter branch all ``names`` share, if it is a readable scalar branch."""
        counters = {self._counter.get(v) for v in names}
        c = counters.pop() if len(counters) == 1 else None
        return c if c in self._branch and c in self._numeric_scalars else None

    def basket_plan(self, name: str, uproot: Any) -> Any:
        """The :class:`~lstm_data.io.root.baskets.BranchPlan` of column ``name``, or ``None`` when
        the basket path cannot read it (an element of a branch, an unusual type, a remote file)."""
        if name not in self._plans:
            key, idx = self._part[name]
            local = not is_url(self.file)
            self._plans[name] = plan_branch(self._branch[name], name, self.n, uproot) \
                if local and not idx else None
        return self._plans[name]

    def uncompressed_bytes(self, name: str) -> int:
        return int(self._branch[name].uncompressed_bytes)

    def decoded_bytes(self, names: Sequence[str], dtypes: dict[str, np.dtype]) -> int:
        """About how many bytes columns ``names`` take once read, each as ``dtypes[name]``."""
        parts: dict[str, int] = {}
        for v in names:
            parts[self._part[v][0]] = parts.get(self._part[v][0], 0) + 1
        total = 0
        for v in names:
            own, want = self._dtype[v].itemsize, np.dtype(dtypes[v]).itemsize
            if v in self._numeric_scalars:
                total += self.n * want
            else:  # a jagged branch's bytes hold its values and 4 bytes of offset per entry
                stored = max(0, self.uncompressed_bytes(v) - 4 * self.n)
                total += stored * want // own // parts[self._part[v][0]]
        return total

    def cluster_bounds(self, names: Sequence[str]) -> np.ndarray:
        """Entries at which every branch of ``names`` starts a basket (0 and N included)."""
        offsets = [np.asarray(self._branch[v].entry_offsets, dtype=np.int64) for v in names]
        return reduce(np.intersect1d, offsets) if offsets else np.array([0, self.n], dtype=np.int64)

    def read(self, name: str) -> np.ndarray:
        """A flat column, whole, as a numpy array (kept for a second call)."""
        if name not in self._cache:
            key, idx = self._part[name]
            whole = self._cache.get("\0" + key)
            if whole is None:
                by_field = any(isinstance(k, str) for k in idx)  # records (objects) are read as awkward
                whole = self._call(name, 0, self.n, "ak" if by_field else "np")
                whole = whole if by_field else np.asarray(whole)
                if idx:
                    self._cache["\0" + key] = whole
            array = _pick(whole, idx, False)
            if not isinstance(array, np.ndarray):
                array = _to_numpy(array)
            # never a view of the memory-mapped file, which is closed after reading
            self._cache[name] = np.ascontiguousarray(array) if idx or not array.flags.owndata \
                else array
            if idx and all(n in self._cache for n, (k, _) in self._part.items() if k == key):
                self._cache.pop("\0" + key, None)
        return self._cache[name]

    def read_range(self, name: str, start: int, stop: int) -> Any:
        """Entries ``start:stop`` of a jagged column as an awkward array."""
        key, idx = self._part[name]
        if not idx:
            return self._call(name, start, stop, "ak")
        cached_at, array = self._range_cache
        if cached_at != (key, start, stop):
            array = self._call(name, start, stop, "ak")
            self._range_cache = ((key, start, stop), array)
        return _pick(array, idx, True)

    def _call(self, name: str, start: int, stop: int, library: str) -> Any:
        branch = self._branch[name]
        try:
            return branch.array(entry_start=start, entry_stop=stop, library=library)
        except Exception as exc:
            if isinstance(exc, _NOT_DAMAGE):
                raise
            where, row = self._damaged_basket(branch, start, stop, library)
            key = self._part[name][0]
            cause = "damaged file?"
            if "for interpretation" in str(exc):  # uproot's reading of the type does not fit the bytes
                cause = (f"its bytes do not fit uproot's reading of its type {branch.interpretation}: a "
                         f"damaged file, or a type uproot cannot read (exclude={[key]!r} skips it)")
            raise FormatError(f"tree {self.tree!r}: cannot read {where} of branch {key!r}; {cause} "
                              f"({type(exc).__name__}: {exc})", file=self.file,
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
