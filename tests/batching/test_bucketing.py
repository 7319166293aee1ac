"""Length-bucketed batches: ``Batches(..., bucket_by=..., bucket_window=..., pad_to_multiple_of=...)``."""
from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.batching.order.bucketing import bucketed_order
from lstm_data.data.synthetic import PNG2D_VARS, PNG3D_VARS, SLICE_VARS, make_dataset

EXAMPLE_SPEC = "examples/numu_v3.toml"


@pytest.fixture(scope="module")
def data():
    return make_dataset(3000, seed=11)


def _spec(max_len: int = 20, **ragged) -> BatchSpec:
    return BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                             "input_png3d": Ragged(PNG3D_VARS[:4], max_len=max_len, lengths=True,
                                                   **{"pad_value": np.nan, **ragged}),
                             "input_png2d": Ragged(PNG2D_VARS[:3], max_len=6, pad_value=np.nan)},
                     targets={"target_total": Scalars(["trueE"])})


def _lens(data, group: str = "png") -> np.ndarray:
    return np.diff(data.ragged(group)[1])


def _epoch_rows(b: Batches, epoch: int) -> list[np.ndarray]:
    return [b.rows_of(i, epoch) for i in range(len(b))]


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [True, False])
def test_every_row_once_per_epoch(data, drop_last, shuffle):
    plain = Batches(data, _spec(), Order(batch_size=128, seed=5, drop_last=drop_last, shuffle=shuffle))
    b = Batches(data, _spec(), Order(batch_size=128, seed=5, drop_last=drop_last, shuffle=shuffle,
                                     bucket_by="input_png3d", bucket_window=4))
    assert len(b) == len(plain)
    for epoch in (0, 1):
        rows = np.concatenate(_epoch_rows(b, epoch))
        assert len(rows) == len(np.unique(rows))
        # the same rows as without bucketing: the short last batch (or the dropped rows) is unchanged
        want = np.concatenate(_epoch_rows(plain, epoch))
        np.testing.assert_array_equal(np.sort(rows), np.sort(want))
        if not drop_last:
            np.testing.assert_array_equal(b.rows_of(len(b) - 1, epoch), plain.rows_of(len(b) - 1, epoch))


def test_reproducible_from_seed_and_epoch_and_epochs_differ(data):
    def make():
        return Batches(data, _spec(), Order(batch_size=100, seed=3, bucket_by="input_png3d", bucket_window=5))
    a, b = make(), make()
    b.set_epoch(1)
    for x, y in zip(_epoch_rows(a, 1), _epoch_rows(b, 1)):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.batch(3, epoch=1)[0]["input_png3d"], b[3][0]["input_png3d"])
    assert not np.array_equal(np.concatenate(_epoch_rows(a, 0)), np.concatenate(_epoch_rows(a, 1)))
    other = Batches(data, _spec(), Order(batch_size=100, seed=4, bucket_by="input_png3d", bucket_window=5))
    assert not np.array_equal(np.concatenate(_epoch_rows(a, 0)), np.concatenate(_epoch_rows(other, 0)))
    # unpickled copies (worker processes) make the same order
    c = pickle.loads(pickle.dumps(a))
    for x, y in zip(_epoch_rows(a, 2), _epoch_rows(c, 2)):
        np.testing.assert_array_equal(x, y)


def test_windows_are_sorted_by_length_with_stable_ties():
    order = np.array([5, 3, 0, 1, 4, 2, 7, 6], dtype=np.intp)
    lengths = np.array([2, 1, 1, 0, 2, 1, 9, 9])
    # windows of 2 batches of 2 rows: [5 3 0 1] and [4 2 7 6]; ties (5 and 1) keep the shuffled order
    np.testing.assert_array_equal(bucketed_order(order, lengths, 2, 2, None), [3, 5, 1, 0, 2, 4, 7, 6])
    # the short tail (here row 9's position) is not sorted and stays last
    order = np.append(order, [8]).astype(np.intp)
    lengths = np.append(lengths, [0])
    out = bucketed_order(order, lengths, 2, 2, np.random.default_rng(0))
    assert out[-1] == 8 and sorted(out.tolist()) == list(range(9))
    # the batches of the sorted windows, permuted
    assert {tuple(p) for p in out[:-1].reshape(4, 2).tolist()} == {(3, 5), (1, 0), (2, 4), (7, 6)}


