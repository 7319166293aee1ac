"""HDF5 files: lstm_ee's layout (PyTables earrays + VLArrays) and ours.

* **Ours** (root attribute ``lstm_data_format``): scalars and offsets load on open
  and are checked (see :mod:`.layout`), values stay on disk and are read per
  request, each touched chunk once (cast when a ``dtype`` is asked for).
* **lstm_ee / plain h5py / PyTables arrays**: every 1-D numeric dataset in the root
  is a scalar and every variable-length numeric dataset a prong variable; ``(n, k)``
  datasets and the numeric fields of PyTables tables are scalars too (see
  :mod:`lstm_data.io.hdf5.columns` for the names). Vlen data is read once, at open,
  in whole-chunk slices and turned into interleaved ragged groups; batches never see
  one Python object per row. What is not numbers (strings, time, complex, PyTables
  pseudo-atoms such as ``ObjectAtom``) is skipped and listed (``skipped``).
* **Other layouts people hold** (flat values + counts, one group per object,
  padded arrays with a validity flag) are told apart from the datasets and read
  as ragged groups (see :mod:`lstm_data.io.hdf5.layouts`); the dataset's
  ``layout`` names the one found.

A read that HDF5 refuses (a ``fletcher32`` checksum that does not match, a
chunk that does not decompress: h5py's bare ``OSError``) is a ``FormatError``
naming the file, the dataset (``group/array``) and the chunk, chained from
h5py's error, in both layouts. Our writer checksums every chunk; files without
checksums (written before, or by other tools) are listed in
:attr:`HDF5Dataset.notes`, since damage to their lzf or uncompressed chunks
reads as other numbers.
"""
from __future__ import annotations

import os
from typing import Any, Sequence

import h5py
import numpy as np

from lstm_data.data.dataset import Dataset
from lstm_data.errors import SchemaError
from lstm_data.io.columns.select import ColumnSelection
from lstm_data.io.columns.exact_ints import ExactInts
from lstm_data.io.hdf5.checks import member
from lstm_data.io.hdf5.rows import read_rows
from lstm_data.io.hdf5.vlen import read_vlen_hdf5
from lstm_data.io.ours.hdf5_out import check_layout_digest
from lstm_data.io.ours.layout import (
    check_group_arrays,
    is_ours,
    parse_layout,
    scalar_column,
    stored_array,
    value_dtype,
)
from lstm_data.io.ours.ondisk import DiskGroup, OnDiskDataset
from lstm_data.io.plumbing.open_files import PooledFile
from lstm_data.io.plumbing.signatures import HDF5_SIGNATURE

__all__ = ["read_hdf5", "HDF5Dataset", "read_vlen_hdf5", "HDF5_SIGNATURE", "read_rows"]

#: what a file without checksums cannot detect (see :attr:`HDF5Dataset.notes`)
_NO_CHECKSUM_NOTE = ("datasets {keys} carry no fletcher32 checksum: a damaged chunk that still "
                     "decompresses (always with lzf or no compression) reads as other numbers; "
                     "re-convert it to have damage detected")


