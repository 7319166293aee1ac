"""TorchBatches: whole batches through a real DataLoader with worker processes."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import DataLoader  # noqa: E402

import lstm_data  # noqa: E402
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars  # noqa: E402
from lstm_data.adapters.torch import TorchBatches  # noqa: E402
from lstm_data.data.synthetic import PNG2D_VARS, SLICE_VARS, make_dataset  # noqa: E402
from tests.adapters.rows import (  # noqa: E402
    assert_epochs,
    plain_loop_orders,
    row_dataset,
    row_spec,
    rows_in,
)


def _batches(**kw) -> Batches:
    spec = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                             "input_png2d": Ragged(PNG2D_VARS, max_len=6, lengths=True)},
                     targets={"target_total": Scalars(["trueE"])})
    return Batches(make_dataset(1000, seed=4), spec, Order(batch_size=128, seed=9, **kw))


def test_dataloader_with_two_workers_yields_every_batch_as_tensors():
    batches = _batches()
    loader = DataLoader(TorchBatches(batches), batch_size=None, num_workers=2)
    seen = list(loader)
    assert len(seen) == len(batches) == 8
    for i, (x, y, w) in enumerate(seen):
        assert x["input_slice"].dtype == torch.float32 and x["input_png2d"].dtype == torch.float32
        assert y["target_total"].shape == (len(batches.rows_of(i)), 1)
        assert x["input_png2d_lengths"].dtype == torch.int64
        assert torch.all(w["target_total"] == 1)
        ref = batches[i]
        np.testing.assert_array_equal(x["input_png2d"].numpy(), ref[0]["input_png2d"])
        np.testing.assert_array_equal(y["target_total"].numpy(), ref[1]["target_total"])


def test_set_epoch_reaches_the_workers():
    batches = _batches()
    ds = TorchBatches(batches)
    loader = DataLoader(ds, batch_size=None, num_workers=2)
    first = next(iter(loader))[0]["input_slice"]
    ds.set_epoch(1)
    second = next(iter(loader))[0]["input_slice"]
    assert not torch.equal(first, second)
    np.testing.assert_array_equal(second.numpy(), batches[0][0]["input_slice"])


@pytest.mark.parametrize("shuffle", [True, "block"])
def test_forked_workers_do_not_wait_for_work_under_way_in_the_parent(tmp_path, shuffle):
    # as if a background thread of the parent (the next epoch's order, or a block
    # window read ahead) was at work when DataLoader forked: in the child, nobody
    # would ever finish it
    make_dataset(1000, seed=4).to_zarr(tmp_path / "d.zarr")
    if shuffle is True:
        batches = _batches(shuffle=shuffle)
    else:
        batches = Batches(lstm_data.open(tmp_path / "d.zarr"), _batches().spec,
                          Order(batch_size=128, seed=9, shuffle="block"))
    batches.set_epoch(1)
    want = [batches[i] for i in range(len(batches))]
    plans = batches.pipeline.plans
    plans._plans = type(plans._plans)(keep=2)  # forget epoch 1's order...
    under_way = [plans._plans.claim(1)]  # ...and claim it, as a side job does, unfilled
    if shuffle == "block":
        batches.pipeline.blocks._windows = type(batches.pipeline.blocks._windows)(keep=2)
        under_way.append(batches.pipeline.blocks._windows.claim((1, 0)))
    loader = DataLoader(TorchBatches(batches), batch_size=None, num_workers=2,
                        multiprocessing_context="fork", timeout=60)
    seen = list(loader)  # before the fix: "DataLoader timed out after 60 seconds"
    assert len(seen) == len(want)
    for (x, _, _), (ref, _, _) in zip(seen, want):
        np.testing.assert_array_equal(x["input_png2d"].numpy(), ref["input_png2d"])
    for future, owner in under_way:
        assert owner and not future.done()


@pytest.mark.slow
def test_spawned_workers_get_the_dataset_by_memory_map():
    loader = DataLoader(TorchBatches(_batches()), batch_size=None, num_workers=2,
                        multiprocessing_context="spawn")
    assert sum(1 for _ in loader) == 8
    data = TorchBatches(_batches())  # with its sampler, which stays in this process
    loader = DataLoader(data, batch_size=None, sampler=data.sampler, num_workers=2,
                        multiprocessing_context="spawn")
    assert [x["input_slice"].shape[0] for x, _, _ in loader] == [128] * 7 + [1000 - 7 * 128]


# -- epochs through the sampler: keys (epoch, i) drawn in the main process ----------------------------------------
def _passes(loader, epochs, set_epoch=None):
    seen = []
    for epoch in epochs:
        if set_epoch is not None:
            set_epoch(epoch)
        seen += [rows_in(x) for x, _, _ in loader]
    return seen


@pytest.mark.parametrize("persistent", [True, False])
def test_sampler_passes_read_orders_seed_0_1_2_without_set_epoch(persistent):
    ds, spec = row_dataset(600), row_spec()
    want = plain_loop_orders(Batches(ds, spec, Order(batch_size=64, seed=9)), range(3))
    data = TorchBatches(Batches(ds, spec, Order(batch_size=64, seed=9)))
    loader = DataLoader(data, batch_size=None, sampler=data.sampler, num_workers=2,
                        persistent_workers=persistent)
    assert_epochs(_passes(loader, range(3)), want)  # not epoch 0 three times


def test_sampler_with_set_epoch_each_epoch_and_persistent_workers():
    ds, spec = row_dataset(600), row_spec()
    want = plain_loop_orders(Batches(ds, spec, Order(batch_size=64, seed=9)), range(3))
    data = TorchBatches(Batches(ds, spec, Order(batch_size=64, seed=9)))
    loader = DataLoader(data, batch_size=None, sampler=data.sampler, num_workers=2, persistent_workers=True)
    assert_epochs(_passes(loader, range(3), set_epoch=data.set_epoch), want)


def test_sampler_resumes_at_the_epoch_set_before():
    ds, spec = row_dataset(600), row_spec()
    want = plain_loop_orders(Batches(ds, spec, Order(batch_size=64, seed=9)), [2, 3])
    batches = Batches(ds, spec, Order(batch_size=64, seed=9))
    batches.set_epoch(2)  # a resumed run
    data = TorchBatches(batches)
    loader = DataLoader(data, batch_size=None, sampler=data.sampler, num_workers=2, persistent_workers=True)
    assert_epochs(_passes(loader, range(2)), want)
    assert data.sampler.epoch == 4 and batches.epoch == 2  # the workers never moved the main copy


def test_a_precomputed_store_through_the_sampler(tmp_path):
    ds, spec = row_dataset(600), row_spec()
    lstm_data.precompute(ds, spec, tmp_path / "s.zarr", Order(batch_size=64, seed=3), progress=False)
    want = plain_loop_orders(lstm_data.open_batches(tmp_path / "s.zarr"), range(3))
    stored = lstm_data.open_batches(tmp_path / "s.zarr")
    data = TorchBatches(stored)
    loader = DataLoader(data, batch_size=None, sampler=data.sampler, num_workers=2, persistent_workers=True)
    assert_epochs(_passes(loader, range(3)), want)
    x, _, _ = data[(2, 1)]  # in this process too, without moving the store's epoch
    np.testing.assert_array_equal(rows_in(x), want[2][1])
    assert stored.epoch == 0


def test_keys_name_their_epoch_and_bad_epochs_are_named():
    batches = _batches()
    data = TorchBatches(batches)
    batches.set_epoch(2)
    ref = batches[3]
    batches.set_epoch(0)
    np.testing.assert_array_equal(data[(2, 3)][0]["input_slice"].numpy(), ref[0]["input_slice"])
    assert batches.epoch == 0 and len(data.sampler) == len(batches)
    with pytest.raises(ValueError, match="epoch must be an int >= 0"):
        data[(-1, 0)]


def test_plain_keys_repeating_an_epoch_warn_once():
    import warnings

    data = TorchBatches(_batches())
    loader = DataLoader(data, batch_size=None, num_workers=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for epoch in range(2):  # set_epoch between passes: no warning
            data.set_epoch(epoch)
            list(loader)
    with pytest.warns(UserWarning, match="served twice in epoch 1.*sampler=data.sampler") as caught:
        list(loader)  # forgot set_epoch: this pass repeats epoch 1
        list(loader)
    assert len([w for w in caught if "served twice" in str(w.message)]) == 1
    unshuffled = TorchBatches(_batches(shuffle=False))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unshuffled order is the same every epoch: nothing to say
        list(DataLoader(unshuffled, batch_size=None))
        list(DataLoader(unshuffled, batch_size=None))


@pytest.mark.parametrize("workers", [0, 1])
def test_a_loader_that_collates_whole_batches_is_refused_naming_batch_size_none(workers):
    """The DataLoader's default batch_size=1 would stack a batch into (1, B, ...) tensors."""
    from lstm_data.errors import OptionError

    loader = DataLoader(TorchBatches(_batches()), num_workers=workers)
    with pytest.raises(OptionError, match=r"batch_size=None.*|.*\(1, B, \.\.\.\)"):
        next(iter(loader))
    plain = DataLoader(TorchBatches(_batches()), batch_size=None)
    assert next(iter(plain))[0]["input_slice"].shape[0] == 128


def test_the_sampler_makes_its_identity_only_when_a_state_is_saved(monkeypatch):
    """A digest of every value is no cost of a first epoch: the sampler asks for it at state_dict."""
    data = TorchBatches(_batches())
    calls = []
    real = data.batches.state_dict
    monkeypatch.setattr(data.batches, "state_dict", lambda: calls.append(1) or real())
    loader = DataLoader(data, batch_size=None, sampler=data.sampler)
    assert sum(1 for _ in loader) == 8 and calls == []
    state = data.sampler.state_dict()
    assert calls == [1] and state["seed"] == 9
    data.sampler.load_state_dict(state)
    assert calls == [1]
