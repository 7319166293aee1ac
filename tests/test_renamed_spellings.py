"""Every renamed spelling still works for one release: one ``DeprecationWarning`` naming the new
spelling, and what the new spelling does.

The only tests that use old spellings (the rest of the suite uses the current ones).
"""
from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, ReadOptions, open_batches, precompute
from lstm_data.cli import main
from lstm_data.io.csv.reader import read_csv
from lstm_data.store.read import PrecomputedBatches
from tests.helpers import EXAMPLES, assert_same_batch, assert_same_dataset

DS_ROWS, DS_SEED = 600, 11  # the ``ds`` fixture (tests/conftest.py)


@contextlib.contextmanager
def one_warning(new: str) -> Iterator[None]:
    """Exactly one of our DeprecationWarnings in the block, and it names ``new``."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        yield
    ours = [w for w in record if w.category is DeprecationWarning and "kept one release" in str(w.message)]
    assert len(ours) == 1, [str(w.message) for w in record]
    assert f"use {new}" in str(ours[0].message), str(ours[0].message)


@contextlib.contextmanager
def no_warning() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        yield


@pytest.fixture(scope="module")
def spec() -> BatchSpec:
    return BatchSpec.from_toml(EXAMPLES / "numu_v3.toml")


@pytest.fixture(scope="module")
def store(ds, spec, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("renamed") / "b.zarr"
    precompute(ds, spec, out, Order(batch_size=100, seed=3), progress=False)
    return out


def _files_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# -- stored batches: shuffle -> permute ------------------------------------------------------
def test_open_batches_shuffle_is_permute(store):
    with one_warning("permute=..."):
        old = open_batches(store, shuffle=False)
    with no_warning():
        new = open_batches(store, permute=False)
    assert not old.permute and not new.permute
    for i in range(len(new)):
        assert_same_batch(old.batch(i, 2), new.batch(i, 2))
    with one_warning("permute=..."):
        assert PrecomputedBatches(store, shuffle=False).permute is False
    with one_warning(".permute"):
        assert new.shuffle is False


# -- convert: shuffle -> shuffle_seed ----------------------------------------------------------
def test_convert_shuffle_is_shuffle_seed(ds, tmp_path):
    ds.to_zarr(tmp_path / "in.zarr")
    with one_warning("shuffle_seed=..."):
        lstm_data.convert(tmp_path / "in.zarr", tmp_path / "old.zarr", shuffle=4)
    with no_warning():
        lstm_data.convert(tmp_path / "in.zarr", tmp_path / "new.zarr", shuffle_seed=4)
    assert_same_dataset(lstm_data.open(tmp_path / "old.zarr"), lstm_data.open(tmp_path / "new.zarr"))
    assert not np.array_equal(lstm_data.open(tmp_path / "new.zarr").scalar("calE"), ds.scalar("calE"))


def test_the_convert_cli_shuffle_is_shuffle_seed(ds, tmp_path):
    ds.to_zarr(tmp_path / "in.zarr")
    with one_warning("--shuffle-seed"):
        assert main(["convert", str(tmp_path / "in.zarr"), str(tmp_path / "old.zarr"), "--shuffle", "4",
                     "--quiet"]) == 0
    with one_warning("--overwrite"):
        assert main(["convert", str(tmp_path / "in.zarr"), str(tmp_path / "old.zarr"), "--shuffle-seed", "4",
                     "--force", "--quiet"]) == 0
    with no_warning():
        assert main(["convert", str(tmp_path / "in.zarr"), str(tmp_path / "new.zarr"), "--shuffle-seed", "4",
                     "--quiet"]) == 0
    assert_same_dataset(lstm_data.open(tmp_path / "old.zarr"), lstm_data.open(tmp_path / "new.zarr"))


# -- precompute: compress -> compression -------------------------------------------------------
def test_precompute_compress_is_compression(ds, spec, tmp_path):
    order = Order(batch_size=100, seed=3)
    with one_warning("compression='zstd' or None"):
        precompute(ds, spec, tmp_path / "old.zarr", order, progress=False, compress=False)
    with no_warning():
        precompute(ds, spec, tmp_path / "new.zarr", order, progress=False, compression=None)
        precompute(ds, spec, tmp_path / "zstd.zarr", order, progress=False)
    raw = _files_bytes(tmp_path / "new.zarr")
    assert _files_bytes(tmp_path / "old.zarr") == raw > _files_bytes(tmp_path / "zstd.zarr")
    with pytest.raises(lstm_data.OptionError, match="compression must be 'zstd' or None"):
        precompute(ds, spec, tmp_path / "x.zarr", order, progress=False, compression="gzip")


def test_the_precompute_cli_no_compress_workers_and_force(ds, tmp_path):
    ds.to_zarr(tmp_path / "in.zarr")
    base = ["precompute", "--data", str(tmp_path / "in.zarr"), "--spec", str(EXAMPLES / "numu_v3.toml"),
            "--batch-size", "100", "--no-progress", "--quiet", "--out"]
    with one_warning("--compression none"):
        assert main([*base, str(tmp_path / "old.zarr"), "--no-compress"]) == 0
    with no_warning():
        assert main([*base, str(tmp_path / "new.zarr"), "--compression", "none"]) == 0
    assert _files_bytes(tmp_path / "old.zarr") == _files_bytes(tmp_path / "new.zarr")
    with one_warning("--threads"):
        assert main([*base, str(tmp_path / "new.zarr"), "--compression", "none", "--workers", "2"]) == 0
    with one_warning("--overwrite"):
        assert main([*base, str(tmp_path / "new.zarr"), "--batch-size", "50", "--force"]) == 0


# -- readers take ReadOptions' names -----------------------------------------------------------
def test_read_csv_block_size_is_block_bytes(tmp_path):
    path = EXAMPLES / "numu_v3.csv.xz"
    with one_warning("block_bytes=..."):
        old = read_csv(path, block_size=1 << 16, threads=2)
    with no_warning():
        new = read_csv(path, block_bytes=1 << 16, threads=2)
    assert_same_dataset(old, new)
    with pytest.raises(TypeError, match="unexpected keyword argument 'block_sise'"):
        read_csv(path, block_sise=1 << 16)


def test_read_parquet_use_threads_is_threads(ds, tmp_path):
    pytest.importorskip("pyarrow")
    from lstm_data.io.parquet import read_parquet

    ds.to_parquet(tmp_path / "d.parquet")
    with one_warning("threads=..."):
        old = read_parquet(tmp_path / "d.parquet", use_threads=False)
    with no_warning():
        new = read_parquet(tmp_path / "d.parquet", threads=1)
    assert_same_dataset(old, new)


def test_read_root_step_bytes_is_block_bytes(tmp_path):
    pytest.importorskip("uproot")
    from lstm_data.io.root import read_root
    from tests.helpers import root_events, write_root

    path = write_root(tmp_path / "e.root", {"Events": root_events(200)})
    with one_warning("block_bytes=..."):
        old = read_root(path, step_bytes=2000)
    with no_warning():
        new = read_root(path, block_bytes=2000)
    assert_same_dataset(old, new)


# -- read_ahead moved to Order -----------------------------------------------------------------
def test_read_ahead_is_an_order_setting(ds, spec, tmp_path):
    ds.to_zarr(tmp_path / "d.zarr")
    disk = lstm_data.open(tmp_path / "d.zarr")
    order = Order(batch_size=100, seed=3, shuffle="block")
    with one_warning("Order(read_ahead=...)"):
        old = Batches(disk, spec, order, read=ReadOptions(read_ahead=False))
    with no_warning():
        new = Batches(disk, spec, order.replace(read_ahead=False))
        ahead = Batches(disk, spec, order)
    assert old.order.read_ahead is False and new.order == old.order
    assert_same_batch(old.batch(2, 1), new.batch(2, 1))
    # how batches are made, not what they hold: a state moves between the two
    assert new.state_dict() == ahead.state_dict()
    (tmp_path / "order.toml").write_text(new.order.to_toml())
    assert Order.from_toml(tmp_path / "order.toml") == new.order


# -- shards: the parent's settings through .batches ------------------------------------------------
@pytest.mark.parametrize("name", ["seed", "batch_size", "shuffle", "nan_to"])
def test_a_shard_reads_its_parents_settings_through_batches(ds, spec, name):
    shard = Batches(ds, spec, Order(batch_size=100, seed=3)).shard(0, 2)
    with one_warning(f".batches.{name}"):
        value = getattr(shard, name)
    assert value == getattr(shard.batches, name)


def test_iter_workers_is_threads(ds, spec):
    b = Batches(ds, spec, Order(batch_size=100, seed=3))
    with one_warning("iter(threads=...)"):
        old = list(b.iter(workers=2))
    with no_warning():
        new = list(b.iter(threads=2))
    for x, y in zip(old, new):
        assert_same_batch(x, y)