def read_hdf5(path: str | os.PathLike[str], *, schema: Any = None, **options: Any) -> Dataset:
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
        :mod:`lstm_data.io.hdf5.checks`), ``columns`` and ``exclude`` (both layouts:
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
        The ``.h5`` file; it is open while read, and closed when idle and other files
        need the room (see :mod:`lstm_data.io.plumbing.open_files`).
    max_run_chunks, dtype
        As for :class:`~lstm_data.io.read_options.ReadOptions` (default: the stored
        dtypes; scalars are cast at open, values as they are read).
    trust_external
        Follow external links, external storage and virtual datasets of other
        files (default: refuse them; see :mod:`lstm_data.io.hdf5.checks`).
    columns, exclude
        Names or globs of the scalars and groups to load (see
        :mod:`lstm_data.io.columns.select`); a group is loaded whole when its name or
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

    def __init__(self, path: str | os.PathLike[str], *, max_run_chunks: int = 32, dtype: Any = None,
                 trust_external: bool = False, columns: Sequence[str] | str | None = None,
                 exclude: Sequence[str] | str | None = None) -> None:
        self._reopen = ((path,), {"max_run_chunks": max_run_chunks, "dtype": dtype,
                                  "trust_external": trust_external, "columns": columns,
                                  "exclude": exclude})
        name = str(path)
        dt = value_dtype(dtype, file=name)
        self._max_run_chunks = max_run_chunks
        self._trust_external = trust_external
        self._nodes: tuple[h5py.File | None, dict[str, h5py.Dataset]] = (None, {})
        self._file: PooledFile[h5py.File] = PooledFile(lambda: h5py.File(path, "r"), self._close_file, name)
        try:
            with self._file.use() as fh:
                layout = _chosen(parse_layout(dict(fh.attrs), file=name),
                                 ColumnSelection(columns, exclude), name)
                n = layout["n_rows"]
                self._exact = ExactInts(name)
                scalars = {var: scalar_column(var, key, self._checked(read_rows(self._node(fh, key, name, var),
                                                                                 file=name, variable=var),
                                                                       dt, var),
                                              n, dt, file=name)
                           for var, key in layout["scalars"].items()}
                groups = {g: self._disk_group(fh, g, spec, n, name, dt)
                          for g, spec in layout["groups"].items()}
                # after the checks above, which name what is wrong; this one catches edits they cannot see
                digest_checked = check_layout_digest(fh, file=name)
                self.notes = _checksum_notes(fh, layout, name) + (
                    () if digest_checked else ("written before layout digests: an edited dtype, byte order "
                                               "or column order is not detected",))
            self.layout = "lstm_data's own (offsets + values per group)"
            self._setup(n, scalars, groups, (name,))
        except BaseException:  # no file handle left open behind an error
            self._file.close()
            raise

    def _disk_group(self, fh: h5py.File, group: str, spec: dict[str, Any], n: int, name: str,
                    dt: np.dtype[Any] | None) -> DiskGroup:
        key = spec["key"]
        values = self._node(fh, f"{key}/values", name, group)
        stored = read_rows(self._node(fh, f"{key}/offsets", name, group), file=name, variable=group)
        width = len(spec["names"])
        offsets = check_group_arrays(group, stored, values, width, n, file=name, key=key)
        if values.chunks:
            chunk_len = values.chunks[0]
        else:  # contiguous: read in ~256 KiB pieces
            chunk_len = max(1, (256 << 10) // max(1, width * values.dtype.itemsize))
        out: np.dtype[Any] = values.dtype if dt is None else dt
        values_key = f"{key}/values"

        def read(lo: int, hi: int) -> np.ndarray:
            with self._file.use() as handle:  # opened again if it was closed while idle
                array = read_rows(self._dataset(handle, values_key), lo, hi, file=name, variable=group)
            return self._checked(array, out, group, first=lo).astype(out, copy=False)

        return DiskGroup(names=spec["names"], starts=offsets[:-1], ends=offsets[1:],
                         n_values=int(values.shape[0]), chunk_len=int(chunk_len),
                         read=read, dtype=out, key=f"{group}/values")

    def _close_file(self, fh: h5py.File) -> None:
        """Close ``fh``, dropping the datasets looked up in it (h5py's close walks every live object)."""
        if self._nodes[0] is fh:
            self._nodes = (None, {})
        fh.close()

    def _dataset(self, fh: h5py.File, key: str) -> h5py.Dataset:
        """Dataset ``key`` of the open handle ``fh`` (checked at open; looked up once per handle)."""
        held, nodes = self._nodes
        if held is not fh:
            nodes = {}
            self._nodes = (fh, nodes)
        node = nodes.get(key)
        if node is None:
            node = nodes[key] = fh[key]
        return node

    def _checked(self, array: np.ndarray, dtype: np.dtype[Any] | None, name: str, first: int = 0) -> np.ndarray:
        """``array`` unchanged, after warning (once per ``name``) if its integers change as ``dtype``."""
        if dtype is not None and array.dtype.kind in "iu":
            width = max(1, array.size // max(1, len(array)))
            self._exact.check(array.reshape(-1), dtype, name, row_of=lambda k: first + k // width,
                              where="row" if array.ndim == 1 else "value row")
        return array

    def _node(self, fh: h5py.File, key: str, name: str, variable: str) -> h5py.Dataset:
        """Dataset ``key`` of the file (see :func:`.layout.stored_array`), kept inside the file."""
        node = member(fh, key, file=name, trust_external=self._trust_external)
        dataset: h5py.Dataset = stored_array(node, h5py.Dataset, key, file=name, variable=variable)
        return dataset

    def close(self) -> None:
        """Close the file (a later read opens it again)."""
        self._nodes = (None, {})
        self._file.close()


def _chosen(layout: dict[str, Any], selection: ColumnSelection, file: str) -> dict[str, Any]:
    """``layout`` with only the scalars and groups ``selection`` wants (a group: when its name or
    any of its variables is wanted, whole, as its values are stored interleaved)."""
    if not selection:
        return layout
    scalars = {v: k for v, k in layout["scalars"].items() if selection.wants(v)}
    groups: dict[str, Any] = {}
    for g, spec in layout["groups"].items():
        if any([selection.wants(v, g) for v in spec["names"]]):  # a list: every pattern is marked used
            groups[g] = spec
    selection.check_all_used(list(layout["scalars"]) + list(layout["groups"])
                             + [v for spec in layout["groups"].values() for v in spec["names"]], file=file)
    return dict(layout, scalars=scalars, groups=groups)


def _checksum_notes(fh: h5py.File, layout: dict[str, Any], name: str) -> tuple[str, ...]:
    """A note naming the chunked datasets of our layout that carry no ``fletcher32``."""
    keys = list(layout["scalars"].values()) + [
        f"{g['key']}/{a}" for g in layout["groups"].values() for a in ("offsets", "values")]
    bare = [k for k in keys if fh[k].chunks and not fh[k].fletcher32]
    if not bare:
        return ()
    shown = ", ".join(repr(k) for k in bare[:3])
    shown += f" and {len(bare) - 3} more" if len(bare) > 3 else ""
    return (f"{name}: {_NO_CHECKSUM_NOTE.format(keys=shown)}",)
