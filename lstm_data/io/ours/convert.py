"""``convert``: any inputs to our zarr or HDF5 layout, streaming, in bounded memory.

Inputs are read as blocks of rows (:class:`~lstm_data.io.ours.row_blocks.RowBlocks`):
CSV text is parsed as it is read (:func:`lstm_data.io.csv.stream.csv_blocks`),
other formats are read a block of rows at a time. Blocks are written as they
come (offsets shifted by the running total) and dropped, so peak memory does
not grow with the input. ``shuffle_seed=SEED`` goes through the external shuffle
(:mod:`lstm_data.io.ours.external_shuffle`). The output is written under a
temporary name and renamed when complete.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from lstm_data._util.deprecation import refuses_renamed
from lstm_data._util.safe_output import check_not_input, temp_path
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.errors import SchemaError
from lstm_data.io.dispatch import input_bytes
from lstm_data.io.ours.row_blocks import BLOCK_BYTES, RowBlocks, dataset_blocks, row_bytes_of
from lstm_data.io.ours.write import Progress, write_hdf5, write_zarr

__all__ = ["convert_streaming", "open_blocks", "output_kind", "output_and_inputs", "concat_blocks", "check_like",
           "table_total", "shuffled", "write_output"]

_ZARR_SUFFIXES = (".zarr",)
_HDF5_SUFFIXES = (".h5", ".hdf5", ".hdf")


def output_kind(dst: str | os.PathLike[str]) -> str:
    """``"zarr"`` or ``"hdf5"`` from the output's suffix.

    Raises
    ------
    ValueError
        Another suffix.
    """
    low = os.fspath(dst).rstrip("/").lower()
    if low.endswith(_ZARR_SUFFIXES):
        return "zarr"
    if low.endswith(_HDF5_SUFFIXES):
        return "hdf5"
    raise ValueError(f"output {os.fspath(dst)!r} must end in .zarr, .h5 or .hdf5")


def output_and_inputs(sources: Sequence[str | os.PathLike[str]],
                      dst: str | os.PathLike[str]) -> tuple[str, list[str]]:
    """The output's kind (:func:`output_kind`) and the input paths, checked: none of them is the output.

    Raises
    ------
    ValueError
        ``dst`` has neither layout's suffix, or is (holds, lies inside) an input.
    """
    kind = output_kind(dst)
    paths = [os.fspath(s) for s in sources]
    check_not_input(Path(dst), paths)
    return kind, paths


def open_blocks(path: str, *, schema: Any = None, block_bytes: int = BLOCK_BYTES, threads: int | None = None,
                **options: Any) -> RowBlocks:
    """One input as blocks of rows: CSV parsed as it is read (on ``threads``), other formats read a
    block at a time."""
    from lstm_data.io.dispatch import detect_format
    from lstm_data.io.dispatch import open as open_dataset

    if detect_format(path) == "csv":
        from lstm_data.io.csv.stream import csv_blocks

        return csv_blocks(path, schema=schema, block_bytes=block_bytes, threads=threads, **options)
    return dataset_blocks(open_dataset(path, schema=schema, **options), block_bytes=block_bytes)


#: parsed bytes per byte of CSV text, plain and compressed (an estimate: it sets the shuffle's buckets)
_TEXT_RATIO, _COMPRESSED_RATIO = 0.6, 5.0


def table_total(path: str, *, schema: Any = None, threads: int | None = None, **options: Any) -> int:
    """The uncompressed bytes of ``path``'s table: exact for stores, estimated for CSV text.

    It sets the number of buckets of a shuffled convert, so that the one-process
    and the distributed convert of the same inputs make the same order.
    """
    from lstm_data.io.plumbing.byte_blocks import compression_of
    from lstm_data.io.dispatch import detect_format
    from lstm_data.io.dispatch import open as open_dataset

    if detect_format(path) == "csv":
        ratio = _TEXT_RATIO if compression_of(path) is None else _COMPRESSED_RATIO
        return int(os.path.getsize(path) * ratio)
    dataset = open_dataset(path, schema=schema, **options)
    return int(row_bytes_of(dataset) * len(dataset))


def shuffled(table: RowBlocks, seed: int, paths: Sequence[str], dst: str | os.PathLike[str], *,
             bucket_bytes: int | None = None, schema: Any = None, **options: Any) -> RowBlocks:
    """``table``'s rows in the order of the external shuffle with ``seed``, its buckets beside ``dst``.

    The one-process and the distributed convert both shuffle here: the number of
    buckets follows the inputs ``paths`` (:func:`table_total`, read with ``schema``
    and ``options``), so the same inputs give the same order.
    """
    from lstm_data.io.ours.external_shuffle import BUCKET_BYTES, external_shuffle, n_buckets_for

    table_bytes = sum(table_total(p, schema=schema, **options) for p in paths)
    return external_shuffle(table, int(seed), temp_path(Path(dst), "shuffle"),
                            n_buckets=n_buckets_for(table_bytes, bucket_bytes or BUCKET_BYTES))


def write_output(table: RowBlocks, dst: str | os.PathLike[str], kind: str, *, overwrite: bool,
                 compression: str | None, chunk_bytes: int | None, progress: Progress | None = None) -> None:
    """Write ``table`` to ``dst`` in our ``kind`` layout (``"zarr"`` or ``"hdf5"``, see :func:`output_kind`).

    ``compression`` is the HDF5 filter; ``chunk_bytes=None`` the writers' default chunks.
    """
    extra: dict[str, Any] = {} if chunk_bytes is None else {"chunk_bytes": chunk_bytes}
    if kind == "zarr":
        write_zarr(table, dst, progress=progress, overwrite=overwrite, **extra)
    else:
        write_hdf5(table, dst, progress=progress, overwrite=overwrite, compression=compression, **extra)


def concat_blocks(parts: Sequence[RowBlocks | Callable[[], RowBlocks]], names: Sequence[str],
                  sizes: Sequence[int] | None = None) -> RowBlocks:
    """Several inputs' rows, one input after another, as one table, each opened only when reached.

    Parameters
    ----------
    parts
        Each input's :class:`RowBlocks`, or a function that opens it: inputs read
        into RAM when opened (NOvA tables, ROOT, CSV) are then opened one at a time,
        so a convert of hundreds of files holds one of them at most.
    names
        The inputs, for errors.
    sizes
        Progress units of each input (default: the ``total`` of each opened input).

    The first input fixes the columns and their dtypes; every later input must have
    the same scalars and groups, and its columns must cast to those dtypes without
    loss (``numpy.can_cast(..., "safe")``), else a ``SchemaError`` names the input
    (give ``dtype=`` to read them all alike).
    """
    opened: list[RowBlocks | None] = [p if isinstance(p, RowBlocks) else None for p in parts]

    def get(i: int) -> RowBlocks:
        got = opened[i]
        if got is None:
            opener = parts[i]
            assert callable(opener)
            got = opener()
        return got

    first = get(0)
    opened[0] = first
    totals = list(sizes) if sizes is not None else None

    def blocks() -> Iterator[tuple[InMemoryDataset, int]]:
        done = 0
        for i in range(len(parts)):
            part = get(i)
            if i:
                check_like(part, first, names[i], names[0])
            size = totals[i] if totals is not None else part.total
            for block, at in part.blocks():
                yield _cast(block, first.scalar_dtypes, first.group_dtypes), done + (
                    at if totals is None else int(size * at / max(part.total, 1)))
            done += size
            if i and not isinstance(parts[i], RowBlocks):
                del part  # dropped before the next input is opened

    listed = [p for p in parts if isinstance(p, RowBlocks)]
    known = len(listed) == len(parts)
    counts = [p.n_rows for p in listed if p.n_rows is not None]
    n_rows = sum(counts) if known and len(counts) == len(parts) else None
    total = sum(totals) if totals is not None else sum(get(i).total for i in range(len(parts))) if known \
        else first.total
    group_totals = None
    if known and all(p.group_totals is not None for p in listed):
        group_totals = {g: sum(p.group_totals.get(g, 0) for p in listed if p.group_totals is not None)
                        for g in first.groups}  # a part without a group is refused when read
    return RowBlocks(dict(first.scalar_dtypes), dict(first.groups), dict(first.group_dtypes), blocks, total,
                     tuple(names), n_rows, group_totals)


def check_like(part: RowBlocks, first: RowBlocks, name: str, first_name: str) -> None:
    """``part`` has ``first``'s columns, in dtypes that cast to ``first``'s without loss."""
    if part.scalar_names != first.scalar_names or part.groups != first.groups:
        raise SchemaError(f"columns differ from those of {first_name}: scalars {part.scalar_names} vs "
                          f"{first.scalar_names}, groups {part.groups} vs {first.groups}", file=name)
    for kind, have, want in (("scalar", part.scalar_dtypes, first.scalar_dtypes),
                             ("group", part.group_dtypes, first.group_dtypes)):
        for key, dt in have.items():
            if not np.can_cast(dt, want[key], "safe"):
                raise SchemaError(f"{kind} {key!r} is {dt} here but {want[key]} in {first_name}, the "
                                  "first input (which sets the output dtypes): give dtype= to read "
                                  "every input alike", file=name, variable=key)


def _cast(block: InMemoryDataset, scalar_dtypes: Mapping[str, np.dtype[Any]],
          group_dtypes: Mapping[str, np.dtype[Any]]) -> InMemoryDataset:
    """``block`` with its columns in the common dtypes (no copy where they already are)."""
    scalars = {s: np.asarray(block.scalar(s), dtype=dt) for s, dt in scalar_dtypes.items()}
    groups: dict[str, RaggedGroup] = {}
    for g, dt in group_dtypes.items():
        values, offsets = block.ragged(g)
        groups[g] = RaggedGroup(block.groups[g], np.asarray(values, dtype=dt), offsets)
    return InMemoryDataset(scalars, groups)


@refuses_renamed("convert_streaming")
def convert_streaming(sources: Sequence[str], dst: str | os.PathLike[str], *, schema: Any = None,
                      shuffle_seed: int | None = None, overwrite: bool = False, progress: Progress | None = None,
                      chunk_bytes: int | None = None, compression: str | None = "gzip",
                      block_bytes: int = BLOCK_BYTES, bucket_bytes: int | None = None,
                      **options: Any) -> RowBlocks:
    """Convert ``sources`` (paths, in order) into ``dst`` in one process, block by block.

    Parameters
    ----------
    sources
        Input paths (globs already expanded), read in order as one table.
    dst
        ``*.zarr`` or ``*.h5``/``*.hdf5`` (see :func:`output_kind`).
    schema, options
        Passed to each input's reader (e.g. ``dtype``).
    shuffle_seed
        Seed of a row shuffle (external, bounded memory), or ``None`` for input order.
    overwrite
        Replace an existing ``dst`` once the new output is complete.
    progress
        ``progress(done, total)`` in input units.
    chunk_bytes, compression
        Output chunk size; HDF5 filter (``"gzip"``, ``"lzf"`` or ``None``).
    block_bytes, bucket_bytes
        Rows held in RAM per block; bytes per shuffle bucket.

    Returns
    -------
    RowBlocks
        What was read (columns; ``source``), for a summary.
    """
    kind, paths = output_and_inputs(sources, dst)
    if os.path.exists(dst) and not overwrite:
        raise FileExistsError(f"{dst} exists; pass overwrite=True (or --overwrite) to replace it")
    if len(paths) == 1:
        table = open_blocks(paths[0], schema=schema, block_bytes=block_bytes, **options)
    else:  # opened one at a time, when reached; progress in file bytes
        from lstm_data.io.dispatch import detect_format

        if all(detect_format(p) == "csv" for p in paths):  # column kinds decided across the files
            from lstm_data.io.csv.kinds import common_schema

            schema = common_schema(paths, schema, **options)
        openers = [functools.partial(open_blocks, p, schema=schema, block_bytes=block_bytes, **options)
                   for p in paths]
        table = concat_blocks(openers, paths, sizes=[input_bytes(p) for p in paths])
    if shuffle_seed is not None:
        table = shuffled(table, shuffle_seed, paths, dst, bucket_bytes=bucket_bytes, schema=schema, **options)
    write_output(table, dst, kind, overwrite=overwrite, compression=compression, chunk_bytes=chunk_bytes,
                 progress=progress)
    return table
