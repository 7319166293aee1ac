"""A seeded shuffle of rows that never holds the table in RAM: two passes through disk buckets.

``convert --shuffle-seed SEED`` writes rows in a random order so that contiguous reads
of the output are random batches. For inputs larger than RAM the shuffle is
external:

1. *scatter*: rows stream in blocks; each row goes to one of ``K`` buckets by a
   seeded hash of its global row number (SplitMix64 of ``seed`` and the row,
   vectorised), and each block's share of a bucket is appended to that bucket's
   spill files in a temporary directory (raw ``.npy``: scalars, prong counts and
   values);
2. *gather*: bucket by bucket, its spilled pieces are read back, permuted in RAM
   with a generator seeded by ``(seed, bucket)`` (by ``seed`` alone when there is
   one bucket: ``numpy.random.default_rng(seed).permutation(n)``), and handed on
   as blocks.

The order is a pure function of the seed and the input rows: it does not depend
on block sizes or on how many processes parsed the input. RAM holds one block in
pass 1 and one bucket in pass 2 (``K`` is chosen so that a bucket holds about
``bucket_bytes``); the cost is the table written to and read back from the
temporary directory once (disk space: the table's uncompressed size; disk
traffic: twice that), logged when the shuffle starts. A table that fits one
bucket is a single in-RAM permutation.
"""
from __future__ import annotations

import logging
import math
import shutil
from pathlib import Path
from typing import Iterator

import numpy as np

from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.io.ours.row_blocks import RowBlocks

__all__ = ["external_shuffle", "bucket_of", "n_buckets_for", "BUCKET_BYTES"]

_log = logging.getLogger("lstm_data")
#: uncompressed bytes per bucket (what pass 2 holds in RAM)
BUCKET_BYTES = 128 << 20
_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's output function on uint64 (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def bucket_of(rows: np.ndarray, seed: int, n_buckets: int) -> np.ndarray:
    """The bucket (0 .. ``n_buckets - 1``) of each global row number, for ``seed``."""
    key = _splitmix64(np.asarray([seed], dtype=np.uint64))[0]
    with np.errstate(over="ignore"):
        mixed = _splitmix64(rows.astype(np.uint64) ^ key)
    return (mixed % np.uint64(n_buckets)).astype(np.intp)


def n_buckets_for(table_bytes: int, bucket_bytes: int = BUCKET_BYTES) -> int:
    """Buckets for a table of about ``table_bytes`` uncompressed bytes."""
    return max(1, math.ceil(table_bytes / max(1, bucket_bytes)))


def external_shuffle(source: RowBlocks, seed: int, workdir: str | Path, *,
                     bucket_bytes: int = BUCKET_BYTES, n_buckets: int | None = None) -> RowBlocks:
    """``source``'s rows in a seeded random order, through spill files in ``workdir``.

    Parameters
    ----------
    source
        The rows, in blocks; ``source.total`` estimates their uncompressed bytes
        (it sets the number of buckets unless ``n_buckets`` is given).
    seed
        The shuffle's seed (an int >= 0).
    workdir
        A directory for the spill files (created; removed when the pass ends, and
        by the caller on error).
    bucket_bytes, n_buckets
        Bucket size target, or the bucket count itself.

    Returns
    -------
    RowBlocks
        One block per bucket, in bucket order; progress counts the input's units
        during pass 1 and then the buckets' share of them.
    """
    k = n_buckets or n_buckets_for(source.total, bucket_bytes)
    workdir = Path(workdir)

    def blocks() -> Iterator[tuple[InMemoryDataset, int]]:
        workdir.mkdir(parents=True, exist_ok=True)
        _log.info("shuffle: %d bucket(s) of about %.0f MB; the table is spilled to %s and read back "
                  "once", k, source.total / k / 1e6, workdir)
        try:
            counts = _scatter(source, seed, k, workdir)
            yield from _gather(source, seed, k, workdir, counts)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    return RowBlocks(source.scalar_dtypes, source.groups, source.group_dtypes, blocks, source.total,
                     source.source, source.n_rows, source.group_totals)


def _scatter(source: RowBlocks, seed: int, k: int, workdir: Path) -> list[int]:
    """Pass 1: append each block's rows of bucket ``b`` to bucket ``b``'s spill file."""
    counts = [0] * k
    first = 0
    for block, _ in source.blocks():
        n = len(block)
        which = bucket_of(np.arange(first, first + n, dtype=np.int64), seed, k)
        order = np.argsort(which, kind="stable")  # rows grouped by bucket, in input order
        bounds = np.searchsorted(which[order], np.arange(k + 1))
        for b in range(k):
            rows = order[bounds[b]:bounds[b + 1]]
            if not len(rows):
                continue
            part = block.take(rows)
            with open(workdir / f"b{b:06d}.spill", "ab") as fh:  # one record per piece, in order
                for name in source.scalar_dtypes:
                    np.save(fh, part.scalar(name))
                for g in source.groups:
                    values, offsets = part.ragged(g)
                    np.save(fh, np.diff(offsets))
                    np.save(fh, np.ascontiguousarray(values[int(offsets[0]):int(offsets[-1])]))
            counts[b] += len(rows)
        first += n
    return counts


def _read_spill(path: Path, n_scalars: int, n_groups: int) -> list[list[np.ndarray]]:
    """The pieces of a spill file: each ``[scalars..., (lengths, values) per group]``."""
    pieces = []
    size = path.stat().st_size
    with open(path, "rb") as fh:
        while fh.tell() < size:
            pieces.append([np.load(fh) for _ in range(n_scalars + 2 * n_groups)])
    return pieces


def _gather(source: RowBlocks, seed: int, k: int, workdir: Path,
            counts: list[int]) -> Iterator[tuple[InMemoryDataset, int]]:
    """Pass 2: each bucket read back whole, permuted by ``(seed, bucket)``."""
    total_rows = max(1, sum(counts))
    done_rows = 0
    n_s = len(source.scalar_dtypes)
    for b in range(k):
        path = workdir / f"b{b:06d}.spill"
        if not counts[b]:
            continue
        pieces = _read_spill(path, n_s, len(source.groups))
        path.unlink()  # its disk space is free again
        scalars = {s: np.concatenate([p[i] for p in pieces]) for i, s in enumerate(source.scalar_dtypes)}
        groups = {}
        for j, (g, names) in enumerate(source.groups.items()):
            lengths = np.concatenate([p[n_s + 2 * j] for p in pieces])
            offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            values = np.concatenate([p[n_s + 2 * j + 1] for p in pieces]).reshape(-1, len(names))
            groups[g] = RaggedGroup(names, values, offsets)
        del pieces
        bucket = InMemoryDataset(scalars, groups)
        # one bucket: the plain seeded permutation of all rows (the in-RAM shuffle of earlier versions)
        perm = np.random.default_rng(seed if k == 1 else [seed, b]).permutation(len(bucket))
        done_rows += len(bucket)
        yield bucket.take(perm), int(source.total * done_rows / total_rows)
