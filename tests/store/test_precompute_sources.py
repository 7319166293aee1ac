"""``precompute(source, out)`` of any batch source: a shard, stored batches, a source of one's own."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pytest

from lstm_data import Batches, BatchSource, BatchSpec, Order, Scalars, open_batches, precompute
from lstm_data.errors import OptionError
from lstm_data.store.format import StoreMismatchError
from tests.adapters.rows import row_dataset, row_spec
from tests.helpers import assert_same_batch


@pytest.fixture(scope="module")
def data():
    return row_dataset(300)


def _stored_equal(source, out) -> None:
    stored = open_batches(out, permute=False)
    assert len(stored) == len(source)
    for i in range(len(source)):
        assert_same_batch(stored[i], source.batch(i, epoch=0), f"batch {i}")


def test_a_shard_is_stored_as_it_serves_its_batches(data, tmp_path):
    b = Batches(data, row_spec(), Order(batch_size=32, seed=5, bucket_by="input_png3d", bucket_window=2))
    shard = b.shard(1, 3)
    summary = precompute(shard, tmp_path / "r1.zarr", progress=False, threads=2)
    assert summary.n_batches == len(shard)
    _stored_equal(shard, tmp_path / "r1.zarr")
    assert summary.n_rows == sum(len(shard.batch(i, 0)[0]["input_row"]) for i in range(len(shard)))
    assert precompute(shard, tmp_path / "r1.zarr", progress=False).reused
    with pytest.raises(StoreMismatchError):  # another rank: other batches, not the same store
        precompute(b.shard(0, 3), tmp_path / "r1.zarr", progress=False)
    with pytest.raises(OptionError, match="client="):
        precompute(shard, tmp_path / "x.zarr", client=object(), progress=False)


def test_a_store_is_stored_again_with_other_compression(data, tmp_path):
    b = Batches(data, row_spec(), Order(batch_size=40, seed=2))
    precompute(b, tmp_path / "zstd.zarr", progress=False)
    stored = open_batches(tmp_path / "zstd.zarr")
    precompute(stored, tmp_path / "raw.zarr", compression=None, progress=False)
    _stored_equal(stored, tmp_path / "raw.zarr")
    again = open_batches(tmp_path / "raw.zarr", spec=row_spec(), order=b.order, dataset=data)  # its record kept
    assert again.identity() == stored.identity() and again.n_rows == stored.n_rows == 300
    raw_bytes = sum(f.stat().st_size for f in (tmp_path / "raw.zarr").rglob("*") if f.is_file())
    zstd_bytes = sum(f.stat().st_size for f in (tmp_path / "zstd.zarr").rglob("*") if f.is_file())
    assert raw_bytes > zstd_bytes


class Squares:
    """A batch source of one's own: batch ``i`` holds the squares of ``i*4 .. i*4+3``, reversed on odd epochs."""

    spec = BatchSpec(inputs={"x": Scalars(["x"])}, targets={"y": Scalars(["y"])})

    def __init__(self, n: int) -> None:
        self.n, self.epoch = n, 0

    @property
    def varies_by_epoch(self) -> bool:
        return True

    def __len__(self) -> int:
        return self.n

    def batch(self, index: int, epoch: int | None = None) -> Any:
        epoch = self.epoch if epoch is None else epoch
        i = index if epoch % 2 == 0 else self.n - 1 - index
        size = 4 if i < self.n - 1 else 3  # a short last batch
        x = np.arange(i * 4, i * 4 + size, dtype=np.float32).reshape(-1, 1)
        return {"x": x}, {"y": x ** 2}, {"y": np.full((size, 1), 0.5, np.float32)}

    def signature(self) -> Any:
        return self.spec.signature()

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def batch_elements(self, epoch: int) -> np.ndarray:
        return np.array([4] * (self.n - 1) + [3], dtype=np.int64)

    def identity(self) -> dict[str, object]:
        return {"squares": self.n, "seed": 7}

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.epoch = state["epoch"]


def test_a_source_of_ones_own_is_stored(tmp_path):
    source = Squares(5)
    assert isinstance(source, BatchSource)
    summary = precompute(source, tmp_path / "sq.zarr", progress=False)
    assert (summary.n_batches, summary.n_rows) == (5, 19)
    _stored_equal(source, tmp_path / "sq.zarr")
    stored = open_batches(tmp_path / "sq.zarr", permute=False)
    assert stored.batch_size == 4 and stored.seed == 7
    assert stored.batch_elements(0).tolist() == [4, 4, 4, 4, 3]
    assert precompute(source, tmp_path / "sq.zarr", progress=False).reused
    with pytest.raises(StoreMismatchError):  # another source: never taken for this one
        precompute(Squares(6), tmp_path / "sq.zarr", progress=False)
    assert precompute(Squares(6), tmp_path / "sq.zarr", overwrite=True, progress=False).n_batches == 6
