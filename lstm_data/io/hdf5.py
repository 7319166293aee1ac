"""HDF5 files: lstm_ee's layout (PyTables earrays + VLArrays) and ours (design §5).

* **Ours** (root attribute ``lstm_data_format``): scalars and offsets load on open
  and are checked (see :mod:`.layout`), values stay on disk and are read per
  request, each touched chunk once (cast when a ``dtype`` is asked for).
* **lstm_ee / plain h5py / PyTables arrays**: every 1-D numeric dataset in the root
  is a scalar and every variable-length numeric dataset a prong variable; ``(n, k)``
  datasets and the numeric fields of PyTables tables are scalars too (see
  :mod:`lstm_data.io.hdf5_columns` for the names). Vlen data is read once, at open,
  in whole-chunk slices and turned into interleaved ragged groups; batches never see
  one Python object per row. What is not numbers (strings, time, complex, PyTables
  pseudo-atoms such as ``ObjectAtom``) is skipped and listed (``skipped``).

A read that HDF5 refuses (a ``fletcher32`` checksum that does not match, a
chunk that does not decompress: h5py's bare ``OSError``) is a ``FormatError``
naming the file, the dataset (``group/array``) and the chunk, chained from
h5py's error, in both layouts. Our writer checksums every chunk; files without
checksums (written before, or by other tools) are listed in
:attr:`HDF5Dataset.notes`, since damage to their lzf or uncompressed chunks
reads as other numbers.
"""
from __future__ import annotations

import logging
from typing import Any, Sequence

import h5py
import numpy as np

from lstm_data.data.dataset import InMemoryDataset
from lstm_data.errors import FormatError, SchemaError
from lstm_data.io.column_groups import build_group, group_prefix, resolve_schema
from lstm_data.io.column_select import ColumnSelection
from lstm_data.io.hdf5_checks import load_filter_plugins, member, missing_filter_error
from lstm_data.io.hdf5_columns import Columns, classify, read_compound
from lstm_data.io.layout import (
    check_group_arrays,
    is_ours,
    parse_layout,
    scalar_column,
    stored_array,
    value_dtype,
)
from lstm_data.io.ondisk import DiskGroup, OnDiskDataset

__all__ = ["read_hdf5", "HDF5Dataset", "read_vlen_hdf5", "HDF5_SIGNATURE", "read_rows"]

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_log = logging.getLogger("lstm_data")
#: rows per vlen read (a multiple of PyTables' usual chunk lengths)
_VLEN_BLOCK_ROWS = 1 << 16
#: what a file without checksums cannot detect (see :attr:`HDF5Dataset.notes`)
_NO_CHECKSUM_NOTE = ("datasets {keys} carry no fletcher32 checksum: a damaged chunk that still "
                     "decompresses (always with lzf or no compression) reads as other numbers; "
                     "re-convert it to have damage detected")


