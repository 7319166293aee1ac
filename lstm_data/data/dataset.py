"""``Dataset``: N rows of scalar columns plus ragged groups.

:class:`Dataset` is the interface every reader returns. :class:`InMemoryDataset`
holds its columns in RAM; on-disk readers subclass :class:`Dataset` and implement
``_scalar`` and ``_ragged`` with chunk-aware reads.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Sequence, TypeAlias

import numpy as np

from lstm_data._util.close_names import did_you_mean
from lstm_data.data.joins import check_join
from lstm_data.data.ragged import RaggedGroup, take_ragged
from lstm_data._util.types import Forwarded
from lstm_data.errors import SchemaError
from lstm_data._util.plural import counted

if TYPE_CHECKING:
    import awkward as ak
    import pyarrow as pa

__all__ = ["consecutive_range", "Dataset", "InMemoryDataset", "unknown_name_error", "as_rows", "check_row_range",
           "set_writer_source", "RowSelection"]

#: Writer = ``write(dataset, path, **options)`` (or a converter ``to(dataset, **options)``);
#: found by format name ("zarr", "hdf5", "parquet", "arrow", "awkward").
Writer = Callable[..., Any]
_writer_source: Callable[[str], Writer] | None = None
#: rows of a dataset: a slice, row numbers, a boolean mask of every row, or ``None`` for all
RowSelection: TypeAlias = "slice | Sequence[int] | np.ndarray | None"


def set_writer_source(source: Callable[[str], Writer]) -> None:
    """Tell :meth:`Dataset.to_zarr`, :meth:`Dataset.to_hdf5` and the other ``to_*`` where the writers are.

    The writers of our on-disk layout live in the ``io`` layer, above this one, so
    this layer cannot import them: the package root (``lstm_data/__init__.py``)
    passes ``source(format) -> writer`` here when the package is imported.
    """
    global _writer_source
    _writer_source = source


def _writer(fmt: str) -> Writer:
    if _writer_source is None:  # pragma: no cover - the package root always sets it
        raise RuntimeError("no writer source: import lstm_data first")
    return _writer_source(fmt)


def unknown_name_error(kind: str, name: str, known: Sequence[str], others: Iterable[str] = (),
                       hint: str = "") -> SchemaError:
    """A ``SchemaError`` for an unknown name that suggests close matches.

    Parameters
    ----------
    kind
        What was asked for (``"scalar"``, ``"group"``).
    name
        Its name.
    known
        The names of that kind.
    others
        Every other column, whose close names are suggested after those of ``known``
        (dotted names ending with ``.name`` first: ``rec.slc.calE`` for ``calE``).
    hint
        A sentence added at the end (where a schema that names it lies).

    Returns
    -------
    SchemaError
        Naming ``name``, its close matches and the number of known names.
    """
    close = did_you_mean(name, known, others)
    more = f". {hint}" if hint else ""
    counted = f"{len(known)} {kind}{'' if len(known) == 1 else 's'}"
    return SchemaError(f"unknown {kind} {name!r}{close} (known: {counted}){more}", variable=name)


def consecutive_range(rows: np.ndarray, n: int) -> tuple[int, int] | None:
    """``(a, b)`` when ``rows`` are ``a, a + 1, ..., b - 1`` within ``[0, n)`` (a batch in
    file order), else ``None``."""
    k = len(rows)
    if not k:
        return None
    first, last = int(rows[0]), int(rows[-1])
    if not (0 <= first and last < n and last - first == k - 1):
        return None
    if k > 1 and not bool((rows == np.arange(first, last + 1)).all()):
        return None
    return first, last + 1


def as_rows(rows: RowSelection, n: int) -> np.ndarray | None:
    """Normalise a row selection to an intp array (``None`` stays ``None``).

    Raises
    ------
    IndexError
        A row is outside ``[0, n)``.
    """
    if rows is None:
        return None
    if isinstance(rows, slice):
        return np.arange(*rows.indices(n), dtype=np.intp)
    arr = np.asarray(rows)
    if arr.size == 0:
        return np.zeros(0, dtype=np.intp)
    if arr.dtype == bool:
        if arr.shape != (n,):
            raise IndexError(f"boolean row mask of shape {arr.shape} for {n} rows")
        return np.flatnonzero(arr).astype(np.intp)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise IndexError(f"rows must be 1-D integers, got {arr.dtype} {arr.shape}")
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= n:
        raise IndexError(f"row {lo if lo < 0 else hi} out of range for {n} rows")
    return arr.astype(np.intp, copy=False)


def check_row_range(lo: int, hi: int, n: int) -> None:
    """Raise ``IndexError`` unless ``lo .. hi - 1`` is a range of rows of ``n`` (``0 <= lo <= hi <= n``)."""
    if not 0 <= lo <= hi <= n:
        raise IndexError(f"rows {lo}..{hi} out of range for {n} rows")


class Dataset:
    """N rows of scalar columns and ragged groups.

    Subclasses set ``_n_rows``, ``_scalar_names`` and ``_groups`` and implement
    :meth:`_scalar` and :meth:`_ragged`; they may override :meth:`ragged_raw`
    when the full arrays are cheap (in RAM).
    """

    _n_rows: int
    _scalar_names: list[str]
    _groups: dict[str, list[str]]
    #: where the data came from (paths), for fingerprints and reopening
    source: tuple[str, ...] = ()
    #: columns a reader left out, name -> why (set only by the readers that skip some: HDF5,
    #: NOvA, Parquet, ROOT, awkward; ``getattr(dataset, "skipped", {})`` reads it)
    skipped: dict[str, str]
    #: how the file stores its ragged data, as ``lstm-data inspect`` names it (set only by the
    #: readers that tell several layouts apart: HDF5; ``getattr(dataset, "layout", None)`` reads it)
    layout: str

    # -- description ---------------------------------------------------
    def __len__(self) -> int:
        return self._n_rows

    @property
    def scalar_names(self) -> list[str]:
        """Names of the scalar columns, in file order."""
        return list(self._scalar_names)

    @property
    def groups(self) -> dict[str, list[str]]:
        """Ragged group name -> its variable names, in column order."""
        return {g: list(v) for g, v in self._groups.items()}

    @property
    def variables(self) -> list[str]:
        """Every scalar and prong variable name."""
        return self.scalar_names + [v for vs in self._groups.values() for v in vs]

    def group_of(self, variable: str) -> str:
        """The ragged group that holds ``variable``.

        Parameters
        ----------
        variable
            A prong variable name.

        Returns
        -------
        str
            The group's name.

        Raises
        ------
        SchemaError
            No group holds ``variable`` (names the close match).
        """
        for g, names in self._groups.items():
            if variable in names:
                return g
        raise unknown_name_error("ragged variable", variable,
                                 [v for vs in self._groups.values() for v in vs])

    def __repr__(self) -> str:
        groups = ", ".join(f"{g}[{len(v)}]" for g, v in self._groups.items())
        return (f"{type(self).__name__}({counted(self._n_rows, 'row')}, {counted(len(self._scalar_names), 'scalar')}, "
                f"groups: {groups or 'none'})")

    # -- access ----------------------------------------------------------
    def scalar(self, name: str, rows: RowSelection = None) -> np.ndarray:
        """One scalar column, whole or at ``rows``.

        Parameters
        ----------
        name
            The scalar column.
        rows
            Row indices in any order, repeats allowed (ints, an array, a slice);
            ``None``: every row.

        Returns
        -------
        numpy.ndarray
            1-D, one value per row asked for.
        """
        self._check_scalar(name)
        return self._scalar(name, as_rows(rows, self._n_rows))

    def scalars_at(self, names: list[str], rows: RowSelection) -> dict[str, np.ndarray]:
        """Several scalar columns at the same ``rows``, the rows checked once.

        Parameters
        ----------
        names
            Scalar columns.
        rows
            Row indices in any order, repeats allowed (ints, an array, a slice).

        Returns
        -------
        dict of str to numpy.ndarray
            Each column's values at ``rows``, as :meth:`scalar` gives them.
        """
        for name in names:
            self._check_scalar(name)
        checked = as_rows(rows, self._n_rows)
        return {name: self._scalar(name, checked) for name in names}

    def _check_scalar(self, name: str) -> None:
        if not self._has_scalar(name):
            owner = next((g for g, names in self._groups.items() if name in names), None)
            if owner is not None:
                raise SchemaError(f"{name!r} is a prong variable of group {owner!r}, not a scalar; "
                                  f"read it with ragged({owner!r})", variable=name)
            raise unknown_name_error("scalar", name, self._scalar_names,
                                     [v for vs in self._groups.values() for v in vs])

    def _check_group(self, group: str) -> None:
        if group not in self._groups:
            raise unknown_name_error("group", group, list(self._groups))

    def _has_scalar(self, name: str) -> bool:
        """Whether ``name`` is a scalar column: a set lookup (a set made once per list of names)."""
        names = self._scalar_names
        cached = self.__dict__.get("_scalar_set")
        if cached is None or cached[0] is not names or cached[1] != len(names):
            cached = self.__dict__["_scalar_set"] = (names, len(names), frozenset(names))
        return name in cached[2]

    def ragged(self, group: str, rows: RowSelection = None) -> tuple[np.ndarray, np.ndarray]:
        """A ragged group's values and offsets, whole or at ``rows``.

        Parameters
        ----------
        group
            The group's name.
        rows
            Row indices in any order, repeats allowed (ints, an array, a slice);
            ``None``: every row.

        Returns
        -------
        values : numpy.ndarray
            ``(total, V)``: one record per prong, the group's variables side by side.
        offsets : numpy.ndarray
            ``(n + 1,)`` int64: row ``i`` (of those asked for) owns
            ``values[offsets[i]:offsets[i + 1]]``.
        """
        self._check_group(group)
        return self._ragged(group, as_rows(rows, self._n_rows))

    def ragged_range(self, group: str, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """``group``'s values and offsets of rows ``lo .. hi - 1``, in place where possible.

        What a batch of rows in file order reads: readers that decode straight into
        a buffer (our layout, several files of it) read the range in one call, with no
        row index; others read it as :meth:`ragged` of the slice.

        Parameters
        ----------
        group
            The group's name.
        lo, hi
            Rows ``lo <= row < hi`` of this dataset.

        Returns
        -------
        values : numpy.ndarray
            ``(total, V)`` records of the rows, one after another.
        offsets : numpy.ndarray
            ``(hi - lo + 1,)`` int64, starting at 0.
        """
        check_row_range(lo, hi, self._n_rows)
        return self.ragged(group, slice(lo, hi))

    def ragged_into(self, group: str, lo: int, hi: int, out: np.ndarray) -> None:
        """Write the values of rows ``lo .. hi - 1`` of ``group`` into ``out``.

        What several files' rows are read into: one buffer, each file's share in
        its slice. Readers that decode straight into ``out`` (our zarr layout) make
        it cost no copy.

        Parameters
        ----------
        group, lo, hi
            The group and its rows ``lo <= row < hi``, as for :meth:`ragged_range`.
        out
            ``(offsets(group)[hi] - offsets(group)[lo], V)``, any float dtype the values cast to.

        Raises
        ------
        ValueError
            ``out`` has another number of records.
        IndexError
            ``lo .. hi`` is not a range of rows.
        """
        check_row_range(lo, hi, self._n_rows)
        values, _ = self.ragged(group, slice(lo, hi))
        if values.shape[0] != out.shape[0]:
            raise ValueError(f"out holds {out.shape[0]} records; rows {lo}..{hi} of group "
                             f"{group!r} have {values.shape[0]}")
        check_join(values, out.dtype, f"group {group!r}")
        out[...] = values

    def offsets(self, group: str) -> np.ndarray:
        """The full offsets of ``group``, without reading its values.

        Parameters
        ----------
        group
            The group's name.

        Returns
        -------
        numpy.ndarray
            ``(N + 1,)`` int64, ``offsets[0] == 0``.
        """
        self._check_group(group)
        return self._offsets(group)

    def take(self, rows: RowSelection) -> "InMemoryDataset":
        """An in-RAM dataset of ``rows``, in the order given.

        Parameters
        ----------
        rows
            Row indices in any order, repeats allowed (ints, an array, a slice);
            ``None``: every row.

        Returns
        -------
        InMemoryDataset
            Those rows' scalars and groups.
        """
        sel = as_rows(rows, self._n_rows)
        if sel is None:
            sel = np.arange(self._n_rows, dtype=np.intp)
        # the groups first: their values, the large buffers, are made before anything else is read
        groups = {g: RaggedGroup(names, *self._ragged(g, sel)) for g, names in self._groups.items()}
        scalars = self.scalars_at(self._scalar_names, sel)
        return InMemoryDataset(scalars, groups)

    def load(self) -> "InMemoryDataset":
        """All rows in RAM.

        Returns
        -------
        InMemoryDataset
            Every row; an in-RAM dataset returns itself.
        """
        return self.take(None)

    @property
    def in_ram(self) -> bool:
        """Whether every column is held in RAM, so that random row reads are cheap.

        ``False`` for readers that read chunks from disk on demand. ``shuffle="auto"``
        (:class:`~lstm_data.batching.epochs.batches.Batches`, ``precompute``) shuffles rows
        freely in RAM and by blocks on disk.
        """
        return False

    @property
    def scalars_held(self) -> bool:
        """Whether the scalar columns are held in RAM, as they are returned.

        Then :meth:`scalar` of every row returns the column itself, without reading or
        copying it, so that a slice of it is a cheap read of a row range. ``False`` unless
        a subclass holds its scalar columns (datasets in RAM, and our on-disk layout,
        which reads scalars when it opens).
        """
        return False

    def value_chunk_len(self, group: str) -> int:
        """Records per on-disk chunk of ``group``'s values; 0 when they are not chunked on disk.

        Block shuffling aligns its blocks to these chunks, so that each chunk is
        decompressed at most twice per epoch.

        Parameters
        ----------
        group
            The group's name.

        Returns
        -------
        int
            Prong records per chunk, or 0.
        """
        self._check_group(group)
        return 0

    def row_chunk_starts(self) -> np.ndarray:
        """The rows (int64, ascending) at which a chunk of on-disk rows begins, for every column.

        Empty unless the dataset reads its scalar columns from disk in chunks of
        rows (a file read on demand by cluster or row group). Block shuffling cuts its
        blocks at these rows too, so a dataset of scalars only also decompresses each
        chunk at most twice per epoch.

        Returns
        -------
        numpy.ndarray
            int64 row numbers, ascending.
        """
        return np.zeros(0, dtype=np.int64)

    def value_chunk_starts(self, group: str) -> np.ndarray:
        """The rows (int64, ascending) at which a chunk of ``group``'s on-disk values begins.

        Empty when the values are not chunked on disk. Block shuffling cuts its
        blocks at these rows, so each chunk is decompressed at most twice per epoch.

        Parameters
        ----------
        group
            The group's name.

        Returns
        -------
        numpy.ndarray
            int64 row numbers, ascending.
        """
        chunk_len = self.value_chunk_len(group)
        if chunk_len <= 0:
            return np.zeros(0, dtype=np.int64)
        offsets = self.offsets(group)
        starts = np.arange(0, int(offsets[-1]), chunk_len, dtype=np.int64)
        rows: np.ndarray = np.unique(np.searchsorted(offsets[:-1], starts, side="right") - 1).clip(0)
        return rows.astype(np.int64)

    # -- writing -----------------------------------------------------------
    def to_zarr(self, path: str | os.PathLike[str], **options: Forwarded) -> None:
        """Write our zarr v3 layout atomically (a temporary name, then a rename).

        Parameters
        ----------
        path
            The store to write (``.zarr``).
        **options
            Options of :func:`lstm_data.io.ours.write.write_zarr` (chunk size, compression, checksums).
        """
        _writer("zarr")(self, path, **options)

    def to_hdf5(self, path: str | os.PathLike[str], **options: Forwarded) -> None:
        """Write our HDF5 layout atomically (a temporary name, then a rename).

        Parameters
        ----------
        path
            The file to write (``.h5``).
        **options
            Options of :func:`lstm_data.io.ours.write.write_hdf5` (chunk size, compression).
        """
        _writer("hdf5")(self, path, **options)

    def to_parquet(self, path: str | os.PathLike[str], **options: Forwarded) -> None:
        """Write a Parquet file atomically, prong variables as list columns.

        Needs the ``parquet`` extra (pyarrow). Reading it back gives the same values bitwise.

        Parameters
        ----------
        path
            The file to write.
        **options
            Options of :func:`lstm_data.io.parquet.write_parquet`.
        """
        _writer("parquet")(self, path, **options)

    def to_arrow(self, **options: Forwarded) -> pa.Table:
        """The dataset as a ``pyarrow.Table``.

        Needs the ``parquet`` extra (pyarrow).

        Parameters
        ----------
        **options
            Options of :func:`lstm_data.io.parquet.to_arrow`.

        Returns
        -------
        pyarrow.Table
            Scalars as columns, prong variables as list columns.
        """
        return _writer("arrow")(self, **options)

    def to_awkward(self, **options: Forwarded) -> ak.Array:
        """The dataset as an awkward record array.

        Needs the ``awkward`` extra.

        Parameters
        ----------
        **options
            Options of :func:`lstm_data.io.awkward.to_awkward`.

        Returns
        -------
        awkward.Array
            Views of the dataset: scalars as numbers, each group a ``var * record`` field.
        """
        return _writer("awkward")(self, **options)

    # -- to implement --------------------------------------------------------
    def _scalar(self, name: str, rows: np.ndarray | None) -> np.ndarray:
        raise NotImplementedError

    def _ragged(self, group: str, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _offsets(self, group: str) -> np.ndarray:
        """Override when offsets are cheaper than the whole group (on-disk readers)."""
        return self._ragged(group, None)[1]


class InMemoryDataset(Dataset):
    """A dataset whose columns are numpy arrays in RAM.

    Parameters
    ----------
    scalars
        Column name -> 1-D array of length N.
    groups
        Group name -> :class:`~lstm_data.data.ragged.RaggedGroup` with N rows.
    source
        The files the columns were read from (shown by ``repr`` and in messages).
    """

    def __init__(self, scalars: Mapping[str, np.ndarray], groups: Mapping[str, RaggedGroup],
                 *, source: Sequence[str] = ()) -> None:
        self._scalars = {k: np.asarray(v) for k, v in scalars.items()}
        self._ragged_groups = dict(groups)
        lengths = {k: len(v) for k, v in self._scalars.items()}
        lengths.update({g: len(rg) for g, rg in self._ragged_groups.items()})
        if len(set(lengths.values())) > 1:
            raise SchemaError(f"columns have different row counts: {lengths}")
        for k, v in self._scalars.items():
            if v.ndim != 1:
                raise SchemaError(f"scalar column {k!r} must be 1-D, got shape {v.shape}", variable=k)
        self._n_rows = next(iter(lengths.values()), 0)
        self._scalar_names = list(self._scalars)
        self._groups = {g: rg.names for g, rg in self._ragged_groups.items()}
        self.source = tuple(str(s) for s in source)

    def group(self, name: str) -> RaggedGroup:
        """The :class:`~lstm_data.data.ragged.RaggedGroup` object of a group.

        Parameters
        ----------
        name
            The group's name.

        Returns
        -------
        RaggedGroup
            Its names, values and offsets.
        """
        if name not in self._ragged_groups:
            raise unknown_name_error("group", name, list(self._ragged_groups))
        return self._ragged_groups[name]

    def load(self) -> "InMemoryDataset":
        """This dataset itself: its rows are in RAM already.

        Returns
        -------
        InMemoryDataset
            ``self``.
        """
        return self

    @property
    def in_ram(self) -> bool:
        """Always ``True``: the columns are numpy arrays."""
        return True

    @property
    def scalars_held(self) -> bool:
        """Always ``True`` (see :attr:`Dataset.scalars_held`)."""
        return True

    @property
    def nbytes(self) -> int:
        """Bytes held by all columns."""
        return (sum(v.nbytes for v in self._scalars.values())
                + sum(g.values.nbytes + g.offsets.nbytes for g in self._ragged_groups.values()))

    def _scalar(self, name: str, rows: np.ndarray | None) -> np.ndarray:
        col = self._scalars[name]
        return col if rows is None else col[rows]

    def _ragged(self, group: str, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        rg = self._ragged_groups[group]
        if rows is None:
            return rg.values, rg.offsets
        return take_ragged(rg.values, rg.offsets, rows)
