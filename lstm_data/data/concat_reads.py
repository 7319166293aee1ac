"""How a dataset of several files reads a batch's rows: split by file once, read in place.

:class:`ConcatReads` is the reading half of
:class:`~lstm_data.data.concat.ConcatDataset`: a batch's rows are split by file
once (kept for the batch's scalars and each of its groups), rows in file order
are read into one buffer file after file, scalars of files that hold their
columns are sliced from them, and values of files stored in different dtypes are
joined only after they are checked.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from lstm_data._util.heap import empty_pages
from lstm_data._util.helper_thread import helper, on_helper
from lstm_data.data.dataset import Dataset, RowSelection, check_row_range, consecutive_range
from lstm_data.data.joins import check_join, exact_in, joined

__all__ = ["ConcatReads"]


#: one file's share of a batch: (file index, positions in the batch, the file's own rows)
_FilePart = tuple[int, slice | np.ndarray, slice | np.ndarray]

#: rows per run of consecutive rows, on average, for reading the runs in place (else per file)
_RUN_MIN_ROWS = 8


#: bytes of one read over several files above which a helper thread reads half of the files
_PARALLEL_BYTES = 2 << 20


def _fill(group: str, jobs: list[tuple[Dataset, int, int, np.ndarray]]) -> None:
    """Each ``(part, first, stop, out)`` of ``jobs``: the part's rows ``first..stop - 1`` into ``out``."""
    for part, a, b, out in jobs:
        part.ragged_into(group, a, b, out)


def _as_slice(pos: np.ndarray) -> slice | np.ndarray:
    """Increasing positions ``pos`` as a slice when they are consecutive (a cheaper index)."""
    if len(pos) and int(pos[-1]) - int(pos[0]) == len(pos) - 1:
        return slice(int(pos[0]), int(pos[-1]) + 1)
    return pos


