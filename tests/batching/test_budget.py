"""Element-budget batches: ``Order(bucket_by=F, max_elements=N)``."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Ragged, Scalars, open_batches
from lstm_data.batching.order.budget import block_count, caps_of, pack, split_largest
from lstm_data.batching.order.block_plans import BlockArrangement, block_plan
from lstm_data.batching.order.options import Order
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset
from lstm_data.errors import OptionError
from lstm_data.io.ours.zarr import ZarrDataset
from lstm_data.store.write import precompute
from tests.helpers import assert_same_batch

N_ROWS = 6000
MAX_LEN = 20


@pytest.fixture(scope="module")
def data():
    return make_dataset(N_ROWS, seed=5, png_mean=2.0)


@pytest.fixture(scope="module")
def disk(data, tmp_path_factory):
    path = tmp_path_factory.mktemp("budget") / "d.zarr"
    data.to_zarr(path, chunk_bytes=32 * 1024)
    return ZarrDataset(path)


def _spec(multiple: int | None = None) -> BatchSpec:
    return BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                             "input_png3d": Ragged(PNG3D_VARS[:3], max_len=MAX_LEN, lengths=True)},
                     targets={"target_total": Scalars(["trueE"])}, pad_to_multiple_of=multiple)


def _order(shuffle, budget=1024, **kw) -> Order:
    return Order(batch_size=512, seed=3, shuffle=shuffle, bucket_by="input_png3d", max_elements=budget,
                 **kw)


def _check_epoch(b: Batches, epoch: int, budget: int) -> list[np.ndarray]:
    """Build every batch of ``epoch``: each within the budget; return the rows of each."""
    rows = []
    for i in range(len(b)):
        inputs, targets, weights = b.batch(i, epoch)
        x = inputs["input_png3d"]
        assert 1 <= x.shape[0] <= 512
        assert x.shape[0] * max(x.shape[1], 1) <= budget or x.shape[0] == 1
        r = b.rows_of(i, epoch)
        assert len(r) == x.shape[0] == len(targets["target_total"])
        rows.append(r)
    return rows


@pytest.mark.parametrize("shuffle", [True, False, "block"])
def test_budget_batches_cover_every_row_once_within_budget(data, disk, shuffle):
    source = disk if shuffle == "block" else data
    kw = dict(window_rows=1500, block_rows=300) if shuffle == "block" else {}
    b = Batches(source, _spec(), _order(shuffle, **kw))
    n = len(b)
    plain = Batches(data, _spec(), Order(batch_size=256, seed=3, shuffle=False))
    for epoch in (0, 1, 2):
        rows = _check_epoch(b, epoch, 1024)
        assert len(rows) == n == len(b)  # the same count every epoch, known before it
        assert np.array_equal(np.sort(np.concatenate(rows)), np.arange(N_ROWS))
    # the padded batches hold the rows' data
    r = b.rows_of(3, 1)
    got = b.batch(3, 1)[0]["input_png3d"]
    want = plain.builder.build(r)[0]["input_png3d"]
    assert np.array_equal(got, want[:, :got.shape[1]], equal_nan=True)
    # short rows travel in large batches, long ones in small ones
    lens = np.minimum(np.diff(data.ragged("png")[1]), MAX_LEN)
    sizes = np.array([len(b.rows_of(i)) for i in range(n)])
    longest = np.array([lens[b.rows_of(i)].max() for i in range(n)])
    assert sizes[longest <= 2].min() > sizes[longest >= 10].max()


def test_budget_order_is_a_function_of_seed_and_epoch(data):
    a = Batches(data, _spec(), _order(True))
    b = Batches(data, _spec(), _order(True))
    other = Batches(data, _spec(), _order(True).replace(seed=4))
    for epoch in (0, 1):
        for i in range(len(a)):
            assert np.array_equal(a.rows_of(i, epoch), b.rows_of(i, epoch))
    assert not all(np.array_equal(a.rows_of(i, 0), a.rows_of(i, 1)) for i in range(len(a)))
    assert not all(np.array_equal(a.rows_of(i, 0), other.rows_of(i, 0)) for i in range(len(a)))


def test_budget_counts_padded_width_after_pad_to_multiple_of(data):
    b = Batches(data, _spec(multiple=8), _order(True, budget=800))
    for i in range(len(b)):
        x = b[i][0]["input_png3d"]
        assert x.shape[1] % 8 == 0 or x.shape[1] == MAX_LEN
        assert x.shape[0] * max(x.shape[1], 1) <= 800 or x.shape[0] == 1


def test_row_longer_than_budget_is_its_own_batch(data):
    b = Batches(data, _spec(), _order(True, budget=5))
    lens = np.minimum(np.diff(data.ragged("png")[1]), MAX_LEN)
    for i in range(len(b)):
        r = b.rows_of(i)
        if lens[r].max() > 5:
            assert len(r) == 1
        assert len(r) * max(1, lens[r].max()) <= 5 or len(r) == 1


def test_budget_with_cache_ram_and_split(data):
    b = Batches(data, _spec(), _order(True, cache="ram"))
    first = [b.rows_of(i, 0) for i in range(len(b))]
    b.set_epoch(1)
    later = [b.rows_of(i) for i in range(len(b))]
    assert sorted(map(tuple, first)) == sorted(map(tuple, later))
    train, val = b.split(0.25)
    assert len(np.concatenate([train.rows_of(i) for i in range(len(train))])) == train.n_rows


def test_greedy_cut_is_the_fewest_batches():
    """Brute force over every partition of small sets: the sorted greedy cut is the minimum."""
    rng = np.random.default_rng(0)
    for _ in range(25):
        widths = rng.integers(0, 7, size=int(rng.integers(1, 6)))
        budget, bs = int(rng.integers(3, 15)), int(rng.integers(1, 5))
        greedy = len(pack(caps_of(np.sort(widths), budget, bs))) - 1
        best = len(widths)
        for labels in itertools.product(range(len(widths)), repeat=len(widths)):
            ok = all(np.sum(np.array(labels) == g) <= caps_of([max(widths[np.array(labels) == g])], budget, bs)[0]
                     for g in set(labels))
            if ok:
                best = min(best, len(set(labels)))
            if best < greedy:
                break
        assert greedy == best, (widths, budget, bs)


def test_block_bound_holds_for_any_window_composition():
    rng = np.random.default_rng(1)
    widths = np.minimum(rng.geometric(0.3, size=5000), 25)
    bounds = np.append(np.arange(0, 5000, 137), 5000)
    for window_rows in (400, 1000, 2500):
        windows = min(len(bounds) - 1, -(-5000 // window_rows))
        bound = block_count(widths, 600, 128, windows)
        for epoch in range(20):
            plan = block_plan(BlockArrangement(bounds, window_rows), 7, epoch)
            assert len(plan.windows.starts) - 1 <= windows
            count = sum(len(pack(caps_of(np.sort(widths[plan.order[lo:hi]]), 600, 128))) - 1
                        for lo, hi in zip(plan.windows.starts[:-1], plan.windows.starts[1:]))
            assert count <= bound <= 5000


def test_split_largest_reaches_the_count():
    starts = np.array([0, 10, 11, 30])
    out = split_largest(starts, 6)
    assert len(out) == 7 and out[0] == 0 and out[-1] == 30
    assert np.all(np.diff(out) >= 1)
    with pytest.raises(RuntimeError):
        split_largest(np.array([0, 1, 2]), 3)


def test_budget_options_are_checked_and_round_trip(tmp_path, data):
    order = _order(True, budget=2048)
    path = tmp_path / "o.toml"
    path.write_text(order.to_toml())
    assert Order.from_toml(path) == order
    with pytest.raises(OptionError, match="max_elements"):
        Order(max_elements=0)
    with pytest.raises(OptionError, match="needs bucket_by"):
        Batches(data, _spec(), Order(max_elements=100))
    with pytest.raises(OptionError, match="drop_last"):
        Batches(data, _spec(), _order(True, drop_last=True))


def test_budget_batches_precompute_round_trip(data, tmp_path):
    order = _order(True, budget=2048)
    out = tmp_path / "b.zarr"
    precompute(data, _spec(), out, order, progress=False)
    stored = open_batches(out, order=order, permute=False)
    b = Batches(data, _spec(), order)
    assert len(stored) == len(b)
    for i in (0, len(b) // 2, len(b) - 1):
        assert_same_batch(stored[i], b[i])


def test_budget_through_the_torch_adapter(data):
    torch = pytest.importorskip("torch")
    from lstm_data.adapters.torch import TorchBatches

    b = Batches(data, _spec(), _order(True))
    ds = TorchBatches(b)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, sampler=ds.sampler)
    seen = [x[0]["input_png3d"].shape for x in loader]
    assert len(seen) == len(b)
    assert all(s[0] * max(s[1], 1) <= 1024 or s[0] == 1 for s in seen)


def test_batch_sizes_and_shards_of_budget_batches(data):
    b = Batches(data, _spec(), _order(True))
    for epoch in (0, 1):
        sizes = b.batch_sizes(epoch)
        assert len(sizes) == len(b) and sizes.sum() == N_ROWS
        assert all(sizes[i] == len(b.rows_of(i, epoch)) for i in range(len(b)))
    fixed = Batches(data, _spec(), Order(batch_size=256, seed=3))
    assert fixed.batch_sizes().tolist() == [len(fixed.rows_of(i)) for i in range(len(fixed))]
    shards = [b.shard(r, 3) for r in range(3)]
    assert len({len(s) for s in shards}) == 1
    seen = np.concatenate([s.rows_of(i) for s in shards for i in range(len(s))])
    assert len(np.unique(seen)) == len(seen)


def test_budget_through_keras(data):
    pytest.importorskip("keras")
    from lstm_data.adapters.keras import KerasBatches

    b = Batches(data, _spec(), _order(True))
    k = KerasBatches(b)
    assert len(k) == len(b)
    x = k[len(k) - 1][0]["input_png3d"]
    assert x.shape[0] * max(x.shape[1], 1) <= 1024 or x.shape[0] == 1


def test_budget_refuses_sampling(data):
    with pytest.raises(OptionError, match="sample"):
        Batches(data, _spec(), _order(True, sample={"vars": ["trueE"], "bins": [[0.0, 50.0, 100.0]]}))
