"""Assemble one batch of a :class:`~lstm_data.batching.spec.batch_spec.BatchSpec` from dataset rows.

In RAM, a batch is one :class:`kernels.BatchGather` call: it pads every ragged
field straight from the full ``(values, offsets)`` and gathers every scalar field
from a pre-stacked ``(N, S)`` table, all in one section without the GIL, so
threads building batches scale. A dataset of several in-RAM parts (the files of
``lstm_data.open(list or glob)``) is gathered the same way: the kernel takes
every part's ``(values, offsets)`` and finds each row's part itself, so nothing
is concatenated. On disk, each needed group is read once per batch with
``dataset.ragged(group, rows)`` (the reader coalesces chunk reads) and then
padded. There is no per-row Python work.

A field's output form (``layout``, ``pad_mode``, per-variable ``standardize``
and pad values) is made by the same kernel call, in the same pass, at the
batch's padded width (with an order's ``bucket_lengths``, the chosen length:
the kernel pads to it directly in every layout, so nothing is widened after); the small
extra outputs (``<name>_mask``, ``<name>_cu_seqlens``, ``<name>_max_seqlen``)
come from the lengths it returns.

Integer and boolean values batch like floats. An integer that the batch dtype
cannot hold exactly (above 2**24 in float32, 2**53 in float64) is warned about
once per output, naming the variable and the first value changed. A ``Scalars``
output of an integer dtype (labels, ids) takes its values unchanged or not at all
(:func:`~lstm_data.batching.building.exactness.as_integers`); its rows are gathered
with NumPy, next to the kernel call, which writes float outputs only.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Sequence, cast

import numpy as np

from lstm_data import kernels
from lstm_data.batching.order.bucket_lengths import BucketLengths
from lstm_data.batching.spec.standardize import apply_standardize, column_transform, unresolved_auto
from lstm_data.batching.spec.batch_spec import Arrays, ResolvedField
from lstm_data.batching.building.exactness import as_integers, warn_if_inexact
from lstm_data.batching.building.finite import nonfinite_value_rows
from lstm_data.data.concat import ConcatDataset
from lstm_data.data.dataset import Dataset, InMemoryDataset, consecutive_range
from lstm_data.data.ragged import take_ragged

__all__ = ["BatchBuilder"]

#: the rows of one group: ``(values, offsets)`` pairs numbered one after another
Parts = Sequence[tuple[np.ndarray, np.ndarray]]

#: one scan of a group's values at a time (threads building batches all ask at their first batch)
_SCAN_LOCK = threading.Lock()


class BatchBuilder:
    """Builds ``(inputs, targets)`` dicts for any rows of one dataset.

    Parameters
    ----------
    dataset
        The rows to draw from.
    fields
        The spec mapped onto ``dataset`` by :meth:`BatchSpec.validate`.
    nan_to
        Replace NaN in inputs (data and NaN padding) by this value, as lstm_ee's
        NaN mask did for Keras ``Masking``. ``None`` keeps NaN.
    pad_to_multiple_of
        Round every per-batch prong width (a ``Ragged`` field with ``max_len=None``
        or ``fixed=False``) up to a multiple of this, capped at ``max_len``
        (``None``: the batch's longest row, capped).
    row_names
        The row an error names for each row of ``dataset`` (a window's RAM copy names
        the rows of the data it was read from); ``None``: the dataset's own row numbers.
    """

    def __init__(self, dataset: Dataset, fields: Sequence[ResolvedField], *,
                 nan_to: float | None = None, pad_to_multiple_of: int | None = None,
                 row_names: np.ndarray | None = None) -> None:
        self.dataset = dataset
        self.row_names = row_names
        self.fields = list(fields)
        self.nan_to = None if nan_to is None else float(nan_to)
        self.pad_to_multiple_of = None if pad_to_multiple_of is None else int(pad_to_multiple_of)
        self.in_ram = isinstance(dataset, InMemoryDataset) or (
            isinstance(dataset, ConcatDataset) and dataset.in_ram)
        self._scalar_tables: dict[str, np.ndarray] = {}
        self._row_lengths: dict[str, np.ndarray] = {}
        self._group_has_nan: dict[str, bool] = {}
        self._row_nonfinite: dict[str, np.ndarray] = {}  # in RAM: rows holding NaN or inf, by group
        self._field_nonfinite: dict[str, np.ndarray] = {}  # the same, by output (its groups' union)
        self._gather: kernels.BatchGather | None = None  # the in-RAM BatchGather, made at first use
        # the in-RAM BatchGather of each set of chosen widths (bucket_lengths), by the widths
        self._width_gathers: dict[tuple[int | None, ...], kernels.BatchGather] = {}
        self._groups_needed = list(dict.fromkeys(g for f in self.fields for g in f.groups))
        # Scalars outputs of an integer dtype (gathered by NumPy, not the kernel) and of shape (B,)
        self._integers = {f.name for f in self.fields if f.group is None and f.field.np_dtype.kind in "iu"}
        self._squeezed = {f.name for f in self.fields if f.group is None and getattr(f.field, "squeeze", False)}
        # all of a group's columns in order: let the kernel copy whole prong records
        # (a field with a group always has its columns: the cast only tells the type checker)
        self._columns = {f.name: self._all_or(f.group, f.columns) for f in self.fields}
        self._field_lengths: dict[str, np.ndarray] = {}

    def _all_or(self, group: str | None, columns: np.ndarray | None) -> np.ndarray | None:
        """``None`` for every column of ``group`` in order (the kernel copies whole prong
        records), else ``columns``."""
        if group is None or not np.array_equal(cast(np.ndarray, columns),
                                               np.arange(len(self.dataset.groups[group]))):
            return columns
        return None

    # -- cached per-dataset tables (built once, lazily; safe to race) ----------------------
    def _scalar_table(self, f: ResolvedField) -> np.ndarray:
        table = self._scalar_tables.get(f.name)
        if table is None:
            dt = f.field.np_dtype
            cols = [self.dataset.scalar(v) for v in f.field.vars]
            if self._integer(f):  # checked once over every row, the first bad one named
                cols = [as_integers(col, dt, f.name, name, self._row_name)
                        for name, col in zip(f.field.vars, cols)]
            for name, col in zip(f.field.vars, cols):
                warn_if_inexact(col, dt, f"scalar {name!r} of output {f.name!r}")
            params = self._transform(f)
            if len(cols) == 1 and cols[0].dtype == dt and params is None:
                table = cols[0].reshape(-1, 1)
            else:
                table = np.empty((len(self.dataset), len(cols)), dtype=dt)
                for j, col in enumerate(cols):  # once per column, at first use
                    table[:, j] = col
            if params is not None:  # standardised once, for every batch
                apply_standardize(table, params)
            if self._masks(f) and np.isnan(table).any():
                table = np.where(np.isnan(table), dt.type(self.nan_to), table)
            self._scalar_tables[f.name] = table
        return table

    def row_lengths(self, group: str) -> np.ndarray:
        """Per-row prong counts of ``group`` over the whole dataset (int64, cached)."""
        lens = self._row_lengths.get(group)
        if lens is None:
            off = self.dataset.offsets(group) if hasattr(self.dataset, "offsets") \
                else self.dataset.ragged(group)[1]
            lens = np.diff(off)
            self._row_lengths[group] = lens
        return lens

    def field_lengths(self, f: ResolvedField) -> np.ndarray:
        """Per row, the most prongs of any group of field ``f`` (what its padded width follows);
        :meth:`row_lengths` of its group for a field of one group."""
        if not f.more:
            return self.row_lengths(cast(str, f.group))
        lens = self._field_lengths.get(f.name)
        if lens is None:
            lens = self.row_lengths(cast(str, f.group))
            for m in f.more:
                lens = np.maximum(lens, self.row_lengths(m.group))
            self._field_lengths[f.name] = lens
        return lens

    def width(self, f: ResolvedField, longest: int) -> int:
        """The prong width of field ``f`` in a batch whose longest row has ``longest`` prongs.

        ``max_len`` when the field is fixed; else ``longest`` rounded up to a
        multiple of :attr:`pad_to_multiple_of` (if set), capped at ``max_len``.
        The in-RAM kernel applies the same rule.
        """
        spec = f.ragged
        if spec.max_len is not None and spec.fixed:
            return spec.max_len
        width = longest
        multiple = self.pad_to_multiple_of
        if multiple is not None and width % multiple:
            width += multiple - width % multiple
        return width if spec.max_len is None else min(spec.max_len, width)

    def chosen_width(self, f: ResolvedField, longest: int, lengths: BucketLengths | None = None) -> int:
        """The padded width of field ``f`` in a batch whose longest row has ``longest`` prongs.

        :meth:`width`, then, for an output of ``lengths.group`` (an order's
        ``bucket_lengths``), the smallest chosen length that holds it, never above the
        field's own ``max_len``. A ``"packed"`` output has no padded width: :meth:`width`.
        """
        width = self.width(f, longest)
        if lengths is None or f.group != lengths.group or not f.ragged.form.has_slots:
            return width
        chosen = lengths.width(width)
        return chosen if f.ragged.max_len is None else min(chosen, f.ragged.max_len)

    def _chosen_widths(self, rows: np.ndarray, lengths: BucketLengths | None) -> tuple[int | None, ...] | None:
        """Per ragged job, the chosen width of these rows' batch where ``lengths`` sets it, else ``None``."""
        if lengths is None:
            return None
        lens = self.row_lengths(lengths.group)
        longest = int(lens[rows].max()) if len(rows) else 0
        return tuple(self.chosen_width(f, self._longest(f, rows, longest), lengths)
                     if f.group == lengths.group and f.ragged.form.has_slots else None
                     for f in self.fields if f.group is not None)

    def _longest(self, f: ResolvedField, rows: np.ndarray, longest: int) -> int:
        """The longest of ``rows`` over every group of ``f``, given ``longest`` of its own group."""
        for m in f.more:
            if len(rows):
                longest = max(longest, int(self.row_lengths(m.group)[rows].max()))
        return longest

    def _has_nan(self, group: str, values: np.ndarray | None = None) -> bool:
        """Whether ``values`` (on disk: this batch's) or, in RAM, the group's values hold NaN."""
        if not self.in_ram:
            assert values is not None
            return values.dtype.kind == "f" and bool(np.isnan(values).any())
        known = self._group_has_nan.get(group)
        if known is None:
            self._scan(group)
            known = self._group_has_nan[group]
        return known

    def _nonfinite_rows(self, group: str) -> np.ndarray:
        """In RAM: per dataset row, whether any of ``group``'s values in it is NaN or infinite (cached).

        A NaN of an output row comes from such a value (standardising one that is infinite
        may give NaN) or from a NaN pad value, which the kernel is given replaced."""
        flags = self._row_nonfinite.get(group)
        if flags is None:
            self._scan(group)
            flags = self._row_nonfinite[group]
        return flags

    def _scan(self, group: str) -> None:
        """In RAM: one pass over ``group``'s values finding the rows that hold a value that is
        not finite, and whether any of them is NaN (both cached; once, whichever thread asks first)."""
        with _SCAN_LOCK:
            if group in self._row_nonfinite:
                return
            pieces, has_nan = [], False
            for values, offsets in self._parts(group):
                bad = nonfinite_value_rows(values)
                has_nan = has_nan or bool(np.isnan(values[bad]).any())
                row = np.zeros(len(offsets) - 1, dtype=bool)
                row[np.searchsorted(np.asarray(offsets), bad, side="right") - 1] = True
                pieces.append(row)
            self._group_has_nan[group] = has_nan
            self._row_nonfinite[group] = np.concatenate(pieces) if pieces else np.zeros(0, bool)

    def _replace_nan(self, f: ResolvedField, batch: np.ndarray, rows: np.ndarray) -> None:
        """``nan_to`` in place of NaN in ``f``'s in-RAM ``batch`` of ``rows``: only in the rows
        holding a value that is not finite (a form without slots: the whole batch)."""
        fill = batch.dtype.type(self.nan_to)
        form = f.ragged.form
        if not form.has_slots or batch.ndim != 3 or len(rows) != batch.shape[form.axes.index("B")]:
            np.copyto(batch, fill, where=np.isnan(batch))
            return
        flags = self._field_nonfinite.get(f.name)
        if flags is None:  # once per field: the union of its groups' rows (a dict store is atomic)
            flags = np.logical_or.reduce([self._nonfinite_rows(g) for g in f.groups])
            self._field_nonfinite[f.name] = flags
        hits = np.flatnonzero(flags[rows])
        if not len(hits):
            return
        view = form.rows_view(batch)
        for b in hits:
            np.copyto(view[b], fill, where=np.isnan(view[b]))

    def _parts(self, group: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """The in-RAM ``(values, offsets)`` of ``group``: one pair, or one per part."""
        if isinstance(self.dataset, ConcatDataset):
            return self.dataset.ragged_parts(group)
        return [self.dataset.ragged(group)]

    def _masks(self, f: ResolvedField) -> bool:
        return self.nan_to is not None and f.role == "input" and not self._integer(f)

    def _integer(self, f: ResolvedField) -> bool:
        """Whether ``f`` is a ``Scalars`` output of an integer dtype (gathered by NumPy, not the kernel)."""
        return f.name in self._integers

    def _row_name(self, k: int) -> int:
        """The row an error names for row ``k`` of the dataset."""
        return k if self.row_names is None else int(self.row_names[k])

    def _shaped(self, f: ResolvedField, table: np.ndarray) -> np.ndarray:
        """A scalar output ``(B, S)`` as its field says: ``(B,)`` with ``squeeze`` (a view)."""
        return table.reshape(len(table)) if f.name in self._squeezed else table

    def _transform(self, f: ResolvedField) -> dict[str, np.ndarray] | None:
        """The kernel's ``center``/``scale``/``clip_min``/``clip_max`` of field ``f``, or ``None``.

        Raises
        ------
        SchemaError
            A ``Standardize`` of the field still has an ``"auto"`` parameter.
        """
        std = f.field.standardize
        unresolved_auto(std, f.name)
        return column_transform(std, f.field.vars)

    def _job(self, f: ResolvedField, parts: Parts, more: Sequence[kernels.RaggedSource] = (), *,
             width: int | None = None, sort: bool = True) -> kernels.RaggedJob:
        """The kernel job of ``f`` over ``parts`` (its own group's rows; ``more``: its other
        groups'): its form's layout and fill, its transform; ``width``: padded to exactly so many
        slots (a form without slots: cut at ``max_len``), else by the field's own rule."""
        spec = f.ragged
        form = spec.form
        params = self._transform(f) or {}
        pads = None
        if form.per_variable_fill(spec):
            pads = np.array(form.fill(spec, self._nan_fill(f)), dtype=np.float64)
        if width is None:
            max_len, fixed, multiple = spec.max_len, spec.fixed, self.pad_to_multiple_of
        else:
            max_len, fixed, multiple = (width if form.has_slots else spec.max_len), True, None
        return kernels.ragged_job(
            parts, max_len=max_len, fixed=fixed, multiple_of=multiple, pad_value=self._pad_value(f),
            columns=self._columns[f.name], sort_by=f.sort_column if sort else None,
            descending=spec.descending, padding=spec.padding, truncating=spec.truncating, dtype=spec.np_dtype,
            center=params.get("center"), scale=params.get("scale"), clip_min=params.get("clip_min"),
            clip_max=params.get("clip_max"), pad_values=pads, pad_mode=spec.pad_mode, layout=form.kernel_code,
            at=f.at if more else None, more=more)

    def _extras(self, f: ResolvedField, batch: np.ndarray, lengths: np.ndarray, dest: Arrays) -> None:
        """Put ``f``'s output and the outputs its form adds (lengths, mask, row bounds) into ``dest``."""
        f.ragged.form.extras(f.name, f.ragged, batch, lengths, dest)

    # -- building ------------------------------------------------------------------------------
    def gather_jobs(self) -> tuple[list[kernels.RaggedJob], list[np.ndarray]]:
        """The in-RAM ``BatchGather`` arguments: one ragged job per padded field, one table
        per float scalar field, each in field order."""
        ragged: list[kernels.RaggedJob] = []
        tables: list[np.ndarray] = []
        for f in self.fields:
            if f.group is None:
                if not self._integer(f):  # integer tables are gathered by NumPy (see _build_in_ram)
                    tables.append(self._scalar_table(f))
                continue
            for g in f.groups:
                for values, _ in self._parts(g):
                    warn_if_inexact(values, f.ragged.np_dtype, f"group {g!r} of output {f.name!r}")
            ragged.append(self._job(f, self._parts(f.group), self._sources(f, self._parts)))
        return ragged, tables

    def _sources(self, f: ResolvedField, parts: Callable[[str], Parts]) -> list[kernels.RaggedSource]:
        """``f``'s other groups (``parts(group)`` their rows), each padded by its own counts into its
        output columns; none for a field of one group."""
        return [kernels.RaggedSource(tuple(parts(m.group)), self._all_or(m.group, m.columns), m.at)
                for m in f.more]

    def gather_kernel(self, widths: tuple[int | None, ...] | None = None) -> kernels.BatchGather:
        """The in-RAM :class:`kernels.BatchGather` of every field (made once, at first use).

        ``widths``: per ragged job, an exact padded width (``None``: the job's own
        rule), one kernel per distinct tuple, sharing the first kernel's checked jobs.
        """
        if self._gather is None:
            self._gather = kernels.BatchGather(*self.gather_jobs())
        if widths is None or all(w is None for w in widths):
            return self._gather
        kernel = self._width_gathers.get(widths)
        if kernel is None:
            base = self._gather
            jobs = [job if w is None else job.at_width(w)  # a rows' width, at most the field's max_len
                    for w, job in zip(widths, base.ragged)]
            kernel = self._width_gathers.setdefault(widths, kernels.BatchGather(jobs, base.tables))
        return kernel

    def build(self, rows: np.ndarray, arena: Any = None,
              lengths: BucketLengths | None = None) -> tuple[Arrays, Arrays]:
        """The ``(inputs, targets)`` of ``rows`` (dataset rows, in batch order).

        In RAM, the arrays are built in ``arena`` (a writable buffer) where they
        fit, by the rule of :class:`kernels.BatchGather`; on disk it is not used.
        ``lengths`` (an order's ``bucket_lengths``): the outputs of its group are
        padded to :meth:`chosen_width`.
        """
        rows = np.asarray(rows, dtype=np.intp)
        if self.in_ram:
            return self._build_in_ram(rows, arena, lengths)
        inputs: dict[str, np.ndarray] = {}
        targets: dict[str, np.ndarray] = {}
        gathered = {g: self._read_group(g, rows) for g in self._groups_needed}
        columns = self._read_scalars(rows)
        for f in self.fields:
            dest = inputs if f.role == "input" else targets
            if f.group is None:
                dest[f.name] = self._shaped(f, self._scalars(f, rows, columns))
            elif f.more:
                self._extras(f, *self._spanning(f, gathered, lengths), dest)
            else:
                self._extras(f, *self._ragged(f, *gathered[f.group], lengths), dest)
        return inputs, targets

    def _read_scalars(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """Every scalar variable of the spec at ``rows``, the rows checked (and split by file,
        for several files) once."""
        names = list(dict.fromkeys(v for f in self.fields if f.group is None for v in f.field.vars))
        return self.dataset.scalars_at(names, rows)

    def _read_group(self, group: str, rows: np.ndarray) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
        """``group``'s values of ``rows`` from disk as pieces and each row's number across them.

        One piece for one dataset; one per file touched for several files, left
        unjoined (the kernel pads across pieces in one pass), each in its file's dtype
        (joined in one dtype once each output has checked the values, see :meth:`_ragged`).
        """
        n = len(rows)
        span = consecutive_range(rows, len(self.dataset))
        if span is not None:  # rows in file order: one range, read in place (file after file)
            return [self.dataset.ragged_range(group, *span)], np.arange(n, dtype=np.intp)
        if not isinstance(self.dataset, ConcatDataset) or not n:
            return [self.dataset.ragged(group, rows)], np.arange(n, dtype=np.intp)
        pieces, at = self.dataset.ragged_pieces(group, rows)
        return [(v, o.astype(np.int64, copy=False)) for v, o in pieces], at

    def _build_in_ram(self, rows: np.ndarray, arena: Any = None,
                      buckets: BucketLengths | None = None) -> tuple[Arrays, Arrays]:
        padded, tables = self.gather_kernel(self._chosen_widths(rows, buckets))(rows, arena=arena)
        padded_it, tables_it = iter(padded), iter(tables)
        inputs: dict[str, np.ndarray] = {}
        targets: dict[str, np.ndarray] = {}
        for f in self.fields:
            dest = inputs if f.role == "input" else targets
            if f.group is None:
                table = self._take(self._scalar_table(f), rows) if self._integer(f) else next(tables_it)
                dest[f.name] = self._shaped(f, table)
                continue
            batch, lengths = next(padded_it)
            batch = f.ragged.form.finish(batch)
            if self._masks(f) and any(self._has_nan(g) for g in f.groups):
                self._replace_nan(f, batch, rows)
            self._extras(f, batch, lengths, dest)
        return inputs, targets

    @staticmethod
    def _take(table: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``table[rows]`` of an integer table, rows checked as the kernel checks them."""
        if len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= len(table)):
            bad = rows[(rows < 0) | (rows >= len(table))][0]
            raise ValueError(f"row {bad} out of range for {len(table)} rows")
        return np.take(table, rows, axis=0)

    def _scalars(self, f: ResolvedField, rows: np.ndarray,
                 columns: dict[str, np.ndarray] | None = None) -> np.ndarray:
        dt = f.field.np_dtype
        out = np.empty((len(rows), len(f.field.vars)), dtype=dt)
        for j, v in enumerate(f.field.vars):  # one fancy index per column, not per row
            col = self.dataset.scalar(v, rows) if columns is None else columns[v]
            if self._integer(f):
                col = as_integers(col, dt, f.name, v, lambda k: self._row_name(int(rows[k])))
            else:
                warn_if_inexact(col, dt, f"scalar {v!r} of output {f.name!r}")
            out[:, j] = col
        params = self._transform(f)
        if params is not None:
            apply_standardize(out, params)
        if self._masks(f):
            np.copyto(out, dt.type(self.nan_to), where=np.isnan(out))
        return out

    def _nan_fill(self, f: ResolvedField) -> float | None:
        """What a NaN fill of ``f``'s padded slots becomes: ``nan_to`` for an input it masks, else kept."""
        return self.nan_to if self._masks(f) else None

    def _pad_value(self, f: ResolvedField) -> float:
        return f.ragged.form.fill_value(f.ragged, self._nan_fill(f))

    def _ragged(self, f: ResolvedField, pieces: list[tuple[np.ndarray, np.ndarray]],
                at: np.ndarray, buckets: BucketLengths | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Pad one field of a group read for this batch only (on-disk path), from its pieces."""
        spec = f.ragged
        assert f.group is not None  # padded fields have a group
        longest = max((int(np.diff(o).max()) for _, o in pieces if len(o) > 1), default=0)
        width = self.chosen_width(f, longest, buckets)
        for values, _ in pieces:  # as stored, before the pieces are joined in one dtype
            warn_if_inexact(values, spec.np_dtype, f"group {f.group!r} of output {f.name!r}")
        if len({v.dtype for v, _ in pieces}) > 1:
            dtype = np.result_type(*[v.dtype for v, _ in pieces])
            pieces = [(v.astype(dtype), o) for v, o in pieces]
        job = self._job(f, pieces, width=width)
        values, offsets = pieces[0]
        if not job.plain or len(pieces) > 1:  # the in-RAM kernel over this batch's rows: the same rule, the same bits
            (batch, lengths), = kernels.BatchGather([job])(at)[0]
        else:
            batch, lengths = kernels.pad_ragged(
                values, offsets, max_len=width, pad_value=self._pad_value(f),
                columns=self._columns[f.name], sort_by=f.sort_column, descending=spec.descending,
                padding=spec.padding, truncating=spec.truncating, dtype=spec.np_dtype)
        if self._masks(f) and any(self._has_nan(f.group, v) for v, _ in pieces):
            np.copyto(batch, batch.dtype.type(self.nan_to), where=np.isnan(batch))
        return spec.form.finish(batch), lengths

    def _spanning(self, f: ResolvedField, gathered: dict[str, tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]],
                  buckets: BucketLengths | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Pad a field of several groups read for this batch only (on-disk path): one kernel call,
        each group by its own counts (groups whose pieces number the rows differently are first
        put in batch order)."""
        spec = f.ragged
        groups = f.groups
        at = gathered[groups[0]][1]
        same = all(np.array_equal(gathered[g][1], at) for g in groups)
        pieces = {g: gathered[g][0] if same else [_in_batch_order(*gathered[g])] for g in groups}
        rows = at if same else np.arange(len(at), dtype=np.intp)
        for g in groups:
            for values, _ in pieces[g]:
                warn_if_inexact(values, spec.np_dtype, f"group {g!r} of output {f.name!r}")
            pieces[g] = _one_dtype(pieces[g])
        longest = max((int(np.diff(o).max()) for g in groups for _, o in pieces[g] if len(o) > 1), default=0)
        width = self.chosen_width(f, longest, buckets)
        job = self._job(f, pieces[groups[0]], self._sources(f, pieces.__getitem__), width=width, sort=False)
        (batch, lengths), = kernels.BatchGather([job])(rows)[0]
        if self._masks(f) and any(self._has_nan(g, v) for g in groups for v, _ in pieces[g]):
            np.copyto(batch, batch.dtype.type(self.nan_to), where=np.isnan(batch))
        return spec.form.finish(batch), lengths


def _one_dtype(pieces: list[tuple[np.ndarray, np.ndarray]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """``pieces`` in one values dtype (the kernel's parts share one)."""
    if len({v.dtype for v, _ in pieces}) > 1:
        dtype = np.result_type(*[v.dtype for v, _ in pieces])
        return [(v.astype(dtype), o) for v, o in pieces]
    return pieces


def _in_batch_order(pieces: list[tuple[np.ndarray, np.ndarray]], at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows ``at`` of ``pieces`` (numbered one piece after another) as one ``(values, offsets)``."""
    pieces = _one_dtype(pieces)
    values = np.concatenate([v for v, _ in pieces])
    lens = np.concatenate([np.diff(o) for _, o in pieces])
    offsets = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    return take_ragged(values, offsets, at)
