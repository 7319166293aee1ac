"""Deterministic augmentation: noise per (seed, epoch, row, element), whichever batch, thread,
shard, worker process or resumed run builds the row; other noise each epoch; never on padding."""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.batching.building.noise import normal_noise
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset
from lstm_data.errors import OptionError, SchemaError
from lstm_data.store.write import precompute
from tests.helpers import assert_same_arrays

GAUSS, REL, PLAIN = PNG3D_VARS[0], PNG3D_VARS[1], PNG3D_VARS[2]
AUGMENT = {GAUSS: {"gaussian": 0.5}, REL: {"relative": 0.1}, SLICE_VARS[0]: {"gaussian": 2.0}}


def _spec(augment=AUGMENT, **ragged) -> BatchSpec:
    return BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS[:2]),
                             "input_png3d": Ragged([GAUSS, REL, PLAIN], max_len=6, lengths=True, **ragged)},
                     targets={"target_total": Scalars(["trueE"])}, augment=augment)


@pytest.fixture(scope="module")
def data():
    return make_dataset(1000, seed=5)


def _by_row(batches, epoch: int = 0) -> dict[str, np.ndarray]:
    """Every output of an epoch, indexed by dataset row (so batch composition does not matter)."""
    out: dict[str, np.ndarray] = {}
    for i in range(len(batches)):
        rows = batches.rows_of(i, epoch)
        x = batches.batch(i, epoch=epoch)[0]
        for name, arr in x.items():
            full = out.setdefault(name, np.zeros((len(batches.dataset),) + arr.shape[1:], arr.dtype))
            full[rows] = arr
    return out


def test_noise_is_a_function_of_seed_epoch_row_and_element(data):
    ref = _by_row(Batches(data, _spec(), Order(batch_size=100, seed=3)))
    # other batch sizes, no shuffle: each row lands in another batch, with the same noise
    assert_same_arrays(ref, _by_row(Batches(data, _spec(), Order(batch_size=64, seed=3, shuffle=False))))
    plain = _by_row(Batches(data, _spec(augment=None), Order(batch_size=100, seed=3)))
    assert not np.array_equal(ref["input_png3d"], plain["input_png3d"])
    # another seed: other noise
    other = _by_row(Batches(data, _spec(), Order(batch_size=100, seed=4)))
    assert not np.array_equal(ref["input_png3d"][:, :, 0], other["input_png3d"][:, :, 0])


def test_noise_goes_to_real_elements_of_augmented_inputs_only(data):
    aug = _by_row(Batches(data, _spec(), Order(batch_size=100, seed=3)))
    plain = _by_row(Batches(data, _spec(augment=None), Order(batch_size=100, seed=3)))
    lens = aug["input_png3d_lengths"]
    np.testing.assert_array_equal(lens, plain["input_png3d_lengths"])
    real = np.arange(6)[None, :] < lens[:, None]
    x, y = aug["input_png3d"], plain["input_png3d"]
    assert (x[~real] == 0.0).all() and (y[~real] == 0.0).all()  # padding stays padding
    np.testing.assert_array_equal(x[..., 2], y[..., 2])  # a variable without noise
    np.testing.assert_array_equal(aug["input_slice"][:, 1], plain["input_slice"][:, 1])
    gauss = (x[..., 0] - y[..., 0])[real]
    assert (gauss != 0).all() and abs(gauss.mean()) < 0.05 and 0.45 < gauss.std() < 0.55
    nonzero = real & (y[..., 1] != 0)
    ratio = x[..., 1][nonzero] / y[..., 1][nonzero] - 1
    assert abs(ratio.mean()) < 0.01 and 0.09 < ratio.std() < 0.11
    scal = aug["input_slice"][:, 0] - plain["input_slice"][:, 0]
    assert 1.8 < scal.std() < 2.2


def test_targets_are_never_augmented():
    with pytest.raises(SchemaError, match="'trueE' is not a variable of any input"):
        _spec(augment={"trueE": {"gaussian": 1.0}})


def test_other_noise_each_epoch_and_the_same_after_a_resume(data):
    b = Batches(data, _spec(), Order(batch_size=100, seed=3))
    e0, e1 = _by_row(b, 0), _by_row(b, 1)
    assert not np.array_equal(e0["input_png3d"], e1["input_png3d"])
    it = b.iter()
    first = [next(it) for _ in range(3)]
    state = b.state_dict()
    resumed = Batches(data, _spec(), Order(batch_size=100, seed=3))
    resumed.load_state_dict(state)
    rest = list(resumed.iter())
    want = [b.batch(i, epoch=0) for i in range(len(b))]
    for got, ref in zip(first + rest, want):
        for k in ref[0]:
            np.testing.assert_array_equal(got[0][k], ref[0][k], err_msg=k)


