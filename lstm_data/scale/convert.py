"""``convert`` on a Dask cluster: the same output, bitwise, with the parsing and compression spread.

Two rounds of tasks, with the links computed in between on the client:

1. *parse*: one task per partition, which is one input file, or a row-aligned
   byte range of a large plain CSV (:func:`lstm_data.io.csv.ranges.csv_partitions`).
   Each parses its partition, block by block, into a *part*: a temporary zarr
   store in our layout (uncompressed) in a folder next to the output, and
   returns its row count, prong totals and columns;
2. *link*: the client checks that every part has the columns of the first and
   computes each part's first row and first prong record (prefix sums over the
   parts' totals), then creates the output with its final array lengths
   (:class:`~lstm_data.io.ours.write.ZarrOutput`: the arrays, chunks and codecs the
   one-process writer makes);
3. *write*: one task per part writes its rows into the output, offsets shifted
   by its first prong record, every chunk that lies wholly in its rows once and
   whole; the chunks two parts share are written by the client from the parts'
   pieces (:mod:`lstm_data.io.ours.chunk_ranges`). The layout attribute is written
   last, the store renamed into place, the parts removed.

So the output is bitwise the one of :func:`lstm_data.io.ours.convert.convert_streaming`
(values, offsets, scalars, chunk files, attributes). A task that fails (a bad row
in file 7) fails the convert with that task's error, the first in input order,
naming file, line and column; no output is left. A worker that dies is replaced
by Dask and its task run again, writing the same bytes. HDF5 outputs, and
shuffled ones (``shuffle_seed=SEED``), are written by the client from the parts (HDF5
has no parallel writer; the external shuffle reads every part), so only the
parsing is spread.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from lstm_data._util.dask import DaskClient, as_completed, wait
from lstm_data._util.deprecation import refuses_renamed
from lstm_data._util.exclusive import output_lock
from lstm_data._util.types import Forwarded
from lstm_data._util.safe_output import remove_path, remove_stale_temporaries, temp_path
from lstm_data.io.ours.checked_store import settle_zarr
from lstm_data.io.ours.chunk_ranges import Piece, RangeWriter, write_shared_chunks
from lstm_data.io.ours.convert import check_like, concat_blocks, open_blocks, output_and_inputs, shuffled, write_output
from lstm_data.io.dispatch import detect_format, input_bytes, split_member
from lstm_data.io.ours.ownership import check_target, put_in_place
from lstm_data.io.ours.row_blocks import RestartStream, RowBlocks, dataset_blocks
from lstm_data.io.ours.write import ZarrOutput, write_zarr

__all__ = ["convert_distributed", "Partition", "plan_partitions"]

_log = logging.getLogger("lstm_data")
#: plain CSV files larger than this are split into byte ranges of about this size
SPLIT_BYTES = 256 << 20


@dataclass(frozen=True)
class Partition:
    """What one parse task reads: a whole file, or bytes ``start .. end`` of a plain CSV."""

    index: int
    path: str
    start: int | None = None
    end: int | None = None

    @property
    def name(self) -> str:
        return self.path if self.start is None else f"{self.path}[{self.start}:{self.end}]"

    @property
    def byte_range(self) -> tuple[int, int] | None:
        """``(start, end)`` of a CSV range; ``None`` for a whole file."""
        return None if self.start is None or self.end is None else (self.start, self.end)


@dataclass
class PartInfo:
    """What a parse task made: its part store, row count, prong totals and columns."""

    partition: Partition
    path: str
    n_rows: int
    totals: dict[str, int]
    columns: RowBlocks


def plan_partitions(paths: Sequence[str], split_bytes: int = SPLIT_BYTES) -> list[Partition]:
    """One partition per file; plain CSV files above ``split_bytes`` in row-aligned byte ranges."""
    from lstm_data.io.csv.ranges import csv_partitions

    out: list[Partition] = []
    for path in paths:
        is_csv = split_member(path)[1] is None and detect_format(path) == "csv"
        ranges = csv_partitions(path, split_bytes) if is_csv else None
        if ranges is None:
            out.append(Partition(len(out), path))
        else:
            out += [Partition(len(out) + i, path, a, b) for i, (a, b) in enumerate(ranges)]
    return out


def _parse(partition: Partition, part: str, schema: Any, options: dict[str, Any]) -> PartInfo:
    """Task: parse ``partition`` into the part store ``part``."""
    span = partition.byte_range
    if span is None:
        table = open_blocks(partition.path, schema=schema, **options)
    else:
        from lstm_data.io.csv.ranges import csv_range_blocks

        table = csv_range_blocks(partition.path, span[0], span[1], schema=schema, **options)
    try:
        write_zarr(table, part, overwrite=True, clevel=0, checksum=False)
    except RestartStream:
        if partition.start is None:  # pragma: no cover - a whole-file stream restarts itself
            raise
        raise RestartStream(f"{partition.name}: the plan from the file's first MiB does not fit") from None
    from lstm_data.io.ours.zarr import ZarrDataset

    done = ZarrDataset(part)
    totals = {g: int(done.offsets(g)[-1]) for g in done.groups}
    columns = RowBlocks(table.scalar_dtypes, table.groups, table.group_dtypes, lambda: iter(()), 0)
    return PartInfo(partition, part, len(done), totals, columns)


def _write(part: str, out: str, keys: dict[tuple[str, str], str], chunks: dict[tuple[str, str], int],
           first_row: int, first_values: dict[str, int], dtypes: dict[tuple[str, str], str],
           block_rows: int = 1 << 16) -> dict[tuple[str, str], list[Piece]]:
    """Task: write the rows of ``part`` into the output ``out`` from row ``first_row`` on."""
    import zarr

    from lstm_data.io.ours.zarr import ZarrDataset

    data = ZarrDataset(part)
    root = zarr.open_group(out, mode="r+", zarr_format=3)
    n = len(data)
    writers: dict[tuple[str, str], RangeWriter] = {}
    stops: dict[tuple[str, str], int] = {}
    for (kind, name), key in keys.items():
        if kind == "s":
            lo, hi = first_row, first_row + n
        elif kind == "o":  # entry i + 1 ends row i (the client writes the leading 0)
            lo, hi = first_row + 1, first_row + n + 1
        else:
            lo, hi = first_values[name], first_values[name] + int(data.offsets(name)[-1])
        writers[(kind, name)] = RangeWriter(root[key], lo, hi, chunks[(kind, name)])
        stops[(kind, name)] = hi
    for a in range(0, n, block_rows):
        block = data.take(np.arange(a, min(n, a + block_rows)))
        for (kind, name), w in writers.items():
            if kind == "s":
                w.append(np.asarray(block.scalar(name), dtype=dtypes[(kind, name)]))
                continue
            values, offsets = block.ragged(name)
            if kind == "o":
                w.append(offsets[1:] + (first_values[name] + int(data.offsets(name)[a])))
            else:
                w.append(np.asarray(values, dtype=dtypes[(kind, name)]))
    return {k: w.close(stops[k]) for k, w in writers.items()}


def _run_tasks(client: Any, jobs: list[tuple[Callable[..., Any], tuple[Any, ...], str]],
               on_done: Callable[[int], None] | None = None) -> list[Any]:
    """Run ``jobs`` (function, args, key) on ``client``; each job's result or exception, in job order.

    Every task runs to its end (or error), so the caller can report the first
    failure in input order, not the first a worker met.
    """
    futures = [client.submit(fn, *args, key=key, pure=False) for fn, args, key in jobs]
    index = {f.key: i for i, f in enumerate(futures)}
    for future in as_completed(futures):
        if future.status == "finished" and on_done is not None:
            on_done(index[future.key])
    wait(futures)
    return [f.result() if f.status == "finished" else f.exception() for f in futures]


def _first_error(results: list[Any], partitions: list[Partition]) -> BaseException | None:
    """The first failed partition's error in input order, located in its file (not its range)."""
    from lstm_data.io.csv.ranges import fix_location

    for i, got in enumerate(results):
        if isinstance(got, BaseException):
            part = partitions[i]
            if part.start is None:
                return got
            rows_before = sum(r.n_rows for r, q in zip(results[:i], partitions[:i])
                              if q.path == part.path and isinstance(r, PartInfo))
            return fix_location(got, part.path, part.start, rows_before)
    return None