class ConcatReads(Dataset):
    """Batch reads over the parts of a :class:`~lstm_data.data.concat.ConcatDataset`
    (which sets the attributes below and inherits these methods)."""

    datasets: list[Dataset]
    cumulative: np.ndarray
    part_values: dict[str, np.ndarray]
    _kept_split: tuple[np.ndarray, list[_FilePart], bool] | None
    _group_dtypes: dict[str, tuple[np.dtype, bool]]
    _join_warned: set[str]
    _held: dict[tuple[int, str], np.ndarray]

    def locate(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(file index, local row)`` of global ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        file_of = np.searchsorted(self.cumulative, rows, side="right") - 1
        return file_of, rows - self.cumulative[file_of]

    def _split(self, rows: np.ndarray) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """Per file with rows: ``(file index, positions in request, local rows)``."""
        if consecutive_range(rows, self._n_rows) is not None:
            return self._split_range(int(rows[0]), int(rows[-1]) + 1)
        return self._split_scattered(rows)

    def _split_scattered(self, rows: np.ndarray) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """:meth:`_split` of rows in any order: each row's file found by search."""
        file_of, local = self.locate(rows)
        order = np.argsort(file_of, kind="stable")
        bounds = np.searchsorted(file_of[order], np.arange(len(self.datasets) + 1))
        for f in range(len(self.datasets)):
            pos = order[bounds[f]:bounds[f + 1]]
            if len(pos):
                yield f, pos, local[pos].astype(np.intp)

    def _split_range(self, lo: int, hi: int) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """:meth:`_split` of rows ``lo..hi - 1``, in order: each file's share is a range."""
        cum = self.cumulative
        for f, a, b in self._file_ranges(lo, hi):
            base = int(cum[f])
            yield f, np.arange(base + a - lo, base + b - lo, dtype=np.intp), np.arange(a, b, dtype=np.intp)

    def _file_ranges(self, lo: int, hi: int) -> list[tuple[int, int, int]]:
        """Rows ``lo..hi - 1`` (within this dataset) as ``(part, first, stop)`` local ranges, in order."""
        cum = self.cumulative
        out = []
        for f in range(int(np.searchsorted(cum, lo, side="right")) - 1, len(self.datasets)):
            start, end = int(cum[f]), int(cum[f + 1])
            if start >= hi:
                break
            if end > lo:
                out.append((f, max(lo, start) - start, min(hi, end) - start))
        return out

    def _split_once(self, rows: np.ndarray) -> tuple[list[_FilePart], bool]:
        """Per file with rows: ``(file index, positions in request, local rows)``, positions and
        local rows as slices when ``rows`` are consecutive (then also ``True``: each file's share
        is a range). Kept for the last rows asked (compared by value, so an array changed in
        place is split again), so a batch reads its scalars and each of its groups through one
        split."""
        kept = self._kept_split
        if kept is not None and len(kept[0]) == len(rows) and len(rows) and kept[0][0] == rows[0] \
                and np.array_equal(kept[0], rows):
            return kept[1], kept[2]
        consecutive = consecutive_range(rows, self._n_rows) is not None
        split: list[_FilePart]
        if consecutive:
            lo, cum = int(rows[0]), self.cumulative
            split = []
            for f, a, b in self._file_ranges(lo, lo + len(rows)):
                if b == a:  # a part without rows
                    continue
                at = int(cum[f]) + a - lo
                split.append((f, slice(at, at + b - a), slice(a, b)))
        else:
            split = [(f, _as_slice(pos), loc) for f, pos, loc in self._split_scattered(rows)]
        self._kept_split = (rows.copy(), split, consecutive)
        return split, consecutive

    def _group_dtype(self, group: str) -> tuple[np.dtype, bool]:
        """The dtype ``group``'s values of several parts are joined in, and whether every
        part's values convert to it exactly (kept). Not so for an int64 file among float
        ones: a batch then reads each part in its own dtype, so that the batch's own check
        sees the values as stored."""
        known = self._group_dtypes.get(group)
        if known is None:
            none = np.zeros(0, np.intp)
            dtypes = {d.ragged(group, none)[0].dtype for d in self.datasets}
            joined = np.result_type(*dtypes)
            known = self._group_dtypes[group] = (joined, all(exact_in(d, joined) for d in dtypes))
        return known

    def _spans(self, rows: np.ndarray) -> list[tuple[int, int, int]] | None:
        """``rows`` as ``(part, first, stop)`` local row ranges in request order, when they are
        a few runs of consecutive rows (a batch in file order, a window of shuffled blocks);
        ``None`` when they are scattered."""
        n = len(rows)
        if n == 0:
            return None
        breaks = (np.flatnonzero(np.diff(rows) != 1) + 1).tolist()
        if len(breaks) + 1 > max(1, n // _RUN_MIN_ROWS):
            return None
        if int(rows.min()) < 0 or int(rows.max()) >= self._n_rows:
            return None  # the per-file path names the row out of range
        return [span for s, e in zip([0, *breaks], [*breaks, n])
                for span in self._file_ranges(int(rows[s]), int(rows[e - 1]) + 1)]

    def ragged_range(self, group: str, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows ``lo .. hi - 1`` of ``group``, each file's share read into one buffer.

        See :meth:`lstm_data.data.dataset.Dataset.ragged_range`. Files whose values do
        not convert exactly to a common dtype (an int64 file among float ones) are joined
        as :meth:`ragged` joins them, with its check.
        """
        check_row_range(lo, hi, self._n_rows)
        self._check_group(group)
        if not self._group_dtype(group)[1]:
            return self.ragged(group, slice(lo, hi))
        return self._read_spans(group, [s for s in self._file_ranges(lo, hi) if s[2] > s[1]])

    def _read_spans(self, group: str, spans: list[tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """``group``'s values and offsets of the rows of ``spans`` (see :meth:`_spans`): one
        buffer that each part's rows are read into, in place, in request order."""
        width, dtype = len(self._groups[group]), self._group_dtype(group)[0]
        if not spans:
            return np.empty((0, width), dtype), np.zeros(1, np.int64)
        if len(spans) == 1:  # rows of one file: its own range read
            f, a, b = spans[0]
            values, offsets = self.datasets[f].ragged_range(group, a, b)
            return values.astype(dtype, copy=False), offsets
        n_rows = sum(b - a for _, a, b in spans)
        offsets = np.empty(n_rows + 1, dtype=np.int64)
        offsets[0] = 0
        bounds = []  # per span: first row and first value in the buffer, the part's offsets
        row = value = 0
        for f, a, b in spans:
            part_offsets = self.datasets[f].offsets(group)
            first = int(part_offsets[a])
            np.subtract(part_offsets[a + 1:b + 1], first - value, out=offsets[row + 1:row + 1 + b - a])
            bounds.append(value)
            row, value = row + b - a, value + int(part_offsets[b]) - first
        values = empty_pages((value, width), dtype)  # a window's values: unmapped once freed
        jobs = [(self.datasets[f], a, b, values[start:stop])
                for (f, a, b), start, stop in zip(spans, bounds, bounds[1:] + [value])]
        if len(jobs) < 2 or values.nbytes < _PARALLEL_BYTES or on_helper("parts"):
            _fill(group, jobs)
            return values, offsets
        # files decode (and copy) without the GIL: a helper thread fills the second half
        half = int(np.searchsorted(np.cumsum([j[3].nbytes for j in jobs]), values.nbytes / 2)) + 1
        half = min(half, len(jobs) - 1)
        later = helper("parts").submit(_fill, group, jobs[half:])
        try:
            _fill(group, jobs[:half])
        finally:
            later.result()
        return values, offsets

    def scalars_at(self, names: list[str], rows: RowSelection) -> dict[str, np.ndarray]:
        """Several scalar columns at ``rows``, the rows split by file once for all of them.

        Parameters
        ----------
        names
            Scalar columns (per-file values included).
        rows
            Rows of this dataset, in any order (ints, an array, a slice).

        Returns
        -------
        dict of str to numpy.ndarray
            Each column's values at ``rows``, as :meth:`scalar` gives them.
        """
        rows = np.arange(*rows.indices(self._n_rows)) if isinstance(rows, slice) else \
            np.asarray(rows, dtype=np.int64)
        split, consecutive = self._split_once(rows)
        stored = [n for n in dict.fromkeys(names) if n not in self.part_values and n in self._scalar_names]
        out: dict[str, np.ndarray] = {name: self.scalar(name, rows) for name in names
                                      if name not in stored or not split}
        if not split or not stored:
            return out
        if len(split) == 1 and isinstance(split[0][1], slice):  # one file, rows in the order asked
            out.update(self.datasets[split[0][0]].scalars_at(stored, split[0][2]))
            return out
        if consecutive and all(self.datasets[f].scalars_held for f, _, _ in split):
            out.update(self._held_scalars(stored, split))  # slices of the columns the parts hold
            return out
        per_part = [(pos, self.datasets[f].scalars_at(stored, loc)) for f, pos, loc in split]
        if consecutive:  # each file's share follows the last one's
            out.update({name: joined([cols[name] for _, cols in per_part], f"scalar {name!r}", self._join_warned)
                        for name in stored})
            return out
        for name in stored:
            column = np.empty(len(rows), dtype=np.result_type(*[c[name].dtype for _, c in per_part]))
            for pos, cols in per_part:
                check_join(cols[name], column.dtype, f"scalar {name!r}", self._join_warned)
                column[pos] = cols[name]
            out[name] = column
        return out

    def _held_scalars(self, names: list[str], split: list[_FilePart]) -> dict[str, np.ndarray]:
        """``names`` at consecutive rows (``split`` of them: local rows as slices) of parts that
        hold their scalar columns: each file's range sliced and copied, no row index made."""
        out = {}
        for name in names:
            columns = [self._held_column(f, name)[loc] for f, _, loc in split]
            out[name] = columns[0].copy() if len(columns) == 1 else \
                joined(columns, f"scalar {name!r}", self._join_warned)
        return out

    def _held_column(self, part: int, name: str) -> np.ndarray:
        """Part ``part``'s column ``name`` as it holds it (kept; a reference, not a copy)."""
        column = self._held.get((part, name))
        if column is None:
            column = self._held[(part, name)] = self.datasets[part].scalar(name)
        return column

    def ragged_pieces(self, group: str, rows: np.ndarray) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
        """``group``'s values of ``rows``, read part by part and left unjoined.

        What a batch of on-disk parts is padded from in one pass: nothing is
        concatenated nor put back in request order.

        Parameters
        ----------
        group
            The group's name.
        rows
            Rows of this dataset, in batch order.

        Returns
        -------
        pieces : list of (values, offsets)
            One per part holding some of ``rows``, in part order; the rows of each in
            the order they were asked.
        at : numpy.ndarray
            intp, for each of ``rows``, its row number across the pieces (numbered one
            piece after another).
        """
        rows = np.asarray(rows, dtype=np.int64)
        split, consecutive = self._split_once(rows)
        if consecutive and self._group_dtype(group)[1]:  # one buffer, each file's rows read in place
            spans = [(f, loc.start, loc.stop) for f, _, loc in split if isinstance(loc, slice)]
            return [self._read_spans(group, spans)], np.arange(len(rows), dtype=np.intp)
        pieces: list[tuple[np.ndarray, np.ndarray]] = []
        at = np.empty(len(rows), dtype=np.intp)
        start = 0
        for f, pos, loc in split:
            pieces.append(self.datasets[f].ragged(group, loc))
            n = len(pieces[-1][1]) - 1
            at[pos] = np.arange(start, start + n)
            start += n
        return pieces, at