def read_rows(ds: h5py.Dataset, lo: int = 0, hi: int | None = None, *, file: str,
              variable: str | None = None) -> np.ndarray:
    """Records ``lo:hi`` of the 1-D or 2-D ``ds`` (default: all); a refused read is a ``FormatError``.

    h5py reports a failed checksum or decompression as a bare ``OSError`` that
    names neither file nor dataset. A dataset compressed with a filter this HDF5
    library lacks is not damaged: the error names the filter and the package that
    provides it (``hdf5plugin`` is loaded first when installed, and the read
    retried; see :func:`~lstm_data.io.hdf5_checks.missing_filter_error`). Otherwise
    the failing range is retried chunk by chunk to find the damaged chunk; the
    error names the file, the dataset's path (``group/array``) and the chunk, and
    is chained from h5py's.

    Parameters
    ----------
    ds
        A dataset of an open file.
    lo, hi
        Records (along the first axis) to read (default: all).
    file, variable
        For the error.
    """
    hi = ds.shape[0] if hi is None else hi
    try:
        return ds[lo:hi]
    except OSError as exc:
        missing = missing_filter_error(ds, file=file, variable=variable)
        if missing is not None:
            if load_filter_plugins():  # hdf5plugin was installed but not imported
                return read_rows(ds, lo, hi, file=file, variable=variable)
            raise missing from exc
        key = ds.name.lstrip("/")
        c = ds.chunks[0] if ds.chunks else max(1, hi - lo)
        where = f"records {lo}:{hi}"
        for i in range(lo // c, -(-hi // c)):
            a, b = max(lo, i * c), min(hi, (i + 1) * c)
            try:
                ds[a:b]
            except OSError:
                where = f"chunk {i} (records {a}:{b})" if ds.chunks else f"records {a}:{b}"
                break
        raise FormatError(f"cannot read {where} of dataset {key!r}: damaged or unreadable (a "
                          f"checksum or decompression failure; HDF5: {exc})", file=file,
                          variable=variable) from exc


def read_hdf5(path, *, schema: Any = None, **options):
    """Open an HDF5 file in our layout or lstm_ee's.

    Parameters
    ----------
    path
        The file.
    schema
        For lstm_ee files: a Schema, ``{group: [variables]}`` or a TOML path that
        declares groups (and optionally the scalars to keep). An error for our
        layout, whose groups are stored.
    **options
        ``root`` (lstm_ee files: the HDF5 group holding the arrays, default ``/``;
        an error for our layout),
        ``dtype`` (both layouts: float32 or float64 for our layout, cast scalars
        and values; default keeps the file's), ``max_run_chunks`` (our layout),
        ``trust_external`` (both layouts: follow external links, external storage and
        virtual datasets of other files; default: refuse them, see
        :mod:`lstm_data.io.hdf5_checks`), ``columns`` and ``exclude`` (both layouts:
        names or globs of the columns to read).

    Returns
    -------
    HDF5Dataset for our layout, else an InMemoryDataset.
    """
    with h5py.File(path, "r") as fh:
        ours = is_ours(fh.attrs)
    if ours:
        given = [name for name, value in (("schema", schema), ("root", options.pop("root", None)))
                 if value is not None]
        if given:
            raise SchemaError(f"{' and '.join(given)} given, but this file is in lstm_data's own layout, "
                              "which stores its groups: those options are for lstm_ee's PyTables files; "
                              "drop them (choose columns with a BatchSpec)", file=str(path))
        return HDF5Dataset(path, **options)
    return read_vlen_hdf5(path, schema=schema, **options)


class HDF5Dataset(OnDiskDataset):
    """Our layout in HDF5: values read per request with chunk-aligned, coalesced reads.

    Parameters
    ----------
    path
        The ``.h5`` file; it stays open until :meth:`close`.
    max_run_chunks
        Longest single read, in chunks.
    dtype
        ``float32`` or ``float64``: scalars are cast at open and values as they are
        read. Default: the stored dtypes.
    trust_external
        Follow external links, external storage and virtual datasets of other
        files (default: refuse them; see :mod:`lstm_data.io.hdf5_checks`).
    columns, exclude
        Names or globs of the scalars and groups to load (see
        :mod:`lstm_data.io.column_select`); a group is loaded whole when its name or
        one of its variables is chosen (its values are stored interleaved).

    Raises
    ------
    FormatError
        An array reached through an external link or kept in other files (unless
        ``trust_external``), naming it and its target. Not our layout, or a stored
        array of the wrong dtype or shape, or offsets that do not start at 0,
        decrease or do not end at ``len(values)`` (named with file, variable or
        group, array and row). Also, at open or on a later read, a chunk that
        fails its checksum or does not decompress (named with file, dataset and
        chunk; see :func:`read_rows`).
    ValueError
        ``dtype`` is not float32 or float64.

    Attributes
    ----------
    notes : tuple of str
        What this file cannot detect, for ``lstm-data inspect``: datasets without
        a ``fletcher32`` checksum. Empty for files our writer makes now.
    """

    def __init__(self, path, *, max_run_chunks: int = 32, dtype: Any = None,
                 trust_external: bool = False, columns: Sequence[str] | str | None = None,
                 exclude: Sequence[str] | str | None = None) -> None:
        self._reopen = ((path,), {"max_run_chunks": max_run_chunks, "dtype": dtype,
                                  "trust_external": trust_external, "columns": columns,
                                  "exclude": exclude})
        name = str(path)
        dt = value_dtype(dtype, file=name)
        self._max_run_chunks = max_run_chunks
        self._trust_external = trust_external
        self._file = h5py.File(path, "r")
        try:
            layout = _chosen(parse_layout(dict(self._file.attrs), file=name),
                             ColumnSelection(columns, exclude), name)
            n = layout["n_rows"]
            scalars = {var: scalar_column(var, key, read_rows(self._node(key, name, var),
                                                              file=name, variable=var),
                                          n, dt, file=name)
                       for var, key in layout["scalars"].items()}
            groups = {g: self._disk_group(g, spec, n, name, dt)
                      for g, spec in layout["groups"].items()}
            self.notes = _checksum_notes(self._file, layout, name)
            self._setup(n, scalars, groups, (name,))
        except BaseException:  # no file handle left open behind an error
            self._file.close()
            raise

    def _disk_group(self, group: str, spec: dict, n: int, name: str,
                    dt: np.dtype | None) -> DiskGroup:
        key = spec["key"]
        values = self._node(f"{key}/values", name, group)
        stored = read_rows(self._node(f"{key}/offsets", name, group), file=name, variable=group)
        width = len(spec["names"])
        offsets = check_group_arrays(group, stored, values, width, n, file=name, key=key)
        if values.chunks:
            chunk_len = values.chunks[0]
        else:  # contiguous: read in ~256 KiB pieces
            chunk_len = max(1, (256 << 10) // max(1, width * values.dtype.itemsize))
        out = values.dtype if dt is None else dt
        return DiskGroup(names=spec["names"], starts=offsets[:-1], ends=offsets[1:],
                         n_values=int(values.shape[0]), chunk_len=int(chunk_len),
                         read=lambda lo, hi: read_rows(values, lo, hi, file=name, variable=group
                                                       ).astype(out, copy=False),
                         dtype=out, key=f"{group}/values")

    def _node(self, key: str, name: str, variable: str) -> h5py.Dataset:
        """Dataset ``key`` of the file (see :func:`.layout.stored_array`), kept inside the file."""
        node = member(self._file, key, file=name, trust_external=self._trust_external)
        return stored_array(node, isinstance(node, h5py.Dataset), key, file=name,
                            variable=variable)

    def close(self) -> None:
        """Close the file."""
        self._file.close()


def _chosen(layout: dict, selection: ColumnSelection, file: str) -> dict:
    """``layout`` with only the scalars and groups ``selection`` wants (a group: when its name or
    any of its variables is wanted, whole, as its values are stored interleaved)."""
    if not selection:
        return layout
    scalars = {v: k for v, k in layout["scalars"].items() if selection.wants(v)}
    groups = {}
    for g, spec in layout["groups"].items():
        if any([selection.wants(v, g) for v in spec["names"]]):  # a list: every pattern is marked used
            groups[g] = spec
    selection.check_all_used(list(layout["scalars"]) + list(layout["groups"])
                             + [v for spec in layout["groups"].values() for v in spec["names"]], file=file)
    return dict(layout, scalars=scalars, groups=groups)


def _checksum_notes(fh: h5py.File, layout: dict, name: str) -> tuple[str, ...]:
    """A note naming the chunked datasets of our layout that carry no ``fletcher32``."""
    keys = list(layout["scalars"].values()) + [
        f"{g['key']}/{a}" for g in layout["groups"].values() for a in ("offsets", "values")]
    bare = [k for k in keys if fh[k].chunks and not fh[k].fletcher32]
    if not bare:
        return ()
    shown = ", ".join(repr(k) for k in bare[:3])
    shown += f" and {len(bare) - 3} more" if len(bare) > 3 else ""
    return (f"{name}: {_NO_CHECKSUM_NOTE.format(keys=shown)}",)


def _read_vlen(ds: h5py.Dataset, dtype, file: str) -> tuple[np.ndarray, np.ndarray]:
    """One vlen dataset as ``(flat values, lengths)``, read in large slices."""
    n = ds.shape[0]
    base = np.dtype(dtype if dtype is not None else h5py.check_vlen_dtype(ds.dtype))
    chunk = ds.chunks[0] if ds.chunks else _VLEN_BLOCK_ROWS
    block = max(chunk, (_VLEN_BLOCK_ROWS // chunk) * chunk)
    lengths = np.empty(n, dtype=np.int64)
    pieces = []
    for a in range(0, n, block):
        objs = read_rows(ds, a, min(n, a + block), file=file, variable=ds.name.lstrip("/"))
        lengths[a:a + len(objs)] = np.fromiter(map(len, objs), dtype=np.int64, count=len(objs))
        if len(objs):
            pieces.append(np.concatenate(objs).astype(base, copy=False))
    values = np.concatenate(pieces) if pieces else np.zeros(0, dtype=base)
    return values, lengths


def read_vlen_hdf5(path, *, schema: Any = None, root: str = "/", dtype=None,
                   trust_external: bool = False, columns: Sequence[str] | str | None = None,
                   exclude: Sequence[str] | str | None = None) -> InMemoryDataset:
    """Read lstm_ee's HDF5 layout (or any group of plain h5py / PyTables arrays) into RAM.

    Every dataset under ``root`` gives columns as :mod:`lstm_data.io.hdf5_columns`
    says: 1-D numbers are scalars, ``(n, k)`` numbers the scalars ``name[0]`` ...,
    the numeric fields of a compound (a PyTables ``Table``) the scalars
    ``name.field``, variable-length numbers prong variables. Prong variables form
    groups by prefix (``png.calE`` -> ``png``) or as the schema declares. What is
    not numbers (strings, time, complex, objects) is skipped: listed in the
    result's ``skipped`` attribute and logged once. ``columns`` and ``exclude``
    (names or globs, matched against a column's name and its dataset's, see
    :mod:`lstm_data.io.column_select`) choose the columns; only the datasets of
    chosen columns are read (of a compound, only the chosen fields).

    Returns
    -------
    InMemoryDataset
        With ``skipped``: column -> what it holds, for the columns left out.

    Raises
    ------
    FormatError
        No numeric datasets under ``root`` (lists what is there and why it was
        skipped), or datasets of different lengths; an external link, external
        storage or a virtual dataset of other files under ``root`` (unless
        ``trust_external``), naming it and its target.
    SchemaError
        A declared or chosen name is not a column (or names a skipped one: says
        why); variables of one group differ in length in some row (names row and
        variables).
    """
    name = str(path)
    selection = ColumnSelection(columns, exclude)
    with h5py.File(path, "r") as fh:
        node = member(fh, root, file=name, trust_external=trust_external)
        if not isinstance(node, h5py.Group):
            raise FormatError(f"no HDF5 group {root!r}", file=name)
        found = classify(node, lambda k: member(node, k, file=name, trust_external=trust_external),
                         keep=lambda col, key: selection.wants(col, key if key != col else group_prefix(col)),
                         file=name)
        selection.check_all_used(list(found.columns) + list(found.skipped), file=name)
        for p in selection.columns or ():
            if p in found.skipped:
                raise SchemaError(f"columns names {p!r}, which holds {found.skipped[p]}, not numbers",
                                  file=name, variable=p)
        if not found.columns:
            what = f"; skipped {describe_skipped(found.skipped)}" if found.skipped else ""
            raise FormatError(f"no numeric datasets in HDF5 group {root!r}; expected lstm_ee's layout "
                              f"(one array per variable) or lstm_data's{what}", file=name)
        ragged_names = [c for c, col in found.columns.items() if col.ragged]
        scalar_names = [c for c, col in found.columns.items() if not col.ragged]
        try:
            group_vars, scalar_names, schema_dtype = resolve_schema(
                schema, scalar_names, ragged_names, file=name)
        except SchemaError as exc:
            if exc.variable in found.skipped:
                raise SchemaError(f"{exc.variable!r} is skipped: it holds {found.skipped[exc.variable]}, "
                                  "not numbers", file=name, variable=exc.variable) from None
            raise
        dtype = dtype if dtype is not None else schema_dtype
        _check_rows(found, scalar_names + [v for vs in group_vars.values() for v in vs], name)
        scalars = _read_scalars(found, scalar_names, dtype, name)
        groups = {}
        for g, names in group_vars.items():
            columns = {v: _read_vlen(found.datasets[found.columns[v].key], dtype, name) for v in names}
            groups[g] = build_group(g, columns, file=name)
    if found.skipped:
        _log.info("%s: skipped %d columns that are not numbers: %s", name, len(found.skipped),
                  describe_skipped(found.skipped))
    out = InMemoryDataset(scalars, groups, source=(name,))
    out.skipped = dict(found.skipped)
    return out


def describe_skipped(skipped: dict[str, str], limit: int = 6) -> str:
    """``'name' (strings), 'when' (HDF5 time values ...)`` for the first ``limit`` skipped columns."""
    items = [f"{k!r} ({v})" for k, v in list(skipped.items())[:limit]]
    more = f" and {len(skipped) - limit} more" if len(skipped) > limit else ""
    return ", ".join(items) + more


def _check_rows(found: Columns, names: list[str], file: str) -> None:
    """Raise ``FormatError`` unless the datasets of the columns ``names`` have the same number of rows."""
    rows = {found.columns[v].key: found.rows[found.columns[v].key] for v in names}
    if len(set(rows.values())) > 1:
        first = next(iter(rows))
        odd = next(k for k, n in rows.items() if n != rows[first])
        raise FormatError(f"{odd!r} has {rows[odd]} rows but {first!r} has {rows[first]}; the datasets "
                          "of one group are the columns of one table (choose them with a schema, or the "
                          "group with root=...)", file=file, variable=odd)


def _read_scalars(found: Columns, names: list[str], dtype: Any, file: str) -> dict[str, np.ndarray]:
    """The scalar columns ``names``: each dataset read once (a compound: its numeric fields only)."""
    by_key: dict[str, list[str]] = {}
    for v in names:
        by_key.setdefault(found.columns[v].key, []).append(v)
    out: dict[str, np.ndarray] = {}
    for key, cols in by_key.items():
        ds = found.datasets[key]
        if key in found.compound:
            block = read_compound(ds, found.compound[key], 0, ds.shape[0], file=file)
        else:
            block = read_rows(ds, file=file, variable=key)
        for v in cols:
            col = np.ascontiguousarray(found.columns[v].take(block))
            out[v] = col if dtype is None else col.astype(dtype)
    return {v: out[v] for v in names}