@refuses_renamed("convert_distributed")
def convert_distributed(sources: Sequence[str], dst: str | os.PathLike[str], *, client: Any,
                        schema: Any = None, shuffle_seed: int | None = None, overwrite: bool = False,
                        progress: Callable[[int, int], None] | None = None, chunk_bytes: int | None = None,
                        compression: str | None = "gzip", split_bytes: int = SPLIT_BYTES,
                        bucket_bytes: int | None = None, **options: Any) -> RowBlocks:
    """Convert ``sources`` into ``dst`` on the workers of the Dask ``client`` (see the module notes).

    Parameters are those of :func:`lstm_data.io.ours.convert.convert_streaming`, plus
    ``client`` (a ``distributed.Client``; its workers must see the inputs and the
    output's folder) and ``split_bytes`` (plain CSV files above it are split into
    byte ranges of about that size).

    Raises
    ------
    ParseError, SchemaError, FormatError
        The first failing partition's error in input order (file, line, column).
    FileExistsError
        ``dst`` exists and ``overwrite`` is off.
    """
    kind, paths = output_and_inputs(sources, dst)
    target = Path(dst)
    with output_lock(target):  # a second writer of the same output fails here, at once
        check_target(target, overwrite)
        return _convert_locked(paths, target, kind, client=client, schema=schema,
                               shuffle_seed=shuffle_seed, overwrite=overwrite, progress=progress,
                               chunk_bytes=chunk_bytes, compression=compression,
                               split_bytes=split_bytes, bucket_bytes=bucket_bytes, **options)


