"""Parquet files read on demand (in_ram=False): block shuffle over files and row groups reads each
row group at most twice per epoch, every row once, batches equal to the in-RAM reader's bitwise."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyarrow")

import lstm_data  # noqa: E402
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars  # noqa: E402
from lstm_data.data.synthetic import make_dataset  # noqa: E402
from lstm_data.io.parquet import ParquetDataset  # noqa: E402
from tests.helpers import assert_same_batch  # noqa: E402


def _files(tmp_path, n_files=3, rows=1500, row_group=170):
    paths = []
    for i in range(n_files):
        ds = make_dataset(rows, seed=20 + i)
        ds = lstm_data.data.dataset.InMemoryDataset(
            {**{s: ds.scalar(s) for s in ds.scalar_names},
             "row": np.arange(i * rows, (i + 1) * rows, dtype=np.float64)},
            {g: ds.group(g) for g in ds.groups})
        path = tmp_path / f"p{i}.parquet"
        ds.to_parquet(path, row_group_size=row_group)
        paths.append(str(path))
    return paths


def _spec():
    return BatchSpec(inputs={"slice": Scalars(["calE", "nHit"]),
                             "png": Ragged(["png.calE", "png.nhit"], max_len=6)},
                     targets={"row": Scalars(["row"])})


def test_row_groups_are_the_chunks(tmp_path):
    path = _files(tmp_path, n_files=1, rows=1000, row_group=130)[0]
    disk = lstm_data.open(path, in_ram=False)
    assert isinstance(disk, ParquetDataset)
    for g in disk.groups:
        assert np.array_equal(disk.value_chunk_starts(g), disk.row_group_rows[:-1])


def test_block_shuffle_over_files_and_row_groups(tmp_path):
    paths = _files(tmp_path)
    disk = lstm_data.open(paths, in_ram=False)
    ram = lstm_data.open(paths, in_ram=True)
    assert not disk.in_ram
    for part in disk.datasets:
        part.io_stats.track_chunks()
    b = Batches(disk, _spec(), Order(batch_size=100, shuffle="block", seed=3, read_ahead=False))
    assert b.shuffle == "block"
    for epoch in range(2):
        for part in disk.datasets:
            part.io_stats.reset()
        seen = np.concatenate([b.batch(i, epoch)[1]["row"].ravel() for i in range(len(b))]).astype(np.int64)
        assert np.array_equal(np.sort(seen), np.arange(4500))
        for part in disk.datasets:
            per = part.io_stats.per_chunk
            assert max(per.values()) <= 2, per
            n_rg = len(part.row_group_rows) - 1
            assert {k for (_, k) in per} == set(range(n_rg))
    for i in (0, len(b) - 1):
        got = b.batch(i, 1)
        rows = got[1]["row"].ravel().astype(np.intp)
        ref = Batches(ram.take(rows), _spec(), Order(batch_size=len(rows), shuffle=False))[0]
        assert_same_batch(got, ref)