@pytest.mark.parametrize("multiple", [None, 4])
def test_width_is_the_longest_row_rounded_and_capped(data, multiple):
    b = Batches(data, _spec(max_len=9).replace(pad_to_multiple_of=multiple),
                Order(batch_size=64, seed=1, bucket_by="input_png3d", bucket_window=8))
    lens = _lens(data)
    widths = set()
    for i in range(len(b)):
        rows = b.rows_of(i)
        x = b[i][0]
        longest = int(lens[rows].max())
        want = longest if multiple is None else -(-longest // multiple) * multiple
        assert x["input_png3d"].shape == (len(rows), min(want, 9), 4)
        np.testing.assert_array_equal(x["input_png3d_lengths"], np.minimum(lens[rows], 9))
        assert x["input_png2d"].shape == (len(rows), 6, 3)  # another group keeps its fixed width
        widths.add(x["input_png3d"].shape[1])
    if multiple is not None:
        assert widths <= {4, 8, 9}
    assert len(widths) > 1


def test_padded_values_equal_the_unbucketed_rows(data):
    plain = Batches(data, _spec(), Order(batch_size=64, shuffle=False))
    b = Batches(data, _spec().replace(pad_to_multiple_of=3),
                Order(batch_size=64, seed=2, bucket_by="input_png3d", bucket_window=3))
    full = plain.builder.build(np.arange(len(data)))[0]
    for i in (0, 5, len(b) - 1):
        rows = b.rows_of(i)
        x = b[i][0]["input_png3d"]
        ref = full["input_png3d"][rows]
        np.testing.assert_array_equal(x, ref[:, :x.shape[1]])
        assert np.isnan(ref[:, x.shape[1]:]).all()  # only padding was cut


def test_signature_says_the_bucketed_group_is_per_batch(data):
    spec = _spec()
    assert spec.signature()["input_png3d"].shape == (None, 20, 4)
    b = Batches(data, spec, Order(batch_size=64, bucket_by="input_png3d"))
    sig = b.signature()
    assert sig["input_png3d"].shape == (None, None, 4)
    assert sig["input_png2d"].shape == (None, 6, 3)
    assert b.spec.signature() == sig
    assert spec.signature()["input_png3d"].shape == (None, 20, 4)  # the given spec is unchanged


def test_padding_per_real_element_drops_on_numu_v3(data):
    # the example spec with max_len 20 for png3d: a deterministic count, not a timing
    ds = make_dataset(20000, seed=1)
    spec = BatchSpec.from_toml(EXAMPLE_SPEC)
    inputs = dict(spec.inputs)
    inputs["input_png3d"] = dataclasses.replace(inputs["input_png3d"], max_len=20)
    spec = BatchSpec(inputs=inputs, targets=spec.targets)
    lens = np.minimum(_lens(ds), 20)

    def ratio(multiple=None, **order) -> float:
        b = Batches(ds, spec.replace(pad_to_multiple_of=multiple), Order(batch_size=1024, seed=3, **order))
        widths = np.array([b[i][0]["input_png3d"].shape[1] for i in range(len(b))])
        sizes = np.array([len(b.rows_of(i)) for i in range(len(b))])
        real = lens.sum()
        return float((widths * sizes).sum() - real) / real

    without = ratio()
    assert without == pytest.approx((20 * len(ds) - lens.sum()) / lens.sum())
    assert without >= 3.5  # 20 slots for about 4.2 prongs on this synthetic data (the issue's ~3 gives >= 5)
    assert ratio(bucket_by="input_png3d") <= 0.3
    assert ratio(4, bucket_by="input_png3d") <= 1.3


def test_split_and_cache(data):
    b = Batches(data, _spec(), Order(batch_size=100, seed=6, bucket_by="input_png3d", bucket_window=4, cache="ram"))
    train, val = b.split(0.25)
    assert train.signature()["input_png3d"].shape == (None, None, 4)
    lens = _lens(data)
    for part in (train, val):
        rows = np.concatenate(_epoch_rows(part, 0))
        assert len(rows) == len(np.unique(rows)) == part.n_rows
        for i in range(len(part) - 1):
            assert part[i][0]["input_png3d"].shape[1] == min(20, lens[part.rows_of(i)].max())
    val_rows = [val.rows_of(i) for i in range(len(val))]
    assert all(np.array_equal(x, val.rows_of(i, 3)) for i, x in enumerate(val_rows))  # not shuffled per epoch
    first = train[0]
    with pytest.raises(ValueError):
        first[0]["input_png3d"][...] = 0  # cached batches are read-only
    train.on_epoch_end()  # cache="ram": the same batches, in another order
    epoch1 = {tuple(train.rows_of(i)) for i in range(len(train))}
    assert epoch1 == {tuple(train.rows_of(i, 0)) for i in range(len(train))}


@pytest.mark.parametrize("order, spec, match", [
    (dict(bucket_by="input_png"), {}, r"did you mean 'input_png3d' or 'input_png2d'"),
    (dict(bucket_by="input_slice"), {}, "Ragged output"),
    (dict(bucket_by="input_png3d", bucket_window=0), {}, "bucket_window must be a positive int"),
    (dict(bucket_by="input_png3d", bucket_window=2.0), {}, "bucket_window must be a positive int"),
    (dict(bucket_by="input_png3d"), dict(pad_to_multiple_of=0), "pad_to_multiple_of must be a positive int"),
])
def test_bad_arguments_are_named(data, order, spec, match):
    with pytest.raises(ValueError, match=match):
        Batches(data, _spec().replace(**spec), Order(batch_size=64, **order))


def test_kernel_width_rule_on_both_backends(backend, data):
    """``multiple_of`` of a BatchGather job: compiled and twin agree (and match the on-disk builder rule)."""
    values, offsets = data.ragged("png")
    lens = np.diff(offsets)
    rows = np.flatnonzero(lens == 5)[:7]
    for max_len, fixed, multiple, want in [(None, True, 4, 8), (20, False, 4, 8), (6, False, 4, 6),
                                           (20, True, 4, 20), (20, False, None, 5), (None, True, 5, 5)]:
        gather = backend.BatchGather([dict(values=values, offsets=offsets, max_len=max_len, fixed=fixed,
                                           multiple_of=multiple)])
        (batch, got_lens), = gather(rows)[0]
        assert batch.shape == (7, want, values.shape[1]), (max_len, fixed, multiple)
        np.testing.assert_array_equal(got_lens, np.minimum(5, want))
        assert np.isnan(batch[:, 5:]).all()
    with pytest.raises(ValueError, match="multiple_of must be a positive int or None"):
        backend.BatchGather([dict(values=values, offsets=offsets, multiple_of=0)])


def test_torch_dataloader(data):
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader

    from lstm_data.adapters.torch import TorchBatches

    b = Batches(data, _spec().replace(nan_to=0.0),
                Order(batch_size=256, seed=8, bucket_by="input_png3d", bucket_window=4))
    loader = DataLoader(TorchBatches(b), batch_size=None, num_workers=2)
    seen = list(loader)
    assert len(seen) == len(b)
    for i, (x, _, _) in enumerate(seen):
        ref = b[i][0]["input_png3d"]
        assert x["input_png3d"].dtype == torch.float32
        np.testing.assert_array_equal(x["input_png3d"].numpy(), ref)


@pytest.mark.slow
def test_keras_lstm_fit(data):
    keras = pytest.importorskip("keras")
    from lstm_data.adapters.keras import KerasBatches, keras_inputs

    spec = BatchSpec(inputs={"input_png3d": Ragged(PNG3D_VARS[:4], max_len=20)},
                     targets={"target_total": Scalars(["trueE"])})
    b = Batches(data, spec.replace(nan_to=0.0, pad_to_multiple_of=2),
                Order(batch_size=256, seed=8, bucket_by="input_png3d", bucket_window=4))
    inputs = keras_inputs(b.spec)
    assert tuple(inputs["input_png3d"].shape) == (None, None, 4)
    h = keras.layers.LSTM(8)(keras.layers.Masking(0.0)(inputs["input_png3d"]))
    model = keras.Model(inputs=inputs, outputs={"target_total": keras.layers.Dense(1, name="target_total")(h)})
    model.compile(optimizer="adam", loss={"target_total": "mse"})
    hist = model.fit(KerasBatches(b), epochs=2, shuffle=False, verbose=0)
    assert np.isfinite(hist.history["loss"]).all() and b.epoch == 2
