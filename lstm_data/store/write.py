"""Precompute every batch of an epoch into a zarr v3 store.

:func:`precompute` builds the batches of epoch 0 of ``Batches(dataset, spec,
batch_size, shuffle, seed)`` on worker threads (the kernels release the GIL, and
threads share the one dataset: nothing is copied per worker), writes them in
order into a temporary store next to the output, and renames it into place
(temporaries of killed runs are removed by the next precompute to the same
output). Every chunk is written and ends with a CRC-32C checksum, so a lost or
damaged chunk reads as an error (see :mod:`lstm_data.store.read`).
:func:`open_batches` reads it back with the ``Batches`` interface.
"""
from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

import numpy as np
import zarr

from lstm_data._util.dask import DaskClient
from lstm_data._util.deprecation import refuses_renamed
from lstm_data._util.exclusive import output_lock
from lstm_data._util.safe_output import (
    check_not_input,
    move_into_place,
    remove_path,
    remove_stale_temporaries,
    temp_path,
)
from lstm_data.batching.spec.augment import refuse_augment
from lstm_data.batching.epochs.batches import Batches
from lstm_data.batching.building.empty_rows import step_lengths
from lstm_data.batching.order.rows import DEFAULT_SEED, resolve_shuffle
from lstm_data.batching.epochs.legacy_options import legacy_options
from lstm_data.batching.epochs.prefetch import prefetch
from lstm_data.batching.epochs.source import BatchSource, ShardSource
from lstm_data.batching.order.options import Order
from lstm_data.batching.spec.batch_spec import BatchSpec
from lstm_data.data.dataset import Dataset
from lstm_data.errors import OptionError, redact
from lstm_data.io.read_options import ReadOptions
from lstm_data.io.ours.checked_store import settle_zarr
from lstm_data.io.ours.layout import EVERY_CHUNK_ATTR
from lstm_data.io.ours.manifest import MANIFEST_ATTR, write_manifest
from lstm_data.io.ours.ownership import describe_output
from lstm_data.store.describe import is_batch_store, shape_text
from lstm_data.store.format import (
    ATTR,
    STORE_FORMAT,
    STORE_VERSION,
    REQUIRES,
    compare_metadata,
    fingerprint,
    flat_outputs,
    output_key,
    output_keys,
)
from lstm_data.store.read import (
    PrecomputedBatches,
    open_batches,
    read_metadata,
    stored_node,
)
from lstm_data.store.shards import ELEMENTS
from lstm_data._util.plural import counted

_log = logging.getLogger("lstm_data")
__all__ = ["precompute", "open_batches", "PrecomputedBatches", "PrecomputeSummary"]

#: errors of a device that cannot take the store (named as the store's, not a chunk file's)
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS)
#: target uncompressed bytes per chunk of an output array
_CHUNK_BYTES = 1 << 21


@dataclass
class PrecomputeSummary:
    """What :func:`precompute` wrote (or found up to date)."""

    path: str
    n_batches: int
    n_rows: int
    seconds: float
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> {"dtype", "shape"}
    reused: bool = False

    @property
    def rows_per_second(self) -> float:
        return self.n_rows / self.seconds if self.seconds > 0 else float("inf")

    def table(self) -> str:
        """A plain-text table: outputs, shapes, dtypes, batches, rows/s."""
        head = f"{'output':<28} {'shape (B, ...)':<24} {'dtype':<8}"
        lines = [head, "-" * len(head)]
        for name, info in self.outputs.items():
            lines.append(f"{name:<28} {info['shape']:<24} {info['dtype']:<8}")
        lines.append("-" * len(head))
        state = "reused (up to date)" if self.reused else f"{self.rows_per_second:,.0f} rows/s"
        lines.append(f"{counted(self.n_batches, 'batch')}, {counted(self.n_rows, 'row')} -> {self.path}  [{state}]")
        return "\n".join(lines)