def test_threads_shards_and_a_ram_cache_see_the_same_noise(data):
    b = Batches(data, _spec(), Order(batch_size=100, seed=3))
    want = [b.batch(i) for i in range(len(b))]
    for got, ref in zip(b.iter(threads=3), want):
        np.testing.assert_array_equal(got[0]["input_png3d"], ref[0]["input_png3d"])
    ref_rows = _by_row(b)
    shards = [b.shard(r, 2) for r in range(2)]
    for s in shards:
        for i in range(len(s)):
            rows = s.rows_of(i)
            np.testing.assert_array_equal(s[i][0]["input_png3d"], ref_rows["input_png3d"][rows])
    cached = Batches(data, _spec(), Order(batch_size=100, seed=3, cache="ram", shuffle=False))
    c0 = cached[2][0]["input_png3d"].copy()
    cached.set_epoch(1)
    c1 = cached[2][0]["input_png3d"]
    assert not np.array_equal(c0, c1)  # the cache keeps the clean batch; noise is per epoch
    cached.set_epoch(0)
    np.testing.assert_array_equal(cached[2][0]["input_png3d"], c0)


def test_a_dataloader_with_worker_processes_gives_the_same_noise(data):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from lstm_data.torch import TorchBatches

    b = Batches(data, _spec(), Order(batch_size=100, seed=3))
    ds = TorchBatches(b)
    loader = DataLoader(ds, batch_size=None, sampler=ds.sampler, num_workers=2)
    for epoch in (0, 1):
        got = [x["input_png3d"].clone() for x, _, _ in loader]
        for i, x in enumerate(got):
            assert torch.equal(x, torch.from_numpy(b.batch(i, epoch=epoch)[0]["input_png3d"]))


def test_spec_file_round_trip_gives_the_same_batches(tmp_path, data):
    path = tmp_path / "spec.toml"
    path.write_text(_spec().to_toml())
    assert "[augment." in path.read_text()
    again = BatchSpec.from_toml(path)
    assert again == _spec() and again.augment == _spec().augment
    assert_same_arrays(_by_row(Batches(data, again, Order(batch_size=100, seed=3))),
                 _by_row(Batches(data, _spec(), Order(batch_size=100, seed=3))))


@pytest.mark.parametrize("augment, error, match", [
    ({GAUSS: {"poisson": 1.0}}, OptionError, "unknown noise 'poisson'"),
    ({GAUSS: {"gaussian": -1.0}}, OptionError, "finite number >= 0"),
    ({GAUSS: {"gaussian": 1.0, "relative": 1.0}}, OptionError, "one \\{kind: sigma\\} table"),
    ({"png.nope": {"gaussian": 1.0}}, SchemaError, "'png.nope' is not a variable"),
    ([GAUSS], OptionError, "must be a table"),
])
def test_bad_augment_is_named(augment, error, match):
    with pytest.raises(error, match=match):
        _spec(augment=augment)


def test_precompute_refuses_augmentation_naming_the_option(tmp_path, data):
    with pytest.raises(OptionError, match="precompute: the spec declares augment"):
        precompute(data, _spec(), tmp_path / "b.zarr", Order(batch_size=100, seed=3), progress=False)
    assert not (tmp_path / "b.zarr").exists()


def test_normal_noise_is_standard_normal_and_counter_based():
    rows = np.repeat(np.arange(2000), 50)
    elems = np.tile(np.arange(50), 2000)
    z = normal_noise(1, 0, "v", rows, elems)
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    assert abs((np.abs(z) < 1).mean() - 0.6827) < 0.005  # the normal's central mass
    # any subset, in any order, gives the same numbers
    pick = np.random.default_rng(0).permutation(len(rows))[:500]
    np.testing.assert_array_equal(normal_noise(1, 0, "v", rows[pick], elems[pick]), z[pick])
    assert not np.array_equal(normal_noise(1, 1, "v", rows, elems), z)
    assert not np.array_equal(normal_noise(1, 0, "w", rows, elems), z)


def test_the_validation_view_of_a_split_carries_no_noise(data):
    train, val = Batches(data, _spec(), Order(batch_size=100, seed=3)).split(0.2)
    plain_train, plain_val = Batches(data, _spec(augment=None), Order(batch_size=100, seed=3)).split(0.2)
    assert val.spec.augment is None and train.spec.augment == _spec().augment
    np.testing.assert_array_equal(val[0][0]["input_png3d"], plain_val[0][0]["input_png3d"])
    assert not np.array_equal(train[0][0]["input_png3d"], plain_train[0][0]["input_png3d"])


def test_lstm_ee_noise_points_to_augment():
    config = {"vars_input_png3d": [GAUSS], "var_target_total": "trueE", "noise": ("gaussian", 0.1)}
    with pytest.warns(UserWarning, match=r"noise=.*not applied.*spec.replace\(augment="):
        spec = BatchSpec.from_lstm_ee(config)
    assert spec.augment is None
