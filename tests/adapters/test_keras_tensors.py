"""KerasBatches under the torch backend hands Keras torch tensors: Keras then copies nothing."""
from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "torch")

import numpy as np
import pytest

keras = pytest.importorskip("keras")
torch = pytest.importorskip("torch")

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars  # noqa: E402
from lstm_data.adapters.keras import KerasBatches  # noqa: E402
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset  # noqa: E402
from tests.helpers import assert_same_batch  # noqa: E402

pytestmark = pytest.mark.skipif(keras.backend.backend() != "torch", reason="Keras torch backend only")


def _batches(**kw) -> Batches:
    spec = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                             "input_png3d": Ragged(PNG3D_VARS[:8], max_len=8, lengths=True)},
                     targets={"target_total": Scalars(["trueE"])})
    return Batches(make_dataset(600, seed=2), spec.replace(nan_to=0.0), Order(batch_size=100, seed=1, **kw))


def _assert_tensors_of(item, want) -> None:
    assert all(isinstance(t, torch.Tensor) for part in item for t in part.values()), item
    assert_same_batch(item, want)


def test_items_are_tensors_that_keras_converts_without_a_copy():
    batches = _batches()
    kb = KerasBatches(batches)
    assert kb.as_tensors
    item = kb[1]
    _assert_tensors_of(item, batches.batch(1, epoch=0))
    x = item[0]["input_png3d"]
    converted = keras.ops.convert_to_tensor(x)
    assert converted.data_ptr() == x.data_ptr()  # Keras's np.array(x) copy does not happen


@pytest.mark.parametrize("threads", [1, 2])
def test_keras_epoch_iterator_serves_the_epoch_in_order(threads):
    from keras.src.backend.torch.trainer import TorchEpochIterator

    batches = _batches()
    kb = KerasBatches(batches, threads=threads, max_queue_size=3)
    for epoch in range(2):
        got = [data[0] for _, _, data in TorchEpochIterator(x=kb, shuffle=False)]
        assert len(got) == len(batches)
        for i, item in enumerate(got):
            _assert_tensors_of(item, batches.batch(i, epoch=epoch))


def test_cached_read_only_batches_become_copies():
    batches = _batches(cache="ram")
    kb = KerasBatches(batches)
    x = kb[0][0]["input_slice"]
    x += 1.0  # an in-place edit of the tensor must not reach the cache
    np.testing.assert_array_equal(batches[0][0]["input_slice"] + 1.0, x.numpy())
