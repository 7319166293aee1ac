"""ROOT trees read on demand, cluster by cluster: :class:`RootDataset` (``in_ram=False``).

A TTree's baskets are flushed in clusters (entry ranges where every branch starts a
basket: ``TTree::SetAutoFlush``, one ``extend`` in uproot), an RNTuple's pages in
clusters too. Whole clusters, merged into chunks of about ``block_bytes`` decoded
bytes, are the dataset's chunks (see :mod:`lstm_data.io.plumbing.chunked`): a request decodes
each chunk it touches once, through the same code as the whole-tree read (the
threaded basket path, then uproot's), so the values are bitwise those of
:func:`lstm_data.io.root.read_root` with ``in_ram=True``. Block shuffle over many such
files (a :class:`~lstm_data.data.concat.ConcatDataset`) cuts its blocks at files and
chunks and decodes each chunk at most twice per epoch; memory holds the group
offsets, the read-ahead windows and ``cache_chunks`` decoded chunks.

At open, a TTree's group offsets come from the counter branches (``nMuon``); branches
without a counter (``std::vector``) and RNTuples are read once, chunk by chunk, for
their lengths. Branches without a counter are then grouped by their lengths over the
whole tree (see :mod:`lstm_data.io.columns.groups`), exactly as a whole read groups
them, and every chunk is read as those groups.
"""
from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np

from lstm_data.data.dataset import InMemoryDataset, RowSelection
from lstm_data.errors import SchemaError
from lstm_data.io.columns.groups import check_group_lengths, settle
from lstm_data.io.plumbing.chunked import ChunkedDataset, chunk_bounds_of
from lstm_data.io.columns.select import ColumnSelection
from lstm_data.io.ours.layout import value_dtype
from lstm_data.io.plumbing.remote_errors import RemoteSettings
from lstm_data.data.dataset import as_rows
from lstm_data.io.root.baskets import BranchPlan
from lstm_data.io.root.direct import ChunkBaskets, gather
from lstm_data._util.cores import available_cores
from lstm_data.io.root.plan import TreePlan, open_root, plan_tree, remote_member
from lstm_data.io.root.read import read_columns
from lstm_data.io.root.rntuple import RNTupleReader
from lstm_data.io.root.tree import RNTUPLE_CLASS, TreeColumns, import_uproot, pick_tree

__all__ = ["RootDataset", "CHUNK_BYTES", "RangeColumns"]

#: decoded bytes per chunk when ``block_bytes`` is not given
CHUNK_BYTES = 4 << 20
_log = logging.getLogger("lstm_data")


class RangeColumns(TreeColumns):
    """Entries ``start:stop`` of a tree's columns, read as a tree of their own (row 0 = ``start``).

    Shares the parent's branches and metadata; its reads, basket plans and cluster
    bounds are those of the range. Errors still name the tree's entries.
    """

    def __init__(self, parent: TreeColumns, start: int, stop: int) -> None:  # noqa: D107 - no super().__init__
        self.__dict__.update(parent.__dict__)
        self.parent = parent
        self.base = int(start)
        self.n = int(stop) - int(start)
        self._cache = {}
        self._range_cache = (None, None)

    def _call(self, name: str, start: int, stop: int, library: str) -> Any:
        return self.parent._call(name, start + self.base, stop + self.base, library)

    def check_counts(self, counts: np.ndarray, lengths: dict[str, np.ndarray], start: int) -> None:
        self.parent.check_counts(counts, lengths, start + self.base)  # errors name the tree's entries

    def cluster_bounds(self, names: Sequence[str]) -> np.ndarray:
        bounds = self.parent.cluster_bounds(names) - self.base
        inside = bounds[(bounds > 0) & (bounds < self.n)]
        return np.concatenate([[0], inside, [self.n]]).astype(np.int64)

    def uncompressed_bytes(self, name: str) -> int:
        return self.parent.uncompressed_bytes(name) * self.n // max(1, self.parent.n)

    def basket_plan(self, name: str, uproot: Any) -> BranchPlan | None:
        """The parent's plan cut to the baskets of the range (``None`` if a basket crosses its ends)."""
        plan = self.parent.basket_plan(name, uproot)
        if plan is None:
            return None
        lo, hi = self.base, self.base + self.n
        keep = [i for i, (a, z) in enumerate(zip(plan.starts, plan.stops)) if a >= lo and z <= hi]
        if sum(plan.stops[i] - plan.starts[i] for i in keep) != self.n:
            return None
        return BranchPlan(plan.name, [plan.seeks[i] for i in keep], [plan.sizes[i] for i in keep],
                          [plan.starts[i] for i in keep], [plan.stops[i] for i in keep], plan.dtype,
                          plan.jagged, plan.header, base=lo)