class _ChunkWriter:
    """Appends batches to a 1-D zarr array, writing whole chunks only (no read-modify-write)."""

    def __init__(self, array: zarr.Array[Any], chunk: int, grow: bool = False) -> None:
        self.array = array
        self.chunk = chunk
        self.grow = grow  # the total is not planned: the array grows as whole chunks are written
        self.pos = 0  # elements written to the array
        self.pending: list[np.ndarray] = []
        self.n_pending = 0

    def append(self, values: np.ndarray) -> None:
        flat = values.reshape(-1)
        self.pending.append(flat)
        self.n_pending += len(flat)
        if self.n_pending >= self.chunk:
            self._flush(final=False)

    def _flush(self, final: bool) -> None:
        if not self.n_pending:
            return
        buf = np.concatenate(self.pending) if len(self.pending) > 1 else self.pending[0]
        n = len(buf) if final else (len(buf) // self.chunk) * self.chunk
        if n:
            if self.grow:
                self.array.resize((self.pos + n,))
            self.array[self.pos:self.pos + n] = buf[:n]
            self.pos += n
        rest = buf[n:]
        self.pending = [rest] if len(rest) else []
        self.n_pending = len(rest)

    def close(self) -> None:
        self._flush(final=True)


def _batch_shapes(batches: Batches) -> dict[str, np.ndarray]:
    """Every output's shape in every batch, from row lengths alone (no values read)."""
    n = len(batches)
    sizes = np.array([len(batches.rows_of(i)) for i in range(n)], dtype=np.int64)
    shapes: dict[str, np.ndarray] = {}
    builder = batches.builder
    for f in batches.fields:
        if f.group is None:
            if getattr(f.field, "squeeze", False):  # a (B,) output of one variable
                shapes[f.name] = sizes.reshape(-1, 1)
            else:
                shapes[f.name] = np.column_stack([sizes, np.full(n, len(f.field.vars))])
            continue
        fld = f.ragged
        if fld.max_len is not None and fld.fixed:
            widths = np.full(n, fld.max_len)
        else:  # the builder's rule: the longest row (of any of its groups), rounded up by
            # pad_to_multiple_of, capped at max_len
            lens = step_lengths(fld, builder.field_lengths(f))
            widths = np.array([batches.padded_width(f, int(lens[batches.rows_of(i)].max())) if sizes[i] else 0
                               for i in range(n)])
        shapes.update(fld.form.output_shapes(f.name, fld, sizes, widths, _row_lengths(batches, f)))
    for t in batches.spec.target_names:
        shapes[t + "_weights"] = sizes.reshape(-1, 1)
    return shapes


def _row_lengths(batches: Batches, f: Any) -> Callable[[], list[np.ndarray]]:
    """Gives, per batch, the element counts of its rows in field ``f``'s group (as its batches count them)."""
    def per_batch() -> list[np.ndarray]:
        lens = step_lengths(f.ragged, batches.builder.row_lengths(f.group))
        return [lens[batches.rows_of(i)] for i in range(len(batches))]
    return per_batch


#: what must match for an existing store to be reused
_REUSE_KEYS = ("spec", "batch_size", "seed", "shuffle", "bucketing", "order", "fingerprint")
#: Order settings recorded under their own keys (the rest go under "order")
_OWN_KEYS = ("batch_size", "seed", "shuffle", "bucket_by", "bucket_window")


def _what_to_store(dataset: Dataset | Batches, spec: object, out: str | os.PathLike[str] | None,
                   order: Order | int | None) -> tuple[Dataset, BatchSpec, str | os.PathLike[str],
                                                       Order | int | None, np.ndarray | None]:
    """``precompute``'s arguments as ``(dataset, spec, out, order, rows)``, from either way of calling it."""
    if isinstance(dataset, Batches):
        if out is None and isinstance(spec, (str, os.PathLike)):
            out, spec = spec, None
        if spec is not None or order is not None:
            raise TypeError("precompute(batches, out): the batches carry their spec and order; give neither")
        if out is None:
            raise TypeError("precompute(batches, out): out (the store to write) is missing")
        dataset, spec, order, rows = dataset.made_from()
        return dataset, spec, out, order, rows
    if not isinstance(spec, BatchSpec):
        raise TypeError(f"precompute(dataset, spec, out): spec must be a BatchSpec, got {type(spec).__name__}")
    if out is None:
        raise TypeError("precompute(dataset, spec, out): out (the store to write) is missing")
    return dataset, spec, out, order, None


def _metadata(dataset: Dataset, spec: BatchSpec, order: Order,
              bucketing: dict[str, Any] | None) -> dict[str, Any]:
    rest = {k: v for k, v in order.to_dict().items() if k not in _OWN_KEYS and k not in Order.NOT_IN_BATCHES}
    return {"format": STORE_FORMAT, "version": STORE_VERSION, "requires": list(REQUIRES), "spec": spec.to_dict(),
            "batch_size": int(order.batch_size), "seed": int(order.seed or 0), "shuffle": order.shuffle,
            "bucketing": bucketing or {}, "order": rest, "fingerprint": fingerprint(dataset),
            "source": [redact(s) for s in getattr(dataset, "source", ())]}  # no credentials in the store


@refuses_renamed("precompute")
def precompute(dataset: Dataset | BatchSource, spec: BatchSpec | str | os.PathLike[str] | None = None,
               out: str | os.PathLike[str] | None = None, order: Order | int | None = None, *,
               threads: int = 1, overwrite: bool = False, progress: bool = True,
               compression: str | None = "zstd", client: DaskClient | None = None,
               **options: object) -> PrecomputeSummary:
    """Write every batch of epoch 0 to the zarr v3 store ``out``, atomically.

    Called as ``precompute(dataset, spec, out, order)``, or with the batches to store:
    ``precompute(source, out)``, where ``source`` is any batch source
    (:class:`~lstm_data.batching.epochs.source.BatchSource`): a
    :class:`~lstm_data.batching.epochs.batches.Batches` or one of its splits, folds or
    shards, stored batches (:func:`open_batches`, e.g. to store them again with other
    compression) or a source of your own. The store then holds exactly
    ``source.batch(i, epoch=0)`` for every ``i`` (the seed of ``Batches``, given or 0,
    included).

    Parameters
    ----------
    dataset, spec
        The rows and the batch format, as for
        :class:`~lstm_data.batching.epochs.batches.Batches`; or the batch source to store
        (then no ``spec`` and no ``order``).
    out
        The store to write. If it exists and records the same spec, order and data
        fingerprint (and the same rows of a split), it is reused as is. For a batch source
        other than ``Batches``, what must match is its spec, its length, its
        :meth:`~lstm_data.batching.epochs.source.BatchSource.identity`, its real elements
        per batch and, for a shard, its rank and world size; stored batches given as they
        were opened keep the record of their store.
    order
        The store holds the batches ``Batches(dataset, spec, order)`` builds in
        epoch 0 (``seed=None`` is seed 0 here; ``shuffle="auto"``: ``True`` in RAM,
        ``"block"`` on disk; the store records the choice made). With ``bucket_by``
        each stored batch keeps its own width, so the store shrinks with the padding.
    threads
        Threads building batches.
    overwrite
        Replace an existing batch store made with other settings or data. Anything
        else at ``out`` (a dataset, an unrelated directory) is never replaced.
    progress
        Show a tqdm progress bar (batches/s) when tqdm is installed.
    compression
        The chunks' compression: ``"zstd"`` (level 1, default) or ``None`` for raw
        chunks (checksummed either way).
    client
        A Dask ``distributed.Client``: build and write disjoint runs of batches on its
        workers (extra ``dask``; see :mod:`lstm_data.store.ranges`). The store is bitwise
        the one written without it. ``threads`` is then unused. Only for a dataset or a
        ``Batches``, whose batch shapes are planned before any is built.
    **options
        The keyword spellings of earlier releases (``batch_size=``, ``seed=``,
        ``shuffle=``, ``bucket_by=``, ``pad_to_multiple_of=``, ...), with a
        ``DeprecationWarning`` naming the new spelling of each.

    Returns
    -------
    PrecomputeSummary
        What was done: its path, the batches and rows written (or found up to date: ``reused``), the
        seconds taken and each output's dtype and shape.

    Raises
    ------
    StoreMismatchError
        ``out`` exists with other settings or data and ``overwrite`` is off.
    FileExistsError
        ``out`` exists and is not a precomputed batch store.
    ValueError
        ``out`` is, holds or lies inside one of the dataset's source files.
    OptionError
        The spec declares ``augment`` or the order ``sample``: noise and draws differ per
        epoch, a store holds one. ``client`` with a batch source other than ``Batches``.
    """
    if compression not in ("zstd", None):
        raise OptionError(f"precompute: compression must be 'zstd' or None, got {compression!r}")
    started = time.perf_counter()
    if isinstance(dataset, (Dataset, Batches)):
        data, spec, out, order, rows = _what_to_store(dataset, spec, out, order)
        job = _batches_job(data, spec, out, order, rows, options)
    elif isinstance(dataset, BatchSource):
        if out is None and isinstance(spec, (str, os.PathLike)):
            out, spec = spec, None
        if spec is not None or order is not None or options:
            raise TypeError("precompute(source, out): a batch source carries its spec and order; give neither")
        if out is None:
            raise TypeError("precompute(source, out): out (the store to write) is missing")
        if client is not None:
            raise OptionError(f"precompute: client= builds the batches of a dataset or a Batches on Dask workers; "
                              f"a {type(dataset).__name__} is written in this process (give threads=)")
        job = _source_job(dataset)
    else:
        raise TypeError(f"precompute: expected a Dataset or a batch source (Batches, stored batches, a shard, "
                        f"a BatchSource of your own), got {type(dataset).__name__}")
    if out is None:  # not reached: each way of calling checks it
        raise TypeError("precompute: out (the store to write) is missing")
    return _write(job, Path(out), threads=int(threads), force=bool(overwrite), progress=progress,
                  compression=compression, client=client, started=started)


@dataclass
class _Job:
    """What one precompute writes: the batches, their record, and their shapes when planned."""

    source: BatchSource
    meta: dict[str, Any]
    #: every output's shape in every batch, or None: learnt as the batches are written
    shapes: dict[str, np.ndarray] | None
    #: the record's keys an existing store must match to be reused
    reuse: tuple[str, ...] = _REUSE_KEYS
    #: the files the batches are read from (never overwritten)
    inputs: tuple[object, ...] = ()
    n_rows: int | None = None


def _batches_job(dataset: Dataset, spec: BatchSpec, out: str | os.PathLike[str], order: Order | int | None,
                 rows: np.ndarray | None, options: dict[str, object]) -> _Job:
    """The job of ``precompute(dataset, spec, out, order)`` (``rows``: those of a split)."""
    spec, order = legacy_options(spec, order, None, dict(options), "precompute")
    refuse_augment(spec, "precompute")  # a store holds one epoch: its noise would repeat
    if order.sample is not None:  # nor would its draws change
        raise OptionError("precompute: the order has sample (rows drawn anew every epoch), but a precomputed "
                          "store holds the batches of one epoch: its draws would repeat each epoch. Precompute "
                          "without sample (weights= reweights without drawing), or train on Batches with it")
    order = order.replace(seed=DEFAULT_SEED if order.seed is None else order.seed,
                          shuffle=resolve_shuffle(order.shuffle, dataset.in_ram))
    check_not_input(Path(out), getattr(dataset, "source", ()))
    batches = Batches(dataset, spec, order, rows=rows)
    bucketing = None if order.bucket_by is None else {
        "bucket_by": order.bucket_by, "bucket_window": order.bucket_window,
        "pad_to_multiple_of": spec.pad_to_multiple_of}
    meta = _metadata(dataset, spec, order, bucketing)
    if rows is not None:  # a split's rows are part of what the store holds
        meta["fingerprint"] += "/rows:" + hashlib.sha256(np.ascontiguousarray(rows, np.int64).tobytes()).hexdigest()
    if bucketing is not None:
        meta["batch_spec"] = batches.spec.to_dict()
    return _Job(batches, meta, None, n_rows=batches.n_rows)


def _source_job(source: BatchSource) -> _Job:
    """The job of ``precompute(source, out)`` for a batch source other than ``Batches``."""
    refuse_augment(source.spec, "precompute")
    head = {"format": STORE_FORMAT, "version": STORE_VERSION, "requires": list(REQUIRES)}
    if type(source) is PrecomputedBatches:  # epoch 0 is the stored order: the same batches, the same record
        kept = {k: source.meta[k] for k in (*_REUSE_KEYS, "batch_spec", "source") if k in source.meta}
        return _Job(source, {**head, **kept}, None, n_rows=source.n_rows)
    identity = source.identity()
    seed = identity.get("seed")
    what: dict[str, object] = {"kind": f"{type(source).__module__}.{type(source).__qualname__}",
                               "identity": identity, "n_batches": len(source),
                               "elements": source.batch_elements(0).tolist()}
    if isinstance(source, ShardSource):
        what.update(rank=source.rank, world_size=source.world_size)
    digest = hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()
    meta = {**head, "spec": source.spec.to_dict(), "seed": seed if isinstance(seed, int) else 0,
            "shuffle": None, "bucketing": {}, "order": {}, "fingerprint": "source:" + digest, "source": []}
    return _Job(source, meta, None, reuse=("spec", "fingerprint"))


def _write(job: _Job, out: Path, *, threads: int, force: bool, progress: bool, compression: str | None,
           client: DaskClient | None, started: float) -> PrecomputeSummary:
    """Write ``job`` to ``out`` (or reuse the store there), under the output's lock."""
    import zarr

    meta, source = job.meta, job.source
    with output_lock(out):  # a second writer of the same store fails here, at once
        remove_stale_temporaries(out)  # of precomputes that were killed (a reused store too)
        if out.exists():
            try:
                recorded = read_metadata(out)
                # every array's metadata and the index: damage shows here (a store without a
                # manifest is reused as it is: its reader warns)
                PrecomputedBatches(out, read=ReadOptions(trust_unchecked=True))
            except Exception as exc:  # noqa: BLE001 - not a batch store: never replaced, even with force
                if not (force and is_batch_store(out)):  # force may replace an old or damaged store
                    raise FileExistsError(_not_reusable(out, exc, force)) from None
                recorded = None
            if recorded is not None and not force:
                compare_metadata({"bucketing": {}, "order": {}, **recorded}, {k: meta[k] for k in job.reuse},
                                 where=str(out), writing=True)
                _log.info("precompute: %s already holds these batches (same spec, batch size, seed, "
                          "shuffle and data fingerprint): reused", out)
                return _summary_of(out, time.perf_counter() - started, reused=True)

        replacing = out.exists()  # a batch store, recomputed with overwrite
        spec = BatchSpec.from_dict(meta["spec"])
        names = spec.flat_names(weights=True)
        keys = output_keys(names)  # an output named like a path gets a plain node key
        planned = _batch_shapes(source) if isinstance(source, Batches) else None
        sig = spec.signature()
        dtypes = {n: (sig[n].dtype if n in sig else np.dtype(np.float32)) for n in names}
        tmp = temp_path(out)
        try:
            root = zarr.open_group(str(tmp), mode="w", zarr_format=3)
            data, index = root.create_group("data"), root.create_group("_index")
            writers, element_offsets, chunks = {}, {}, {}
            for n in names:
                chunk = max(1, _CHUNK_BYTES // dtypes[n].itemsize)
                total = 0
                if planned is not None:
                    element_offsets[n] = _offsets(planned[n])
                    total = int(element_offsets[n][-1])
                arr = data.create_array(keys[n], shape=(total,), chunks=(chunk,), dtype=dtypes[n],
                                        **_codecs(compression))
                if planned is not None:
                    _write_index(index, keys[n], element_offsets[n], planned[n])
                writers[n] = _ChunkWriter(arr, chunk, grow=planned is None)
                chunks[n] = chunk
            # each batch's real elements, which shards of the store balance (see store/shards.py)
            index.create_array(ELEMENTS, data=source.batch_elements(0), **_codecs("zstd"))
            bar = _progress(len(source), progress)
            try:
                if client is not None and isinstance(source, Batches) and planned is not None:
                    from lstm_data.store.ranges import write_ranges
                    write_ranges(client, source, str(tmp), names, element_offsets, chunks, keys=keys,
                                 on_done=None if bar is None else bar.update)
                    shapes = planned
                else:
                    shapes = _write_in_order(source, names, planned, writers, threads, bar)
            finally:
                if bar is not None:
                    bar.close()
            if planned is None:  # the index of what was written
                for n in names:
                    _write_index(index, keys[n], _offsets(shapes[n]), shapes[n])
            n_rows = job.n_rows if job.n_rows is not None else _rows_written(spec, shapes, names)
            meta = {**meta, "n_batches": len(source), "n_rows": n_rows, "outputs": names, "keys": keys}
            meta.setdefault("batch_size", _largest_batch(spec, shapes, names))
            # written last: a half-written store is never taken as complete; then the manifest
            root.attrs.update({EVERY_CHUNK_ATTR: True, MANIFEST_ATTR: True, ATTR: meta})
            write_manifest(tmp)
            move_into_place(tmp, out, replace=replacing)
        except OSError as exc:
            if exc.errno in _NO_SPACE and exc.filename != str(out):
                raise OSError(exc.errno, f"cannot write {out}: {exc.strerror or exc}", str(out)) from exc
            raise
        finally:
            settle_zarr()  # zarr's sibling writes of a failed one may still run
            remove_path(tmp)
        return _summary_of(out, time.perf_counter() - started)


def _offsets(shapes: np.ndarray) -> np.ndarray:
    """Where each batch's elements start in an output's array (one more than batches)."""
    counts = np.prod(shapes, axis=1) if len(shapes) else np.zeros(0, dtype=np.int64)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


def _write_index(index: zarr.Group, key: str, offsets: np.ndarray, shapes: np.ndarray) -> None:
    """Record an output's per-batch offsets and shapes in the store's ``_index``."""
    index.create_array(f"{key}.offsets", data=offsets, **_codecs("zstd"))
    index.create_array(f"{key}.shapes", data=shapes.astype(np.int64), **_codecs("zstd"))


def _rows_of(spec: BatchSpec, shapes: Mapping[str, np.ndarray], names: list[str]) -> np.ndarray:
    """The rows of each written batch: the length of a target's weights (one per row), else of the
    first output's first axis."""
    weights = [t + "_weights" for t in spec.target_names if t + "_weights" in shapes]
    first = shapes[weights[0] if weights else names[0]]
    rows: np.ndarray = first[:, 0] if len(first) else np.zeros(0, dtype=np.int64)
    return rows


def _rows_written(spec: BatchSpec, shapes: Mapping[str, np.ndarray], names: list[str]) -> int:
    return int(_rows_of(spec, shapes, names).sum())


def _largest_batch(spec: BatchSpec, shapes: Mapping[str, np.ndarray], names: list[str]) -> int:
    rows = _rows_of(spec, shapes, names)
    return int(rows.max()) if len(rows) else 0


def _write_in_order(source: BatchSource, names: list[str], planned: dict[str, np.ndarray] | None,
                    writers: dict[str, _ChunkWriter], threads: int, bar: _Bar | None) -> dict[str, np.ndarray]:
    """Build the batches of epoch 0 on ``threads`` threads and append them in order, whole chunks at a
    time; return every output's shape in every batch (checked against ``planned`` when given)."""
    seen: dict[str, list[tuple[int, ...]]] = {n: [] for n in names}
    for i, batch in enumerate(prefetch(lambda i: source.batch(i, 0), len(source), threads)):
        flat = flat_outputs(source.spec, batch)
        for n in names:
            if n not in flat:
                raise RuntimeError(f"batch {i} has no output {n!r}, which its spec names")
            values = flat[n]
            if planned is not None and values.shape != tuple(planned[n][i]):
                raise RuntimeError(f"batch {i} output {n!r} has shape {values.shape}, "
                                   f"planned {tuple(planned[n][i])}")
            if seen[n] and len(values.shape) != len(seen[n][0]):
                raise RuntimeError(f"batch {i} output {n!r} has shape {values.shape}, batch 0 had "
                                   f"{seen[n][0]}: a store keeps one number of axes per output")
            seen[n].append(values.shape)
            writers[n].append(values)
        if bar is not None:
            bar.update(1)
    for w in writers.values():
        w.close()
    if planned is not None:
        return planned
    sig = source.spec.signature()
    ndims = {n: len(seen[n][0]) if seen[n] else len(sig[n].shape) if n in sig else 2 for n in names}
    return {n: np.array(seen[n], dtype=np.int64).reshape(len(seen[n]), ndims[n]) for n in names}


def _not_reusable(out: Path, exc: Exception, overwrite: bool) -> str:
    """Why an existing ``out`` that does not open as a batch store is neither reused nor replaced."""
    if is_batch_store(out):  # damaged, and no overwrite
        return (f"{out} already exists: it is a damaged batch store ({exc}). --overwrite (overwrite=True) "
                "recomputes it; or choose another output")
    what = describe_output(out)
    return (f"{out} already exists and is not a precomputed batch store: it is {what}, which lstm_data "
            f"never replaces{' (--overwrite replaces only a batch store)' if overwrite else ', not even with --overwrite'}"
            ": remove it yourself or choose another output")


def _codecs(compression: str | None) -> dict[str, Any]:
    """Options of every array of a store: zstd (level 1) unless ``compression`` is ``None``, then a
    CRC-32C checksum; every chunk written (a missing chunk is then damage, see
    :mod:`lstm_data.io.ours.checked_store`)."""
    from zarr.codecs import Crc32cCodec, ZstdCodec

    chain = (ZstdCodec(level=1), Crc32cCodec()) if compression == "zstd" else (Crc32cCodec(),)
    return {"compressors": chain, "config": {"write_empty_chunks": True}}


class _Bar(Protocol):
    """What precompute uses of a ``tqdm`` bar (tqdm ships no type information)."""

    def update(self, n: int = 1) -> bool | None: ...

    def close(self) -> None: ...


def _progress(total: int, enabled: bool) -> _Bar | None:
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    bar: _Bar = tqdm(total=total, unit="batch", desc="precompute", dynamic_ncols=True)
    return bar


def _summary_of(path: Path, seconds: float, *, reused: bool = False) -> PrecomputeSummary:
    from lstm_data.io.ours.checked_store import open_checked

    meta = read_metadata(path)
    index = stored_node(open_checked(str(path), str(path))[0], "_index", zarr.Group, str(path))
    spec = BatchSpec.from_dict(meta["spec"])
    sig = spec.signature()
    outputs = {}
    for n in meta["outputs"]:
        dtype = str(sig[n].dtype) if n in sig else "float32"
        shapes = stored_node(index, f"{output_key(meta, n, file=str(path))}.shapes", zarr.Array, str(path))
        outputs[n] = {"dtype": dtype, "shape": shape_text(np.asarray(shapes[:]))}
    return PrecomputeSummary(str(path), int(meta["n_batches"]), int(meta["n_rows"]), seconds, outputs,
                             reused)
