"""``predict``: score every selected row once, in input order, and write the scores beside the inputs."""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from lstm_data._util.declared import suggest
from lstm_data._util.safe_output import move_into_place, temp_path
from lstm_data.batching.epochs.batches import Batches
from lstm_data.batching.epochs.prefetch import prefetch
from lstm_data.batching.order.options import Order
from lstm_data.batching.spec.batch_spec import BatchSpec
from lstm_data.data.dataset import Dataset
from lstm_data.errors import OptionError, SchemaError
from lstm_data.io.dispatch import open as open_dataset
from lstm_data.io.read_options import ReadOptions
from lstm_data.scoring.chunks import WorkDir, fingerprint
from lstm_data.scoring.models import as_scorer
from lstm_data.scoring.options import PredictOptions, spec_file
from lstm_data.scoring.outputs import Target, targets
from lstm_data.scoring.rows import RowMap
from lstm_data.scoring.writers import ColumnWriter, make_writer

__all__ = ["predict"]

#: the key columns every output row starts with
KEYS = ("file_index", "entry")
#: output rows made and written at a time with ``selected="mark"``
PIECE_ROWS = 1 << 16
#: a marked chunk's span of stored rows, and its scored stored rows
_SPAN, _ROW = "lstm_data_span", "lstm_data_row"


def _labels(spec: BatchSpec) -> list[str] | None:
    """The score names of a single ``(B, K)`` output: the variables of the spec's one target."""
    if len(spec.targets) != 1:
        return None
    return list(next(iter(spec.targets.values())).vars)


def _check_observers(base: Dataset, observers: Sequence[str]) -> list[str]:
    for name in observers:
        if name in KEYS or name == "selected" or name.startswith("score"):
            raise OptionError(f"observer {name!r} has the name of an output column; rename it")
        if name not in base.scalar_names:
            known = base.scalar_names
            raise SchemaError(f"observer {name!r} is no scalar column of the data{suggest(name, known)}",
                              variable=name)
    return list(observers)


