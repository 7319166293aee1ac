"""Several datasets seen as one, rows numbered across them.

A global row maps to ``(file, local row)`` through cumulative row counts and
``numpy.searchsorted``. A request is split per file, each file gathers its rows
with its own chunk-aware reads, and the pieces are put back in request order
(the batch reads are in :mod:`lstm_data.data.concat_reads`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from lstm_data.data.concat_reads import ConcatReads
from lstm_data.data.dataset import Dataset, InMemoryDataset
from lstm_data.data.joins import check_join, joined
from lstm_data.data.ragged import RaggedGroup, count_mismatch, take_ragged
from lstm_data.errors import SchemaError

__all__ = ["ConcatDataset", "concat_datasets", "join_offsets"]


def join_offsets(lengths: list[np.ndarray]) -> np.ndarray:
    """int64 offsets (n + 1) of rows whose lengths are ``lengths``, one array per part, in order."""
    lens = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    out = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=out[1:])
    return out


def _describe_difference(kind: str, expected: list[str], got: list[str]) -> str:
    missing = [x for x in expected if x not in got]
    extra = [x for x in got if x not in expected]
    if missing or extra:
        parts = ([f"missing {missing[:5]}"] if missing else []) + ([f"extra {extra[:5]}"] if extra else [])
        return f"{kind}: " + ", ".join(parts)
    return f"{kind} in a different order: {got[:8]} vs {expected[:8]}"


def _regrouped(first: Dataset, other: Dataset, first_label: str) -> str | None:
    """Two prong variables grouped together in one dataset and apart in the other: which,
    and the first row where their prong counts differ (in the dataset that keeps them apart)."""
    where = [{v: g for g, vs in d.groups.items() for v in vs} for d in (first, other)]
    if set(where[0]) != set(where[1]):
        return None
    labels = (f"in {first_label}", "here")
    for together, apart in ((0, 1), (1, 0)):
        seen: dict[str, str] = {}
        for v, g in where[together].items():
            w = seen.setdefault(g, v)
            if where[apart][w] != where[apart][v]:
                split = [where[apart][w], where[apart][v]]
                why = count_mismatch((first, other)[apart].offsets, split)
                return (f"{w!r} and {v!r} are one group ({g!r}) {labels[together]} but two ({split[0]!r}, "
                        f"{split[1]!r}) {labels[apart]}: {why}; declare the groups with a schema to read "
                        "every file alike")
    return None


def _column_names(ds: Dataset) -> set[str]:
    return set(ds.scalar_names).union(*ds.groups.values())


def _untyped_empties(datasets: list[Dataset]) -> set[int]:
    """The positions of the row-less parts whose column names are those of the others.

    A header-only CSV has no cells to show which columns hold arrays, so it reads
    every column as a scalar. It adds no rows; when its column names are those of
    the first part with rows, it is left out rather than called a mismatch. A
    row-less part with other names is kept, and the column check names it.
    """
    reference = next((d for d in datasets if len(d)), None)
    if reference is None:
        return set()
    names = _column_names(reference)
    return {i for i, d in enumerate(datasets) if not len(d) and _column_names(d) == names}


class ConcatDataset(ConcatReads):
    """The rows of several datasets, one after another.

    Parameters
    ----------
    datasets
        Datasets with the same scalar names and the same groups (same variables,
        same order).
    names
        A label per dataset for error messages (file paths); default ``source``.
    part_values
        Scalar columns taken from the part rather than its rows: column name -> one
        value per dataset (e.g. the file's index, or a label or weight per file).
        Every row of a part holds its part's value.

    Raises
    ------
    SchemaError
        The datasets' columns differ (names the file and the difference), or a
        ``part_values`` column has a name the data has, or not one value per dataset.
    """

    def __init__(self, datasets: Sequence[Dataset], names: Sequence[str] | None = None,
                 part_values: dict[str, Sequence[float]] | None = None) -> None:
        if not datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        labels = list(names) if names is not None else [
            ", ".join(d.source) or f"dataset {i}" for i, d in enumerate(datasets)]
        sources = tuple(s for d in datasets for s in d.source) or tuple(labels)
        dropped = _untyped_empties(list(datasets))
        kept = [i for i in range(len(datasets)) if i not in dropped]
        self.datasets, labels = [datasets[i] for i in kept], [labels[i] for i in kept]
        self._labels = labels
        first = self.datasets[0]
        for ds, label in zip(self.datasets[1:], labels[1:]):
            self._check_same_columns(first, ds, labels[0], label)
        counts = np.array([len(d) for d in self.datasets], dtype=np.int64)
        self.cumulative = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=self.cumulative[1:])
        self._n_rows = int(self.cumulative[-1])
        self._scalar_names = first.scalar_names
        self._groups = first.groups
        self.source = sources
        self.part_values = {name: values[kept] for name, values in  # of the parts kept
                            self._check_part_values(part_values or {}, len(datasets)).items()}
        self._scalar_names = self._scalar_names + list(self.part_values)
        self._kept_split = None
        self._group_dtypes = {}
        self._join_warned = set()  # columns whose join changed an integer (warned once)
        self._held = {}  # parts' held scalar columns, by reference

    def _check_part_values(self, given: dict[str, Sequence[float]], n_parts: int) -> dict[str, np.ndarray]:
        out = {}
        for name, values in given.items():
            if name in self._scalar_names or any(name in v for v in self._groups.values()):
                raise SchemaError(f"per-file column {name!r} has the name of a column of the data; "
                                  "choose another name", variable=name)
            arr = np.asarray(values)
            if arr.shape != (n_parts,) or arr.dtype.kind not in "biuf":
                raise SchemaError(f"per-file column {name!r} needs one number per file ({n_parts}), "
                                  f"got {values!r}", variable=name)
            out[name] = arr
        return out

    @staticmethod
    def _check_same_columns(first: Dataset, other: Dataset, first_label: str, label: str) -> None:
        if other.scalar_names != first.scalar_names:
            raise SchemaError(f"columns differ from {first_label}: " + _describe_difference(
                "scalars", first.scalar_names, other.scalar_names), file=label)
        regrouped = _regrouped(first, other, first_label) if other.groups != first.groups else None
        if regrouped is not None:
            raise SchemaError(f"columns differ from {first_label}: {regrouped}", file=label)
        if list(other.groups) != list(first.groups):
            raise SchemaError(f"columns differ from {first_label}: " + _describe_difference(
                "groups", list(first.groups), list(other.groups)), file=label)
        for g, names in first.groups.items():
            if other.groups[g] != names:
                raise SchemaError(f"columns differ from {first_label}: " + _describe_difference(
                    f"variables of group {g!r}", names, other.groups[g]), file=label, variable=g)

    @property
    def in_ram(self) -> bool:
        """Whether every part is held in RAM."""
        return all(d.in_ram for d in self.datasets)

    def value_chunk_starts(self, group: str) -> np.ndarray:
        """Every part's chunk starts in this dataset's rows, plus the first row of each part
        (a chunk never spans two files); empty when no part is chunked on disk."""
        pieces = [d.value_chunk_starts(group) + self.cumulative[i] for i, d in enumerate(self.datasets)]
        if not any(len(p) for p in pieces):
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(pieces + [self.cumulative[:-1]])).astype(np.int64)

    def row_chunk_starts(self) -> np.ndarray:
        """Every part's row chunk starts in this dataset's rows, plus the first row of each
        part; empty when no part reads its rows from disk in chunks."""
        pieces = [d.row_chunk_starts() + self.cumulative[i] for i, d in enumerate(self.datasets)]
        if not any(len(p) for p in pieces):
            return np.zeros(0, dtype=np.int64)
        return np.unique(np.concatenate(pieces + [self.cumulative[:-1]])).astype(np.int64)

    def ragged_parts(self, group: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """``(values, offsets)`` of ``group`` in every part, in row order (parts of parts
        flattened), without copying: what a batch gathers from in one pass.

        Raises
        ------
        ValueError
            A part is not held in RAM.
        """
        out: list[tuple[np.ndarray, np.ndarray]] = []
        for d in self.datasets:
            if isinstance(d, ConcatDataset):
                out.extend(d.ragged_parts(group))
            elif not d.in_ram:
                raise ValueError(f"part {', '.join(d.source) or type(d).__name__} is read from disk")
            else:
                out.append(d.ragged(group))
        return out

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_kept_split"] = None
        state["_held"] = {}  # references into the parts, which pickle their own columns
        state.pop("_scalar_set", None)  # a cache of the names, made again when needed
        return state

    def _scalar(self, name: str, rows: np.ndarray | None) -> np.ndarray:
        per_part = self.part_values.get(name)
        if per_part is not None:
            if rows is None:
                return np.repeat(per_part, np.diff(self.cumulative))
            picked: np.ndarray = per_part[self.locate(np.asarray(rows, dtype=np.int64))[0]]
            return picked
        if rows is None:
            return joined([d.scalar(name) for d in self.datasets], f"scalar {name!r}", self._join_warned)
        parts = [(pos, self.datasets[f].scalar(name, loc)) for f, pos, loc in self._split(rows)]
        dtype = np.result_type(*[p[1].dtype for p in parts]) if parts else \
            self.datasets[0].scalar(name, np.zeros(0, np.intp)).dtype
        out = np.empty(len(rows), dtype=dtype)
        for pos, col in parts:
            check_join(col, dtype, f"scalar {name!r}", self._join_warned)
            out[pos] = col
        return out

    def _offsets(self, group: str) -> np.ndarray:
        return join_offsets([np.diff(d.offsets(group)) for d in self.datasets])

    def _ragged(self, group: str, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if rows is None:
            parts = [d.ragged(group) for d in self.datasets]
            return (joined([p[0] for p in parts], f"group {group!r}", self._join_warned),
                    join_offsets([np.diff(p[1]) for p in parts]))
        spans = self._spans(rows)
        if spans is not None and 1 < len(spans) and (len(spans) == len({f for f, _, _ in spans})
                                                     or self._on_chunk_bounds(spans, group)):
            # one run of rows per file, or runs of whole chunks (a window of shuffled blocks):
            # each run read in place, in request order (a file asked several runs that share
            # a chunk reads them in one call below, each chunk once)
            return self._read_spans(group, spans)
        split = list(self._split(rows))
        pieces = [(pos, *self.datasets[f].ragged(group, loc)) for f, pos, loc in split]
        if not pieces:
            values = self.datasets[0].ragged(group, np.zeros(0, np.intp))[0]
            return values, np.zeros(1, dtype=np.int64)
        values = joined([p[1] for p in pieces], f"group {group!r}", self._join_warned)
        offsets = join_offsets([np.diff(p[2]) for p in pieces])
        position = np.concatenate([p[0] for p in pieces])
        if np.array_equal(position, np.arange(len(rows))):  # rows asked in file order
            return values, offsets
        # rows of ``values`` are in per-file order; put them back in request order
        back = np.empty(len(rows), dtype=np.intp)
        back[position] = np.arange(len(rows))
        return take_ragged(values, offsets, back)

    def _on_chunk_bounds(self, spans: list[tuple[int, int, int]], group: str) -> bool:
        """Whether every ``(part, first, stop)`` span starts and ends where its part's chunks
        of rows, or else of ``group``'s values, do (or at its end): no chunk is read by two spans."""
        starts = self.__dict__.setdefault("_row_chunk_starts", {})
        for f, a, b in spans:
            bounds = starts.get((f, group))
            if bounds is None:
                part = self.datasets[f]
                rows = part.row_chunk_starts()
                bounds = starts[(f, group)] = np.append(rows if len(rows) else part.value_chunk_starts(group),
                                                        len(part))
            at = np.searchsorted(bounds, [a, b])
            if at[0] >= len(bounds) or at[1] >= len(bounds) or bounds[at[0]] != a or bounds[at[1]] != b:
                return False
        return True

    def close(self) -> None:
        """Close every file that holds a handle."""
        for d in self.datasets:
            close = getattr(d, "close", None)
            if close is not None:
                close()


def concat_datasets(parts: Sequence[InMemoryDataset]) -> InMemoryDataset:
    """Rows of ``parts`` one after another, as one in-RAM dataset (vectorised copies)."""
    first = parts[0]
    scalars = {s: joined([p.scalar(s) for p in parts], f"scalar {s!r}") for s in first.scalar_names}
    groups = {}
    for g, names in first.groups.items():
        pieces = [p.ragged(g) for p in parts]
        values = joined([v for v, _ in pieces], f"group {g!r}")
        groups[g] = RaggedGroup(names, values, join_offsets([np.diff(o) for _, o in pieces]))
    return InMemoryDataset(scalars, groups)
