"""ROOT TTrees through uproot (extra ``root``): :func:`read_root`.

The file's only TTree (or RNTuple; ``tree=`` picks one of several) becomes an
in-RAM dataset:

* a flat numeric branch (``run``, ``MET_pt``, ``nMuon``) is a scalar column with
  the branch's dtype; counter branches (``nMuon``) stay scalars too;
* jagged branches (``Muon_pt[nMuon]``, ``std::vector<float>``) are ragged
  groups. Branches that share a counter branch form one group named after the
  counter without its leading ``n`` (``nMuon`` counts ``Muon_pt``, ``Muon_eta``:
  group ``Muon``, variables ``Muon_pt``, ``Muon_eta``; the layout ``uproot``
  writes for a zipped record field ``Muon``). Other jagged branches (own
  counters, no counter) group by their prefix before the first ``_`` or ``.``
  (``Jet_e``, ``Jet_pt`` -> ``Jet``); such a group is cut into groups of equal
  lengths when its branches differ (the first keeps the name, the others are named
  after their first branch), while a group a schema declares must have equal
  lengths. A schema (``{group: [branches]}``) declares other groups and picks
  ``scalars``;
* a fixed-size array branch (``float x[3]``, ``std::array``) gives one column per
  element, ``x[0]``, ``x[1]``, ``x[2]`` (jagged ones, ``x[n][3]``, a group ``x``);
* what is not numbers is skipped and listed in the dataset's ``skipped``
  attribute with its type and why (one logged message): strings, objects and
  ``std::map`` s, doubly jagged branches (``vector<vector<float>>``: which level is
  a row is not known), branches that hold fewer entries than the tree (no baskets
  written). A tree with entries but nothing readable is a ``SchemaError`` listing
  what it holds; a tree with two branches of the same name (Delphes) one naming
  them and the ``exclude=`` that picks one;
* ``columns=`` / ``exclude=`` (names or globs) choose the branches: the others are
  not read nor decompressed.

Group dtypes: a group takes its branches' common numpy type, so a group's values
are float32, float64, a signed or unsigned integer type, or bool (``Muon_charge``
int32 and ``Muon_jetIdx`` int16: int32; float32 with int32: float64); with
``dtype=`` every column is cast to it.

Numeric branches of the common kinds (one number per entry, counted arrays
``x[n]``) are read basket by basket on ``threads`` threads straight into their
final arrays (:mod:`lstm_data.io.root.fast`), inflating zlib baskets with
libdeflate (the ``deflate`` package, part of the extra ``root``) or ISA-L when
``isal`` is installed instead. Other jagged branches (``std::vector``) are read through uproot in
entry ranges of about ``block_bytes`` uncompressed bytes, aligned to the tree's
clusters; each range is interleaved into its group's ``(total, V)`` block (no
Python per entry). Values equal
``tree.arrays(library="np")`` bitwise (a group of mixed dtypes, e.g. float32 and
int32, takes their common type, float64).

An RNTuple (what ``uproot`` >= 5.7 writes for ``file["Events"] = {...}``) is
read in cluster ranges of about ``block_bytes`` into awkward arrays, each taken as
:func:`lstm_data.io.awkward.from_awkward` takes them and copied into the result: the record field ``Muon`` is the group ``Muon`` with variables
``Muon_pt``, ..., as from the TTree of the same data (which also has ``nMuon``);
nested records flatten to dotted names (``info.pos.x``).

Values larger than memory: with ``in_ram=False`` (or by default, when the values
would take more than half of the memory left) the tree is read on demand, whole
clusters at a time, by a :class:`~lstm_data.io.root.lazy.RootDataset`: TTrees and
RNTuples alike, memory bounded by the chunks in use (see
:mod:`lstm_data.io.root.lazy`). ``in_ram=True`` refuses values that do not fit, with
the routes that work.

A URL (``https://``, ``root://`` with the XRootD client, any fsspec URL) is read
through uproot's handler of its protocol: only the baskets of the columns read
are fetched.

Errors name the file, the tree, the branch and the entry: a file uproot cannot
open or a basket it cannot read is a ``FormatError``; two branches of a
declared group of different lengths a ``SchemaError``.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

from lstm_data._util.deprecation import refuses_renamed
from lstm_data.data.dataset import Dataset, InMemoryDataset
from lstm_data.io.columns.select import ColumnSelection
from lstm_data.io.ours.layout import value_dtype
from lstm_data.io.root.lazy import CHUNK_BYTES, RootDataset
from lstm_data.io.root.memory import check_fits, fits
from lstm_data.io.plumbing.remote_errors import RemoteSettings
from lstm_data.io.root.plan import open_root, plan_tree, remote_member
from lstm_data.io.root.read import read_columns
from lstm_data.io.root.rntuple import read_rntuple, rntuple_fits
from lstm_data.io.root.tree import RNTUPLE_CLASS, import_uproot, pick_tree

__all__ = ["read_root", "RootDataset", "decoded_bytes", "STEP_BYTES", "CHUNK_BYTES"]

#: uncompressed bytes of jagged branches read per entry range
STEP_BYTES = 64 << 20
_log = logging.getLogger("lstm_data")


@refuses_renamed("read_root")
def read_root(path: Any, *, tree: str | None = None, schema: Any = None, dtype: Any = None,
              block_bytes: int | None = None, columns: Sequence[str] | str | None = None,
              exclude: Sequence[str] | str | None = None, threads: int | None = None,
              progress: Callable[[int, int], None] | None = None, in_ram: bool | None = None,
              cache_chunks: int | None = None, remote: RemoteSettings | None = None) -> Dataset:
    """Read one TTree of a ROOT file (see the module documentation).

    Parameters
    ----------
    path
        The ``.root`` file, or its URL (``https://host/f.root``, ``root://`` with the
        XRootD client installed, any fsspec URL; ``url:Events`` names the tree):
        only the baskets of the columns read are fetched.
    tree
        The TTree's name (or path, ``"dir/Events"``); needed when the file holds several.
    schema
        Declared groups, scalars and dtype (a Schema, a mapping or a TOML path).
    dtype
        ``float32`` or ``float64``: cast every column. Default: the schema's dtype,
        else the branches' own.
    block_bytes
        Uncompressed bytes of jagged branches read at a time (default
        :data:`STEP_BYTES`); read on demand, the decoded bytes of a chunk (whole
        clusters; default :data:`CHUNK_BYTES`).
    columns, exclude
        Branch names or globs to read / never to read (a counter group's name picks
        the whole group, see :mod:`lstm_data.io.columns.select`); other branches are
        not read at all.
    threads
        Threads that read and inflate baskets (``None``: every core).
    progress
        Called as ``progress(compressed_bytes_done, compressed_bytes_total)`` while
        baskets are read (e.g. :class:`lstm_data._util.progress.ByteProgress`).
    in_ram
        ``True``: read every value now. ``False``: read clusters on demand (a
        :class:`RootDataset`). ``None`` (default): in RAM when the values take at most
        half of the memory left, else on demand (logged).
    cache_chunks
        Read on demand: decoded chunks kept for requests of single columns (default 2).
    remote
        Timeouts and retries of the reads of a file at a URL (default: the defaults of
        :class:`~lstm_data.io.plumbing.remote_errors.RemoteSettings`).

    Returns
    -------
    InMemoryDataset or RootDataset
        Its ``skipped`` attribute maps each branch that is not read to its type and why.

    Raises
    ------
    ImportError
        uproot or awkward is missing (``pip install 'lstm_data[root]'``).
    MemoryError
        ``in_ram=True`` and the chosen columns would not fit in the memory left
        (checked before reading; the message gives the routes: fewer columns, reads on
        demand, or convert to an on-disk store).
    FormatError
        Not a readable ROOT file, no TTree, or a branch that cannot be read (names
        file, tree, branch and entries).
    SchemaError
        Several TTrees and no ``tree=``; an unknown ``tree=``; a schema name that is
        not a readable branch; branches of a declared group of different lengths;
        nothing numeric in the tree (lists what it holds and why each was skipped);
        two branches of the same name (names them and how to pick one); a
        ``columns`` pattern that matches no branch.
    """
    uproot = import_uproot()
    name, tree = remote_member(str(path), tree)
    dt = value_dtype(dtype, file=name)
    if block_bytes is not None and int(block_bytes) < 1:
        raise ValueError(f"block_bytes must be at least 1, got {block_bytes!r} (file {name})")

    def lazy() -> RootDataset:
        return RootDataset(name, tree=tree, schema=schema, dtype=dtype, block_bytes=block_bytes, columns=columns,
                           exclude=exclude, threads=threads, cache_chunks=cache_chunks, remote=remote)

    if in_ram is False:
        return lazy()
    selection = ColumnSelection(columns, exclude)
    with open_root(uproot, name, lazy=False, remote=remote) as fh:
        ttree, tree_name, kind = pick_tree(fh, tree, name)
        if kind == RNTUPLE_CLASS:
            if in_ram is None and not rntuple_fits(ttree, tree_name, name, schema, dt, selection):
                _log.info("%s: RNTuple %r does not fit in the memory left: read by cluster on demand (in_ram=True "
                          "reads it whole)", name, tree_name)
                fh.close()
                return lazy()
            return read_rntuple(ttree, tree_name, name, schema, dt, selection, block_bytes or STEP_BYTES)
        plan = plan_tree(ttree, tree_name, name, schema, dt, selection)
        if in_ram is None and not fits(plan.decoded_bytes()):
            _log.info("%s: tree %r: its values (about %.2f GiB) do not fit in the memory left: read from disk "
                      "by cluster on demand (in_ram=True reads them whole)", name, tree_name,
                      plan.decoded_bytes() / 2**30)
            fh.close()
            return lazy()
        check_fits(plan.decoded_bytes(), file=name, tree=tree_name, columns=plan.n_columns())
        out_scalars, out_groups = read_columns(plan, plan.cols, block_bytes or STEP_BYTES, threads, progress)
    dataset = InMemoryDataset(out_scalars, out_groups, source=(name,))
    dataset.skipped = dict(plan.cols.skipped)
    return dataset


def decoded_bytes(path: Any, *, tree: str | None = None, schema: Any = None, dtype: Any = None,
                  columns: Sequence[str] | str | None = None, exclude: Sequence[str] | str | None = None,
                  remote: RemoteSettings | None = None, **_: Any) -> int:
    """About how many bytes the chosen columns of a tree take once read (from its metadata; an
    RNTuple's from its first cluster). Other reader options are accepted and ignored.

    Raises
    ------
    FormatError, SchemaError
        As :func:`read_root`.
    """
    uproot = import_uproot()
    name, tree = remote_member(str(path), tree)
    dt = value_dtype(dtype, file=name)
    selection = ColumnSelection(columns, exclude)
    with open_root(uproot, name, lazy=True, remote=remote) as fh:
        ttree, tree_name, kind = pick_tree(fh, tree, name)
        if kind == RNTUPLE_CLASS:
            from lstm_data.io.root.rntuple import RNTupleReader

            reader = RNTupleReader(ttree, tree_name, name, schema, dt, selection)
            return int(reader.bytes_per_entry() * reader.n)
        return plan_tree(ttree, tree_name, name, schema, dt, selection).decoded_bytes()
