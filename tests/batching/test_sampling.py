"""Order(sample=...): class-balanced and histogram-reweighted draws, deterministic in (seed, epoch)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.batching.order.sampling import Sampling
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.synthetic import PNG3D_VARS, make_dataset
from lstm_data.errors import OptionError, SchemaError
from lstm_data.io.ours.zarr import ZarrDataset

N = 21000  # 1000 of class 1, 20000 of class 0: 1:20


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    label = (np.arange(N) % 21 == 0).astype(np.float32)
    x = np.where(label == 1, rng.normal(1.0, 0.7, N), rng.normal(0.0, 1.0, N)).astype(np.float32)
    y = rng.uniform(0, 10, N).astype(np.float32)
    base = make_dataset(N, seed=1)
    return InMemoryDataset({"label": label, "x": x, "y": y, "row": np.arange(N, dtype=np.float32)},
                           {g: base.group(g) for g in base.groups})


SPEC = BatchSpec(inputs={"row": Scalars(["row"])}, targets={"label": Scalars(["label"])})


def _rows(b, epoch=None):
    return np.concatenate([b.rows_of(i, epoch) for i in range(len(b))])


def _tolerance(n: int, p: float, z: float = 5.0) -> float:
    """z standard deviations of a binomial count of n draws with probability p."""
    return z * math.sqrt(n * p * (1 - p))


@pytest.mark.parametrize("shuffle", [True, False])
def test_class_balanced_draws_a_1_to_20_dataset_1_to_1(data, shuffle):
    b = Batches(data, SPEC, Order(batch_size=500, seed=4, shuffle=shuffle, sample={"classes": "label"}))
    assert len(b) == N // 500  # 21000 draws: the rows of the data
    for epoch in (0, 1):
        rows = _rows(b, epoch)
        labels = data.scalar("label")[rows]
        assert b.draws(epoch) == {0: int((labels == 0).sum()), 1: int((labels == 1).sum())}
        assert abs(b.draws(epoch)[1] - N / 2) <= 1  # exact shares per epoch
        if shuffle:  # each batch is a random half-half mix: within binomial tolerance of B / 2
            for i in range(len(b)):
                k = float(b.batch(i, epoch)[1]["label"].sum())
                assert abs(k - 250) <= _tolerance(500, 0.5)
        # the minority class repeats (with replacement), the majority is thinned
        assert len(np.unique(rows[labels == 1])) <= 1000 < (labels == 1).sum()
        assert len(np.unique(rows[labels == 0])) < 20000
    np.testing.assert_array_equal(_rows(b, 1), _rows(Batches(data, SPEC, b.order), 1))  # same (seed, epoch)
    assert not np.array_equal(_rows(b, 0), _rows(b, 1))


def test_class_weights_and_epoch_size_without_replacement(data):
    sample = {"classes": "label", "class_weights": [3, 1], "replacement": False, "epoch_size": 4000}
    b = Batches(data, SPEC, Order(batch_size=256, seed=1, sample=sample))
    rows = _rows(b)
    assert len(rows) == 4000 and len(np.unique(rows)) == 4000  # each row at most once
    assert b.draws() == {0: 3000, 1: 1000}
    with pytest.raises(OptionError, match="class 1 has 1000 rows to draw but its share of an epoch is 2000"):
        Batches(data, SPEC, Order(seed=1, sample={**sample, "class_weights": [1, 1]}))


def test_histogram_reweighting_flat_in_one_variable(data):
    edges = np.linspace(-2, 2, 9)
    sample = {"vars": "x", "bins": [edges.tolist()], "epoch_size": 40000}
    b = Batches(data, SPEC, Order(batch_size=1000, seed=2, sample=sample))
    x = data.scalar("x")[_rows(b)]
    assert x.min() >= -2 and x.max() <= 2  # overflow discarded, as weaver-core
    counts, _ = np.histogram(x, edges)
    for c in counts:  # flat: each bin 1/8 of the draws, within binomial tolerance
        assert abs(c - 40000 / 8) <= _tolerance(40000, 1 / 8)
    # the source is far from flat: the test would fail without the reweighting
    src, _ = np.histogram(data.scalar("x"), edges)
    assert src.max() > 4 * src.min()


def test_reweighting_to_the_reference_class_in_two_variables(data):
    """target='ref' (weaver-core's reweight_method): class 1 drawn with class 0's (x, y) histogram."""
    bx, by = np.linspace(-1, 2, 4), np.linspace(0, 10, 3)
    sample = {"classes": "label", "vars": ["x", "y"], "bins": [bx.tolist(), by.tolist()], "target": "ref",
              "epoch_size": 60000}
    b = Batches(data, SPEC, Order(batch_size=1000, seed=3, sample=sample))
    rows = _rows(b)
    labels = data.scalar("label")[rows]
    ref, _, _ = np.histogram2d(data.scalar("x")[data.scalar("label") == 0],
                               data.scalar("y")[data.scalar("label") == 0], [bx, by])
    p = (ref / ref.sum()).reshape(-1)
    got, _, _ = np.histogram2d(data.scalar("x")[rows[labels == 1]], data.scalar("y")[rows[labels == 1]], [bx, by])
    m = int((labels == 1).sum())
    assert m == 30000
    for g, q in zip(got.reshape(-1), p):
        assert abs(g - m * q) <= _tolerance(m, q)
    assert b.draws() == {0: 30000, 1: 30000}


def test_explicit_target_histogram_and_clip(data):
    sample = {"vars": ["y"], "bins": [[0, 5, 8]], "target": [1, 3], "overflow": "clip", "epoch_size": 20000}
    y = data.scalar("y")[_rows(Batches(data, SPEC, Order(batch_size=1000, seed=5, sample=sample)))]
    k = int((y >= 5).sum())  # y in [8, 10) is clipped into the last bin
    assert abs(k - 15000) <= _tolerance(20000, 0.75)


def test_block_shuffle_on_disk_draws_inside_windows_and_resumes(data, tmp_path):
    data.to_zarr(tmp_path / "d.zarr")
    disk = ZarrDataset(tmp_path / "d.zarr")
    order = Order(batch_size=500, seed=6, shuffle="block", block_rows=1000, window_rows=3000,
                  sample={"classes": "label"}, read_ahead=False)
    b = Batches(disk, SPEC, order)
    for epoch in (0, 1):
        rows = _rows(b, epoch)
        assert len(rows) == N and abs(b.draws(epoch)[1] - N / 2) <= 21  # one rounding per window at most
        for i in range(len(b)):  # every batch's label column is the labels of its rows
            np.testing.assert_array_equal(b.batch(i, epoch)[0]["row"][:, 0], b.rows_of(i, epoch))
    it = b.iter()
    [next(it) for _ in range(5)]
    state = json.loads(json.dumps(b.state_dict()))
    again = Batches(disk, SPEC, order)
    again.load_state_dict(state)
    rest = [batch[0]["row"][:, 0] for batch in again]
    np.testing.assert_array_equal(np.concatenate(rest), _rows(b, 0)[5 * 500:])


def test_sampled_shards_have_equal_steps_and_resume_on_another_world(data):
    order = Order(batch_size=400, seed=7, sample={"classes": "label", "epoch_size": 10000})
    full = Batches(data, SPEC, order)
    shards = [Batches(data, SPEC, order).shard(r, 3) for r in range(3)]
    assert {len(s) for s in shards} == {len(full) // 3}
    taken = np.concatenate([s.parent_indices(1) for s in shards])
    assert len(np.unique(taken)) == len(taken) == 24
    for s in shards:
        it = s.iter()
        [next(it) for _ in range(2)]
    new = [Batches(data, SPEC, order).shard(r, 2) for r in range(2)]
    for s in new:
        with pytest.warns(UserWarning, match="so 1 batch is left out of this epoch"):  # 19 batches left
            s.load_state_dict(shards[0].state_dict())
    seen = [int(p) for s in shards for p in s.parent_indices(0)[:2]]
    seen += [int(p) for s in new for p in s.parent_indices(0)]
    assert len(set(seen)) == len(seen) == 24  # every batch of the epoch once, but the new world's remainder


def test_sample_round_trips_and_precompute_refuses_it(data, tmp_path):
    from lstm_data import precompute
    order = Order(batch_size=1000, seed=8, sample={"classes": "label", "vars": ["x"], "bins": [[-1, 0, 1]]})
    path = tmp_path / "o.toml"
    path.write_text(order.to_toml())
    assert Order.from_toml(path) == order
    out = tmp_path / "store.zarr"
    with pytest.raises(OptionError, match="sample"):  # a store holds one epoch: its draws would repeat
        precompute(data, SPEC, out, order)
    assert not out.exists()


def test_bad_sample_tables_are_named(data):
    with pytest.raises(OptionError, match="did you mean 'classes'"):
        Order(sample={"clases": "label"})
    with pytest.raises(OptionError, match="needs classes= .* or vars="):
        Order(sample={"replacement": False})
    with pytest.raises(OptionError, match="one list of bin edges per variable"):
        Order(sample={"vars": ["x", "y"], "bins": [[0, 1]]})
    with pytest.raises(OptionError, match="increasing"):
        Order(sample={"vars": ["x"], "bins": [[1, 0]]})
    with pytest.raises(OptionError, match="needs sample.classes"):
        Order(sample={"vars": ["x"], "bins": [[0, 1]], "target": "ref"})
    with pytest.raises(SchemaError, match="no scalar column 'lbl'"):
        Batches(data, SPEC, Order(seed=1, sample={"classes": "lbl"}))
    with pytest.raises(SchemaError, match="not an integer class label"):
        Batches(data, SPEC, Order(seed=1, sample={"classes": "x"}))
    with pytest.raises(OptionError, match="2 classes"):
        Batches(data, SPEC, Order(seed=1, sample={"classes": "label", "class_weights": [1, 2, 3]}))
    with pytest.raises(OptionError, match="cache='ram'"):
        Batches(data, SPEC, Order(seed=1, cache="ram", sample={"classes": "label"}))
    with pytest.raises(OptionError, match="max_elements"):
        Batches(data, BatchSpec(inputs={"p": Ragged(PNG3D_VARS[:1], max_len=4)}),
                Order(seed=1, bucket_by="p", max_elements=64, sample={"classes": "label"}))
    assert isinstance(Sampling(data, np.arange(10), {"classes": "label"}).classes, np.ndarray)


def test_a_pickled_copy_draws_the_same_rows_without_carrying_the_probabilities(data):
    import pickle
    b = Batches(data, SPEC, Order(batch_size=500, seed=4, sample={"classes": "label", "vars": ["x"],
                                                                 "bins": [[-2, 0, 2]]}))
    copy = pickle.loads(pickle.dumps(b))
    np.testing.assert_array_equal(_rows(copy, 3), _rows(b, 3))
    assert "_sampling" not in b.__getstate__()


def test_threshold_caps_as_weaver_core_flat(data):
    """threshold: full bins thinned to the percentile, sparse bins keep their natural share."""
    edges = np.linspace(-3, 3, 13)
    counts, _ = np.histogram(data.scalar("x")[data.scalar("label") == 0], edges)
    kept = counts[counts > np.median(counts[counts > 0]) * 0.01]
    ref = np.percentile(kept, 30)
    goal = np.minimum(counts, ref)  # weaver-core: wgt = clip(ref / hist, 0, 1)
    sample = {"classes": "label", "class_weights": [1, 0], "vars": ["x"], "bins": [edges.tolist()],
              "threshold": 30, "epoch_size": 50000}
    b = Batches(data, SPEC, Order(batch_size=1000, seed=9, sample=sample))
    got, _ = np.histogram(data.scalar("x")[_rows(b)], edges)
    p = goal / goal.sum()
    for g, q in zip(got, p):
        assert abs(g - 50000 * q) <= _tolerance(50000, q)
    assert got[0] < got[6] / 3  # a sparse edge bin is not raised to the others
    with pytest.raises(OptionError, match="percentile in"):
        Order(sample={**sample, "threshold": 100})