class _Run:
    """One rank's scoring run: its batches, row map, chunks and outputs."""

    def __init__(self, base: Dataset, spec: BatchSpec, options: PredictOptions, observers: list[str]) -> None:
        self.base, self.options, self.observers = base, options, observers
        scoring = spec.replace(targets={})  # scoring data needs no truth columns
        order = Order(batch_size=options.batch_size, shuffle=False, drop_last=False, seed=0)
        self.batches = Batches(base, scoring, order)
        self.rowmap = RowMap(base, spec, self.batches.dataset)
        n, rank, world = len(self.batches), options.rank, options.world_size
        self.lo, self.hi = rank * n // world, (rank + 1) * n // world
        self.start = 0 if rank == 0 else self._first_base(self.lo)
        self.end = len(base) if rank == world - 1 else self._first_base(self.hi)
        chunks = -(-(self.hi - self.lo) // options.flush_every)
        self.n_chunks = max(chunks, 1 if options.selected == "mark" and self.end > self.start else 0)

    def _first_base(self, index: int) -> int:
        if index >= len(self.batches):
            return len(self.base)
        return int(self.rowmap.base_rows(self.batches.rows_of(index, 0)[:1])[0])

    def _after_base(self, index: int) -> int:
        """The stored row after the last row of batch ``index``."""
        return int(self.rowmap.base_rows(self.batches.rows_of(index, 0)[-1:])[0]) + 1

    def scored_all(self) -> bool:
        """Whether every stored row is scored (no selection, no dropped empty rows)."""
        n = len(self.batches)
        if n == 0:
            return len(self.base) == 0
        last = len(self.batches.rows_of(n - 1, 0))
        return (n - 1) * self.options.batch_size + last == len(self.base)

    def _build(self, index: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        inputs = self.batches.batch(index, 0)[0]
        return self.batches.rows_of(index, 0), inputs

    def score(self, work: WorkDir, scorer: Any, bar: Any) -> None:
        """Score the chunks not flushed yet, flushing each."""
        flush = self.options.flush_every
        first = self.lo + work.done * flush
        todo = max(0, self.hi - first)
        built: Iterator[tuple[np.ndarray, dict[str, np.ndarray]]] = prefetch(
            lambda i: self._build(first + i), todo, self.options.threads, self.options.prefetch_batches)
        try:
            for c in range(work.done, self.n_chunks):
                b0, b1 = self.lo + c * flush, min(self.hi, self.lo + (c + 1) * flush)
                cursor = self.start if c == 0 else self._after_base(b0 - 1)
                rows, scores = [], []
                for _ in range(b0, b1):
                    batch_rows, inputs = next(built)
                    scores.append(scorer(inputs))
                    rows.append(self.rowmap.base_rows(batch_rows))
                    if bar is not None:
                        bar.update(1)
                end = self.end if c == self.n_chunks - 1 else (int(rows[-1][-1]) + 1 if rows else cursor)
                work.flush(c, self._columns(cursor, end, rows, scores))
        finally:
            close = getattr(built, "close", None)
            if close is not None:
                close()

    def _columns(self, cursor: int, end: int, rows: list[np.ndarray],
                 scores: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """A chunk's columns: the scored rows' keys, scores and observers; with
        ``selected="mark"`` the scored stored rows, their scores and the chunk's span
        of stored rows (the rows between are filled in as they are written)."""
        scored = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        names = list(scores[0]) if scores else []
        values = {n: np.concatenate([s[n] for s in scores]) for n in names}
        if self.options.selected == "mark":
            return {_SPAN: np.array([cursor, end], dtype=np.int64), _ROW: scored, **values}
        files, entries = self.rowmap.keys(scored)
        columns: dict[str, np.ndarray] = {"file_index": files, "entry": entries, **values}
        for name in self.observers:
            columns[name] = np.asarray(self.base.scalar(name, scored))
        return columns

    def pieces(self, chunk: dict[str, np.ndarray]) -> Iterator[dict[str, np.ndarray]]:
        """The output rows of a flushed chunk, at most :data:`PIECE_ROWS` at a time
        (a chunk holds at most ``flush_every`` batches of scored rows, but the
        unscored rows a marked chunk spans have no bound)."""
        if _SPAN not in chunk:
            yield chunk
            return
        cursor, end = (int(v) for v in chunk.pop(_SPAN))
        scored = chunk.pop(_ROW)
        for lo in range(cursor, end, PIECE_ROWS):
            hi = min(lo + PIECE_ROWS, end)
            a, b = (int(v) for v in np.searchsorted(scored, [lo, hi]))
            at = scored[a:b] - lo
            selected = np.zeros(hi - lo, dtype=bool)
            selected[at] = True
            files, entries = self.rowmap.keys(np.arange(lo, hi, dtype=np.int64))
            columns: dict[str, np.ndarray] = {"file_index": files, "entry": entries, "selected": selected}
            for n, v in chunk.items():
                full = np.full(hi - lo, np.nan, dtype=v.dtype if v.dtype.kind == "f" else np.float64)
                full[at] = v[a:b]
                columns[n] = full
            for name in self.observers:
                columns[name] = np.asarray(self.base.scalar(name, slice(lo, hi)))
            yield columns


def _finish(writer: ColumnWriter, target: Target, template: dict[str, np.ndarray], overwrite: bool) -> Path:
    if writer.rows == 0:
        writer.write(template)
    writer.close()
    move_into_place(writer.path, target.path, replace=overwrite)
    return target.path


def _write(run: _Run, work: WorkDir, outs: list[Target]) -> list[Path]:
    """Write the outputs from the flushed chunks, one output open at a time."""
    written: list[Path] = []
    template = {k: np.zeros(0, np.int64) for k in KEYS}
    opened: tuple[int, ColumnWriter] | None = None
    aligned = run.options.selected == "mark" or run.scored_all()

    def open_out(i: int) -> ColumnWriter:
        target = outs[i]
        return make_writer(target.fmt, temp_path(target.path), tree=target.tree_name(),
                           row_groups=target.row_groups() if aligned else None)

    first = True
    for chunk in (piece for whole in work.chunks(run.n_chunks) for piece in run.pieces(whole)):
        if first:
            template, first = {n: v[:0] for n, v in chunk.items()}, False
        files = chunk["file_index"] if len(outs) > 1 else np.zeros(len(chunk["entry"]), np.int64)
        for f in np.unique(files):
            while opened is None or opened[0] < f:
                if opened is not None:
                    written.append(_finish(opened[1], outs[opened[0]], template, run.options.overwrite))
                nxt = 0 if opened is None else opened[0] + 1
                opened = (nxt, open_out(nxt))
            at = files == f
            opened[1].write({n: v[at] for n, v in chunk.items()})
    last = -1 if opened is None else opened[0]
    if opened is not None:
        written.append(_finish(opened[1], outs[last], template, run.options.overwrite))
    for i in range(last + 1, len(outs)):
        written.append(_finish(open_out(i), outs[i], template, run.options.overwrite))
    return written


def _progress(enabled: bool, total: int) -> Any:
    if not enabled:
        return None
    try:
        tqdm = importlib.import_module("tqdm.auto").tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="scoring", unit="batch")


def predict(model: object, data: Dataset | str | os.PathLike[str] | Sequence[str],
            spec: BatchSpec | str | os.PathLike[str],
            out: str | os.PathLike[str] | None = None, *, observers: Sequence[str] = (),
            options: PredictOptions | None = None, state_dict: str | os.PathLike[str] | None = None,
            read: ReadOptions | None = None) -> list[Path]:
    """Score every selected row of ``data`` once, in input order, and write the scores beside it.

    Parameters
    ----------
    model
        A Keras 3 model or ``.keras`` file; a torch module, TorchScript file or
        ``torch.export`` ``.pt2`` file (called with the inputs as tensors in the
        spec's input order); ``"module:factory"`` with ``state_dict``; or any
        callable taking the inputs dict. One ``(B,)`` / ``(B, K)`` output becomes
        ``score_<label>`` columns named by the spec's target variables (else
        ``score_0 ..``); a dict or tuple output ``score_<key>`` / ``score_<i>``.
    data
        A dataset, or the path(s) :func:`lstm_data.open` opens.
    spec
        The spec the model was trained with (a :class:`BatchSpec` or its TOML file);
        its targets are not read.
    out
        Directory of the outputs (default: each input's own directory).
    observers
        Scalar columns of the data copied, bit for bit, beside the scores.
    options
        A :class:`PredictOptions` (batch size, format, ``selected``, resume, rank...).
    state_dict
        The torch state dict of a ``"module:factory"`` model.
    read
        How to open ``data`` when it is given as paths.

    Returns
    -------
    list of Path
        The outputs written: one per input file (a part per rank with ``world_size > 1``).
        Each row holds ``file_index``, ``entry`` (the input file and its entry),
        ``selected`` (with ``selected="mark"``), the scores and the observers.

    Raises
    ------
    OptionError
        An output would replace an input, or exists without ``overwrite``.
    SchemaError
        An observer is no scalar column of the data.
    """
    options = options or PredictOptions()
    if not isinstance(options, PredictOptions):
        raise OptionError(f"options must be a PredictOptions, got {type(options).__name__}")
    if not isinstance(spec, BatchSpec):
        spec = spec_file(spec)
    base = data if isinstance(data, Dataset) else open_dataset(data, read=read)
    sources = tuple(str(s) for s in base.source)
    observed = _check_observers(base, observers)
    outs = targets(sources, out, options)
    scorer, described = as_scorer(model, list(spec.input_names), _labels(spec), state_dict)
    run = _Run(base, spec, options, observed)
    settings = {"options": {k: v for k, v in options.to_dict().items()
                            if k not in ("resume", "threads", "prefetch_batches", "overwrite", "progress")},
                "spec": spec.to_dict(), "model": described, "observers": observed, "rows": len(base)}
    work_dir = outs[0].path.parent / f".lstm_data-predict-{options.rank}-of-{options.world_size}.work"
    work = WorkDir(work_dir, fingerprint(settings, sources), options.resume)
    bar = _progress(options.progress, run.hi - run.lo)
    try:
        run.score(work, scorer, bar)
    finally:
        if bar is not None:
            bar.close()
    written = _write(run, work, outs)
    work.remove()
    return written