def _convert_locked(paths: list[str], target: Path, kind: str, *, client: Any,
                    schema: Any, shuffle_seed: int | None, overwrite: bool,
                    progress: Callable[[int, int], None] | None, chunk_bytes: int | None,
                    compression: str | None, split_bytes: int, bucket_bytes: int | None,
                    **options: Any) -> RowBlocks:
    """:func:`convert_distributed` once the output is locked and checked."""
    remove_stale_temporaries(target)
    partitions = plan_partitions(paths, split_bytes)
    parts_dir = temp_path(target, "parts")
    parts_dir.mkdir(parents=True)
    total = sum(input_bytes(p) for p in paths)
    try:
        tag = parts_dir.name
        jobs = [(_parse, (p, str(parts_dir / f"part-{p.index:06d}.zarr"), schema, options), f"{tag}-parse-{p.index}")
                for p in partitions]
        _log.info("convert: %d partitions of %d inputs on %d Dask workers", len(jobs), len(paths),
                  len(client.scheduler_info().get("workers", {})))
        sizes = [input_bytes(p.path) if span is None else span[1] - span[0]
                 for p, span in ((p, p.byte_range) for p in partitions)]
        done = [0]

        def parsed(i: int) -> None:
            done[0] += sizes[i]
            if progress is not None:
                progress(done[0] // 2, total)

        results = _run_tasks(client, jobs, parsed)
        if any(isinstance(r, RestartStream) for r in results):  # a late row changes a file's plan
            _log.info("convert: a CSV file's plan changes after its first MiB: parsing each file whole")
            partitions = plan_partitions(paths, 0)
            jobs = [(_parse, (p, str(parts_dir / f"whole-{p.index:06d}.zarr"), schema, options),
                     f"{tag}-whole-{p.index}") for p in partitions]
            results = _run_tasks(client, jobs)
        error = _first_error(results, partitions)
        if error is not None:
            raise error
        infos: list[PartInfo] = results
        columns = infos[0].columns  # the first input sets the columns and dtypes, as in one process
        for info in infos[1:]:
            check_like(info.columns, columns, info.partition.path, infos[0].partition.path)
        if shuffle_seed is not None or kind == "hdf5":
            table = _from_parts(infos, columns, paths, schema, options, shuffle_seed, target, bucket_bytes)
            write_output(table, target, kind, overwrite=overwrite, compression=compression, chunk_bytes=chunk_bytes)
        else:
            _link(client, infos, columns, target, overwrite, chunk_bytes, tag)
        if progress is not None:
            progress(total, total)
        return columns
    finally:
        remove_path(parts_dir)


def _from_parts(infos: list[PartInfo], columns: RowBlocks, paths: list[str], schema: Any,
                options: dict[str, Any], shuffle_seed: int | None, target: Path,
                bucket_bytes: int | None) -> RowBlocks:
    """The parts as one table, shuffled as the one-process convert shuffles the inputs."""
    from lstm_data.io.ours.zarr import ZarrDataset

    tables = [dataset_blocks(ZarrDataset(i.path)) for i in infos]
    table = concat_blocks(tables, [i.partition.path for i in infos])
    table = RowBlocks(columns.scalar_dtypes, columns.groups, columns.group_dtypes, table.blocks,
                      table.total, tuple(paths), sum(i.n_rows for i in infos), table.group_totals)
    if shuffle_seed is None:
        return table
    return shuffled(table, shuffle_seed, paths, target, bucket_bytes=bucket_bytes, schema=schema, **options)


def _link(client: Any, infos: list[PartInfo], columns: RowBlocks, target: Path, overwrite: bool,
          chunk_bytes: int | None, tag: str) -> None:
    """Create the output at its final size, have every part write its rows, write the shared chunks."""
    n_rows = sum(i.n_rows for i in infos)
    totals = {g: sum(i.totals[g] for i in infos) for g in columns.groups}
    tmp = temp_path(target)
    try:
        extra: dict[str, Any] = {} if chunk_bytes is None else {"chunk_bytes": chunk_bytes}
        out = ZarrOutput(tmp, columns, n_rows, totals, **extra)
        keys, chunks = out.arrays.keys, out.arrays.chunks
        dtypes = {("s", s): str(dt) for s, dt in columns.scalar_dtypes.items()}
        dtypes.update({("g", g): str(dt) for g, dt in columns.group_dtypes.items()})
        jobs, first_row, first_values = [], 0, dict.fromkeys(columns.groups, 0)
        for info in infos:
            if info.n_rows:
                jobs.append((_write, (info.path, str(tmp), keys, chunks, first_row, dict(first_values), dtypes),
                             f"{tag}-write-{info.partition.index}"))
            first_row += info.n_rows
            for g in columns.groups:
                first_values[g] += info.totals[g]
        pieces: dict[tuple[str, str], list[Piece]] = {k: [] for k in keys}
        for g in columns.groups:  # the leading 0 of every offsets array
            pieces[("o", g)].append((0, np.zeros(1, dtype=np.int64)))
        for got in _run_tasks(client, jobs):
            for k, p in got.items():
                pieces[k] += p
        for k, p in pieces.items():
            write_shared_chunks(out.arrays.arrays[k], chunks[k], p)
        out.finish()
        put_in_place(tmp, target, overwrite)
    except BaseException:
        settle_zarr()
        remove_path(tmp)
        raise


@refuses_renamed("convert")
def convert(sources: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], dst: str | os.PathLike[str], *,
            client: DaskClient | None = None, **options: Forwarded) -> RowBlocks:
    """Convert inputs (paths, globs) to our zarr or HDF5 layout: streaming, or on Dask with ``client``.

    ``lstm_data.convert(["a.csv.xz", "b.h5"], "all.zarr", shuffle_seed=1)`` streams in one
    process (bounded memory, :func:`lstm_data.io.ours.convert.convert_streaming`);
    ``client=distributed.Client(...)`` spreads the work and gives the same bytes
    (:func:`convert_distributed`).

    Parameters
    ----------
    sources
        Input files: a path, a glob, or a list of them (any format ``lstm_data.open`` reads).
    dst
        The output: ``.zarr`` (a directory) or ``.h5``/``.hdf5``; written under a
        temporary name and renamed when complete.
    client
        A Dask ``distributed.Client`` (extra ``dask``), or ``None`` to stream here.
    **options
        Those of :func:`lstm_data.io.ours.convert.convert_streaming` (without ``client``)
        or of :func:`convert_distributed` (with it): ``shuffle_seed`` (the seed of a row
        shuffle), schema, dtype, chunking and compression; an option the chosen path
        does not take is an error naming it.

    Returns
    -------
    RowBlocks
        The row blocks written, in output order.
    """
    from lstm_data.io.ours.convert import convert_streaming
    from lstm_data.io.dispatch import expand_paths

    paths = expand_paths(sources)
    if client is None:
        return convert_streaming(paths, dst, **options)
    return convert_distributed(paths, dst, client=client, **options)