class RootDataset(ChunkedDataset):
    """One TTree or RNTuple of a ROOT file (local or at a URL), read by cluster on demand.

    Parameters
    ----------
    path
        The ``.root`` file or its URL (``https://``, ``root://``, any fsspec URL).
    tree, schema, dtype, columns, exclude, threads
        As for :func:`lstm_data.io.root.read_root`.
    block_bytes
        Decoded bytes per chunk (whole clusters are merged up to about this size;
        default :data:`CHUNK_BYTES`).
    cache_chunks
        Decoded chunks kept for requests of single columns (default 2).
    remote
        Timeouts and retries of the reads of a file at a URL.

    Raises
    ------
    FormatError, SchemaError, ImportError
        As :func:`lstm_data.io.root.read_root`; a file changed while open is a
        ``FormatError`` when a chunk reads differently than at open.
    """

    def __init__(self, path: Any, *, tree: str | None = None, schema: Any = None, dtype: Any = None,
                 block_bytes: int | None = None, columns: Any = None, exclude: Any = None,
                 threads: int | None = None, cache_chunks: int | None = None,
                 remote: RemoteSettings | None = None) -> None:
        self._open(path, tree=tree, schema=schema, dtype=dtype, block_bytes=block_bytes, columns=columns,
                   exclude=exclude, threads=threads, cache_chunks=cache_chunks, remote=remote)

    def _open(self, path: Any, *, tree: str | None, schema: Any, dtype: Any, block_bytes: int | None,
              columns: Any, exclude: Any, threads: int | None, cache_chunks: int | None,
              remote: RemoteSettings | None = None, layout: tuple[Any, ...] | None = None) -> None:
        """Open the file; find the chunks and group offsets unless ``layout`` gives them (unpickling)."""
        self._reopen = ((path,), {"tree": tree, "schema": schema, "dtype": dtype, "block_bytes": block_bytes,
                                  "columns": columns, "exclude": exclude, "threads": threads,
                                  "cache_chunks": cache_chunks, "remote": remote})
        self._remote = remote
        name, tree = remote_member(str(path), tree)
        dt = value_dtype(dtype, file=name)
        self._threads = threads
        chunk_bytes = CHUNK_BYTES if block_bytes is None else int(block_bytes)
        if chunk_bytes < 1:
            raise ValueError(f"block_bytes must be at least 1, got {block_bytes!r} (file {name})")
        self._args = (name, tree, schema, dt, ColumnSelection(columns, exclude))
        self._stale = False
        self._open_reads = 0  # chunks read at open to find group lengths
        self._settled: dict[str, list[str]] | None = None  # the groups, once the lengths are known
        self._attach()
        try:
            if layout is not None:
                bounds, scalars, groups, self.skipped = layout
            elif self._rntuple is not None:
                bounds, scalars, groups = self._rntuple.layout(chunk_bytes)
                self.skipped = dict(self._rntuple.skipped)
                self._open_reads = len(bounds) - 1
            else:
                bounds, scalars, groups = self._tree_layout(chunk_bytes)
                self.skipped = dict(self._plan.cols.skipped)
        except BaseException:
            self._fh.close()
            raise
        if self._rntuple is None:
            self._settle({g: list(v[0]) for g, v in groups.items()})
        self._setup_chunks(bounds, scalars, groups, (name,), cache_chunks)
        if self._open_reads:
            self.io_stats.record("open", 0, self._open_reads, 0)
        if layout is None:
            _log.info("%s: %s %r read on demand in %d chunks of whole clusters", name,
                      "RNTuple" if self._rntuple else "tree", self.tree, self.n_chunks)

    def __getstate__(self) -> dict[str, Any]:
        """The path and options, with the chunks and group offsets found at open (not read again)."""
        groups = {g: (self._groups[g], self._group_dtypes[g], self._offsets_of[g]) for g in self._groups}
        return {"_reopen": self._reopen,
                "layout": (self.chunk_bounds, dict(self._scalar_dtypes), groups, dict(self.skipped))}

    def __setstate__(self, state: dict[str, Any]) -> None:
        (path,), kwargs = state["_reopen"]
        self._open(path, layout=state.get("layout"), **kwargs)

    # -- open ----------------------------------------------------------------------
    def _attach(self) -> None:
        """Open the file and find the tree (again in a forked child: its own file handle)."""
        name, tree, schema, dt, selection = self._args
        self._fh = open_root(import_uproot(), name, lazy=True, remote=self._remote)
        self._rntuple: RNTupleReader | None = None
        try:
            ttree, tree_name, kind = pick_tree(self._fh, tree, name)
            self.tree = tree_name
            if kind == RNTUPLE_CLASS:
                self._rntuple = RNTupleReader(ttree, tree_name, name, schema, dt, selection)
            else:
                self._plan = plan_tree(ttree, tree_name, name, schema, dt, selection)
                if self._settled is not None:
                    self._settle(self._settled)
        except BaseException:
            self._fh.close()
            raise

    def _settle(self, groups: dict[str, list[str]]) -> None:
        """Read every chunk as ``groups`` (found at open): groups without a counter are checked,
        never cut again, so each chunk gives the dataset's groups."""
        plan = self._plan
        self._settled = groups
        cols = plan.cols
        fixed = {g for g, names in groups.items() if cols.shared_counter(names) is None}
        self._plan = TreePlan(cols, plan.scalars, dict(groups), plan.dt, set(plan.declared) | fixed, plan.free)

    def _after_fork(self) -> None:
        super()._after_fork()
        self._stale = True  # the parent's file handle shares its offset with the parent
    def _tree_layout(self, chunk_bytes: int) -> tuple[np.ndarray, dict[str, np.dtype[Any]],
                                                       dict[str, tuple[list[str], np.dtype[Any], np.ndarray]]]:
        """Chunk bounds, scalar dtypes and groups (variables, dtype, offsets) of the planned tree."""
        plan: TreePlan = self._plan
        cols = plan.cols
        members = list(plan.scalars) + [v for names in plan.groups.values() for v in names]
        per_row = max(1, plan.decoded_bytes()) / max(1, cols.n)
        rows = max(1, int(chunk_bytes / per_row))
        bounds = chunk_bounds_of(cols.cluster_bounds(members), cols.n, rows)
        if len(bounds) > 1 and int(np.diff(bounds).max()) > 8 * rows:
            _log.warning("%s: tree %r: its clusters are large (up to %d entries, about %.0f MB decoded): each "
                         "is read whole when one of its entries is needed", cols.file, cols.tree,
                         int(np.diff(bounds).max()), np.diff(bounds).max() * per_row / 1e6)
        dtypes = plan.dtypes()
        scalars = {s: dtypes[s] for s in plan.scalars}
        groups: dict[str, tuple[list[str], np.dtype, np.ndarray]] = {}
        uncounted = {}
        for g, names in plan.groups.items():
            counter = cols.shared_counter(names)
            if counter is None:
                uncounted[g] = names
                continue
            kept = cols.cached(counter) is not None
            counts = cols.read(counter)
            if len(counts) and int(counts.min()) < 0:
                raise SchemaError(f"tree {cols.tree!r}: counter branch {counter!r} holds a negative count at "
                                  f"entry {int(np.argmin(counts))}", file=cols.file, variable=counter)
            off = np.zeros(cols.n + 1, dtype=np.int64)
            np.cumsum(counts, out=off[1:])
            if not kept:  # the offsets hold the counts from now on: not kept for the whole epoch
                cols.forget(counter)
            groups[g] = (list(names), dtypes[names[0]], off)
        order = list(plan.groups)
        if uncounted:  # lengths known only from the values: one pass, chunk by chunk
            found = self._uncounted(bounds, uncounted)
            groups.update(found)
            order = [part for g in plan.groups for part in ([g] if g not in uncounted else
                                                              [p for p in found if found[p][0][0] in uncounted[g]])]
        return bounds, scalars, {g: groups[g] for g in order}

    def _uncounted(self, bounds: np.ndarray, uncounted: dict[str, list[str]]
                   ) -> dict[str, tuple[list[str], np.dtype, np.ndarray]]:
        """Groups (variables, dtype, offsets) of branches without a counter, from every chunk's
        lengths: a declared group is checked, the others are cut by lengths over the whole tree."""
        plan, cols = self._plan, self._plan.cols
        each = {v: [v] for names in uncounted.values() for v in names}  # one branch per group
        sub = TreePlan(cols, [], each, plan.dt, set(each))
        read = _lengths_pass(bounds, lambda a, z: read_columns(sub, RangeColumns(cols, a, z), 1 << 62,
                                                               self._threads)[1], cols.file)
        self._open_reads = len(bounds) - 1
        dtypes = plan.dtypes()
        lengths = {v: np.diff(read[v][2]) if v in read else np.zeros(0, np.int64) for v in each}
        taken = set(plan.scalars) | set(plan.groups)
        out: dict[str, tuple[list[str], np.dtype, np.ndarray]] = {}
        for g, names in uncounted.items():
            mine = {v: lengths[v] for v in names}
            if g in plan.declared:
                check_group_lengths(g, mine, file=cols.file, row_word="entry", where=f"tree {cols.tree!r}: ",
                                    hint="they share no counter branch; declare them in different groups "
                                         "with a schema")
                parts = {g: names}
            else:
                parts = settle(g, mine, keep=plan.keyed(g), taken=(taken - {g}) | set(out))
            for p, members in parts.items():
                dt = np.result_type(*[read[v][1] if v in read else dtypes[v] for v in members])
                out[p] = (list(members), dt, read[members[0]][2] if members[0] in read
                          else np.zeros(1, dtype=np.int64))
        return out

    # -- reading -------------------------------------------------------------------
    def _decode_chunk(self, k: int) -> InMemoryDataset:
        if self._stale:
            self._stale = False
            self._attach()
        a, z = int(self.chunk_bounds[k]), int(self.chunk_bounds[k + 1])
        if self._rntuple is not None:
            return self._cast(self._rntuple.read(a, z))
        scalars, groups = read_columns(self._plan, RangeColumns(self._plan.cols, a, z), 1 << 62, self._threads)
        return self._cast(InMemoryDataset(scalars, groups))

    def _scalar(self, name: str, rows: np.ndarray | None) -> np.ndarray:
        if rows is not None or self._rntuple is not None:
            return super()._scalar(name, rows)
        with self._decode_lock:  # a whole column: its branch alone, not every column of every chunk
            if self._stale:
                self._stale = False
                self._attach()
            plan = self._plan
            one = TreePlan(plan.cols, [name], {}, plan.dt, plan.declared)
            values = read_columns(one, RangeColumns(plan.cols, 0, plan.cols.n), 1 << 62, self._threads)[0][name]
        want = self._scalar_dtypes[name]
        return values if values.dtype == want else values.astype(want)

    # -- reading baskets straight into the result (see :mod:`lstm_data.io.root.direct`) --
    def _baskets(self) -> ChunkBaskets | None:
        """The chunks' baskets of every column whose basket plan reads it at this dataset's
        dtype in one cast (``None`` for an RNTuple); made once."""
        if self._rntuple is not None:
            return None
        made: ChunkBaskets | None = self.__dict__.get("_chunk_baskets")
        if made is None:
            plan, uproot = self._plan, import_uproot()
            cols, own = plan.cols, plan.dtypes()
            plans: dict[str, BranchPlan | None] = {}
            for s in self._scalar_names:
                plans[s] = cols.basket_plan(s, uproot) if own.get(s) == self._scalar_dtypes[s] else None
            for g, names in self._groups.items():
                for v in names:
                    plans[v] = cols.basket_plan(v, uproot) if own.get(v) == self._group_dtypes[g] else None
            made = self.__dict__["_chunk_baskets"] = ChunkBaskets(plans, self.chunk_bounds)
        return made

    def _direct(self, scalars: Sequence[str], groups: Sequence[str]) -> ChunkBaskets | None:
        """The baskets when every one of ``scalars`` and ``groups`` is read straight into the result."""
        baskets = self._baskets()
        if baskets is None or not baskets.readable(scalars, {g: self._groups[g] for g in groups}):
            return None
        return baskets

    def _gather(self, rows: np.ndarray | None, scalars: list[str], groups: list[str],
                keep: bool) -> tuple[dict[str, np.ndarray], dict[str, tuple[np.ndarray, np.ndarray]]]:
        baskets = self._direct(scalars, groups)
        if baskets is None:
            return super()._gather(rows, scalars, groups, keep)
        sel = np.arange(len(self), dtype=np.intp) if rows is None else rows
        return gather(baskets, sel, {s: self._scalar_dtypes[s] for s in scalars},
                      {g: (self._groups[g], self._group_dtypes[g], self._offsets_of[g]) for g in groups},
                      file=self.source[0], tree=self.tree, threads=self._n_threads(), record=self._record)

    def _n_threads(self) -> int:
        return available_cores() if self._threads is None else int(self._threads)

    def _record(self, key: str, k: int, nbytes: int) -> None:
        self.io_stats.record(key, k, k + 1, nbytes)

    def scalars_at(self, names: list[str], rows: RowSelection) -> dict[str, np.ndarray]:
        """Several scalar columns at ``rows``: their baskets alone, each read once."""
        for name in names:
            self._check_scalar(name)
        sel = as_rows(rows, len(self))
        if sel is None or self._direct(names, []) is None:
            return super().scalars_at(names, rows)
        return self._gather(sel, list(dict.fromkeys(names)), [], keep=False)[0]

    def _ragged(self, group: str, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if rows is not None and self._direct([], [group]) is not None:
            return self._gather(rows, [], [group], keep=False)[1][group]
        return super()._ragged(group, rows)

    def ragged_into(self, group: str, lo: int, hi: int, out: np.ndarray) -> None:
        """Rows ``lo .. hi - 1`` of ``group`` decoded straight into ``out`` (see the base class)."""
        baskets = self._direct([], [group]) if group in self._groups else None
        offsets = self._offsets_of.get(group)
        if baskets is None or offsets is None or not 0 <= lo <= hi <= len(self) \
                or out.dtype != self._group_dtypes[group] or out.ndim != 2 \
                or out.shape != (int(offsets[hi] - offsets[lo]), len(self._groups[group])):
            super().ragged_into(group, lo, hi, out)
            return
        sel = np.arange(lo, hi, dtype=np.intp)
        gather(baskets, sel, {}, {group: (self._groups[group], self._group_dtypes[group], offsets)},
               file=self.source[0], tree=self.tree, threads=self._n_threads(), record=self._record,
               out_g={group: (out, offsets[lo:hi + 1] - offsets[lo])})

    def close(self) -> None:
        """Close the file (the dataset cannot read values afterwards)."""
        self._fh.close()


def _lengths_pass(bounds: np.ndarray, read: Any, file: str) -> dict[str, tuple[list[str], np.dtype, np.ndarray]]:
    """Groups (variables, common dtype, offsets) from reading every chunk once with ``read(a, z)``."""
    names: dict[str, list[str]] | None = None
    dtypes: dict[str, list[np.dtype]] = {}
    lengths: dict[str, list[np.ndarray]] = {}
    for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        got = read(a, z)
        shape = {g: list(rg.names) for g, rg in got.items()}
        if names is None:
            names = shape
            dtypes = {g: [] for g in shape}
            lengths = {g: [] for g in shape}
        elif shape != names:
            raise SchemaError(f"entries {a}:{z} form other groups ({shape}) than the entries before "
                              f"({names}): branches without a shared counter differ in length only in some "
                              "entries; declare the groups with a schema, or read the file whole (in_ram=True)",
                              file=file, row=a)
        for g, rg in got.items():
            dtypes[g].append(rg.values.dtype)
            lengths[g].append(np.diff(rg.offsets))
    if names is None:  # no entries: no chunk to read
        return {}
    out = {}
    for g, vs in names.items():
        off = np.zeros(sum(len(x) for x in lengths[g]) + 1, dtype=np.int64)
        if lengths[g]:
            np.cumsum(np.concatenate(lengths[g]), out=off[1:])
        out[g] = (vs, np.result_type(*dtypes[g]), off)
    return out
