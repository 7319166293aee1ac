"""Batches: orders, epochs, splits, weights, NaN masks, caches, threads, block shuffle on disk."""
from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars, kernels
from lstm_data.data.synthetic import PNG2D_VARS, PNG3D_VARS, SLICE_VARS, make_dataset
from tests.helpers import assert_same_arrays

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

SPEC = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                         "input_png3d": Ragged(PNG3D_VARS[:5], max_len=6, sort_by="png.calE",
                                               lengths=True, pad_value=np.nan),
                         "input_png2d": Ragged(PNG2D_VARS, pad_value=np.nan)},
                 targets={"target_total": Scalars(["trueE"])})


DS_ROWS, DS_SEED = 3000, 7  # the ``ds`` fixture (tests/conftest.py)


def _rows(b: Batches) -> np.ndarray:
    return np.concatenate([b.rows_of(i) for i in range(len(b))])


def _reference(ds, rows):
    """The batch built column by column with the kernel and plain numpy (independent path)."""
    v3, o3 = ds.ragged("png")
    png3d, lens = kernels.pad_ragged(v3, o3, rows, max_len=6, columns=[PNG3D_VARS.index(v) for v in PNG3D_VARS[:5]],
                                     sort_by=PNG3D_VARS.index("png.calE"))
    v2, o2 = ds.ragged("png2d")
    png2d, _ = kernels.pad_ragged(v2, o2, rows)
    sl = np.stack([ds.scalar(s)[rows] for s in SLICE_VARS], axis=1)
    return {"input_slice": sl, "input_png3d": png3d, "input_png3d_lengths": lens, "input_png2d": png2d}


def test_len_and_last_batch(ds):
    assert len(Batches(ds, SPEC, Order(batch_size=1000))) == 3
    b = Batches(ds, SPEC, Order(batch_size=700, seed=0))
    assert len(b) == 5 and len(b.rows_of(4)) == 3000 - 4 * 700
    assert len(Batches(ds, SPEC, Order(batch_size=700, drop_last=True))) == 4
    with pytest.raises(IndexError, match="out of range"):
        b[5]
    assert b[-1][0]["input_slice"].shape == (200, len(SLICE_VARS))


def test_batch_content_matches_an_independent_build(ds):
    b = Batches(ds, SPEC, Order(batch_size=512, seed=4))
    x, y, w = b[3]
    rows = b.rows_of(3)
    assert_same_arrays(x, _reference(ds, rows))
    np.testing.assert_array_equal(y["target_total"][:, 0], ds.scalar("trueE")[rows])
    np.testing.assert_array_equal(w["target_total"], np.ones(512, dtype=np.float32))


def test_shuffled_order_is_a_reproducible_permutation_per_epoch(ds):
    a, b = Batches(ds, SPEC, Order(batch_size=256, seed=1)), Batches(ds, SPEC, Order(batch_size=256, seed=1))
    assert sorted(_rows(a)) == list(range(3000))
    np.testing.assert_array_equal(_rows(a), _rows(b))
    first = _rows(a)
    a.on_epoch_end()
    assert a.epoch == 1 and not np.array_equal(first, _rows(a))
    b.set_epoch(1)
    np.testing.assert_array_equal(_rows(a), _rows(b))
    assert not np.array_equal(first, _rows(Batches(ds, SPEC, Order(batch_size=256, seed=2))))
    np.testing.assert_array_equal(_rows(Batches(ds, SPEC, Order(batch_size=256, shuffle=False))), np.arange(3000))
    assert Batches(ds, SPEC).seed == 0  # no seed: 0, the command line's default too


def test_without_a_seed_every_run_and_process_reads_seed_0(ds, tmp_path):
    """Batches, their splits and shards without a seed are those of seed 0, in any process, as
    lstm-data precompute without --seed writes them."""
    import subprocess
    import sys

    unseeded, zero = Batches(ds, SPEC, Order(batch_size=256)), Batches(ds, SPEC, Order(batch_size=256, seed=0))
    assert unseeded.order == zero.order and unseeded.order.seed == 0
    np.testing.assert_array_equal(_rows(unseeded), _rows(zero))
    np.testing.assert_array_equal(unseeded.split(0.2)[1].rows_of(0), zero.split(0.2)[1].rows_of(0))
    np.testing.assert_array_equal(unseeded.shard(1, 2).rows_of(0), zero.shard(1, 2).rows_of(0))
    code = ("import sys, numpy as np, lstm_data; ds = lstm_data.open(sys.argv[1]);"
            "spec = lstm_data.BatchSpec.from_toml(sys.argv[2]);"
            "b = lstm_data.Batches(ds, spec, lstm_data.Order(batch_size=256));"
            "print(b.split(0.2)[0].rows_of(0)[:8].tolist())")
    runs = {subprocess.run([sys.executable, "-c", code, str(EXAMPLES / "numu_v3.csv.xz"),
                            str(EXAMPLES / "numu_v3.toml")], capture_output=True, text=True,
                           check=True, cwd=ROOT).stdout for _ in range(2)}
    assert len(runs) == 1


def test_weights_column_and_array(ds):
    b = Batches(ds, SPEC, Order(batch_size=300, seed=0, weights="calE"))
    np.testing.assert_array_equal(b[2][2]["target_total"], ds.scalar("calE")[b.rows_of(2)])
    arr = np.arange(3000, dtype=np.float64)
    b = Batches(ds, SPEC, Order(batch_size=300, seed=0, weights=arr))
    np.testing.assert_array_equal(b[1][2]["target_total"], arr[b.rows_of(1)].astype(np.float32))
    with pytest.raises(ValueError, match="one value per dataset row"):
        Batches(ds, SPEC, Order(weights=np.ones(5)))


def test_nan_to_masks_inputs_not_targets():
    ds = make_dataset(400, seed=2)
    values, _ = ds.ragged("png2d")
    values[::7, 0] = np.nan  # NaN in data, besides the NaN padding
    ds.scalar("calE")[::5] = np.nan
    ds.scalar("trueE")[::3] = np.nan
    x, y, _ = Batches(ds, SPEC.replace(nan_to=-12345.5), Order(batch_size=400, shuffle=False))[0]
    for k in ("input_slice", "input_png3d", "input_png2d"):
        assert not np.isnan(x[k]).any(), k
    assert (x["input_png2d"] == -12345.5).any() and (x["input_slice"][:, 0] == -12345.5).sum() == 80
    assert np.isnan(y["target_total"]).sum() == 134
    plain, _, _ = Batches(ds, SPEC, Order(batch_size=400, shuffle=False))[0]
    np.testing.assert_array_equal(np.where(np.isnan(plain["input_png2d"]), -12345.5, plain["input_png2d"]),
                                  x["input_png2d"])


def test_split_is_lstm_ee_like_and_disjoint(ds):
    train, val = Batches(ds, SPEC, Order(batch_size=500, seed=3)).split(0.25)
    assert (train.n_rows, val.n_rows) == (2250, 750)
    rt, rv = _rows(train), _rows(val)
    assert len(np.intersect1d(rt, rv)) == 0 and len(np.union1d(rt, rv)) == 3000
    assert val.shuffle is False and train.shuffle is True
    train2, val2 = Batches(ds, SPEC, Order(batch_size=500, seed=99)).split(0.25, seed=3)
    np.testing.assert_array_equal(np.sort(_rows(val2)), np.sort(rv))
    t, v = Batches(ds, SPEC).split(100)
    assert (t.n_rows, v.n_rows) == (2900, 100)
    with pytest.raises(ValueError, match="larger than"):
        Batches(ds, SPEC).split(5000)


def test_ram_cache_keeps_batches_and_permutes_their_order(ds):
    b = Batches(ds, SPEC, Order(batch_size=1000, seed=5, cache="ram"))
    first = [b[i] for i in range(3)]
    key = lambda batch: id(batch[0]["input_png3d"])  # noqa: E731 - the cached array itself
    assert key(b[1]) == key(first[1])
    b.on_epoch_end()
    again = [b[i] for i in range(3)]
    assert {key(x) for x in again} == {key(x) for x in first}


def test_ram_cache_cannot_be_edited_through_a_batch(ds):
    b = Batches(ds, SPEC, Order(batch_size=1000, seed=5, cache="ram"))
    inputs, targets, weights = b[0]
    kept = inputs["input_png3d"].copy()
    with pytest.raises(ValueError, match="read-only"):
        inputs["input_png3d"] -= 1.0  # an in-place normalisation
    inputs["input_png3d"] = np.zeros(1)  # rebinding a key changes this dict only
    del targets[next(iter(targets))]
    again = b[0]
    np.testing.assert_array_equal(again[0]["input_png3d"], kept)
    assert list(again[1]) == list(SPEC.targets) and again[2]
    assert not again[0]["input_png3d"].flags.writeable
    assert Batches(ds, SPEC, Order(batch_size=1000, seed=5))[0][0]["input_png3d"].flags.writeable


def test_threads_give_the_same_batches(ds):
    b = Batches(ds, SPEC, Order(batch_size=128, seed=8))
    serial = list(b.iter(threads=1))
    threaded = list(b.iter(threads=3, prefetch_batches=5))
    assert len(threaded) == len(b)
    for s, t in zip(serial, threaded):
        assert_same_arrays(s[0], t[0])


def test_block_shuffle_in_ram_covers_every_row_and_mixes(ds):
    b = Batches(ds, SPEC, Order(batch_size=100, shuffle="block", seed=2, block_rows=250, window_rows=1000))
    rows = _rows(b)
    assert sorted(rows) == list(range(3000))
    assert not np.array_equal(rows, np.arange(3000))
    for i in (0, 7, len(b) - 1):  # batches straddling windows included
        assert_same_arrays(b[i][0], _reference(ds, b.rows_of(i)))
    b.on_epoch_end()
    assert not np.array_equal(rows, _rows(b))


def test_block_shuffle_on_disk_reads_each_chunk_at_most_twice(tmp_path):
    data = make_dataset(20_000, seed=3)
    data.to_zarr(tmp_path / "d.zarr", chunk_bytes=1 << 16)
    disk = lstm_data.open(tmp_path / "d.zarr")
    disk.io_stats.track_chunks()
    b = Batches(disk, SPEC, Order(batch_size=512, shuffle="block", seed=4))
    b.pipeline.blocks.next_epoch_ahead = False  # count this epoch's reads only
    for i in range(len(b)):
        assert_same_arrays(b[i][0], _reference(data, b.rows_of(i)))
    counts = disk.io_stats.per_chunk
    assert counts and max(counts.values()) <= 2
    n_chunks = {key for key, _ in counts}
    assert n_chunks == {k for k, _ in counts} and len(counts) > 20
    assert sorted(_rows(b)) == list(range(20_000))


def test_block_shuffle_reads_the_next_epochs_first_window_ahead(tmp_path):
    data = make_dataset(6_000, seed=5)
    data.to_zarr(tmp_path / "d.zarr", chunk_bytes=1 << 15)
    b = Batches(lstm_data.open(tmp_path / "d.zarr"), SPEC,
                Order(batch_size=500, shuffle="block", seed=1, window_rows=2_000))
    source = b.pipeline.blocks
    assert len(b.pipeline.plan(b.epoch).windows.block_ids) > 1
    for _ in b:
        pass
    ahead = source._windows.peek((1, 0))
    assert ahead is not None  # claimed while epoch 0 ended, before anyone asked for it
    ahead.result(timeout=30)
    b.on_epoch_end()
    assert_same_arrays(b[0][0], _reference(data, b.rows_of(0)))
    assert source._windows.peek((1, 0)) is ahead  # epoch 1 started on the window read ahead
    for i in range(len(b)):
        assert_same_arrays(b[i][0], _reference(data, b.rows_of(i)))


def test_a_spare_worker_makes_the_next_epochs_order_during_the_epoch(ds):
    import time

    from lstm_data.batching.order.rows import shuffled_order

    b = Batches(ds, SPEC, Order(batch_size=256, seed=3))
    list(b.iter(threads=1))
    assert b.pipeline.plans.peek(1) is None  # one worker: nothing spare, made when needed
    list(b.iter(threads=2))
    for _ in range(3000):  # the spare worker may still be starting when the epoch ends
        if b.pipeline.plans.peek(1) is not None:
            break
        time.sleep(0.01)
    ahead = b.pipeline.plans.peek(1)
    assert ahead is not None
    ahead.result(timeout=30)
    np.testing.assert_array_equal(ahead.result().order, shuffled_order(b.n_rows, 3, 1))
    b.on_epoch_end()
    assert b.pipeline.plans.peek(1) is ahead  # epoch 1 starts on the order made ahead
    fresh = Batches(ds, SPEC, Order(batch_size=256, seed=3))
    fresh.set_epoch(1)
    for mine, theirs in zip(b.iter(threads=2), fresh):
        assert_same_arrays(mine[0], theirs[0])
    for no_order in (Batches(ds, SPEC, Order(batch_size=256, shuffle=False)),
                     Batches(ds, SPEC, Order(batch_size=256, seed=3, cache="ram"))):
        list(no_order.iter(threads=2))
        assert no_order.pipeline.plans.peek(1) is None  # the order never changes: nothing to make


def test_pickled_batches_rebuild_the_same_batches(ds):
    b = Batches(ds, SPEC, Order(batch_size=256, seed=6, weights="calE"))
    b.on_epoch_end()
    back = pickle.loads(pickle.dumps(b))
    assert back.epoch == 1
    for part_a, part_b in zip(b[4], back[4]):
        assert_same_arrays(part_a, part_b)


def test_argument_errors(ds):
    with pytest.raises(ValueError, match="shuffle"):
        Batches(ds, SPEC, Order(shuffle="yes"))
    with pytest.raises(ValueError, match="batch_size"):
        Batches(ds, SPEC, Order(batch_size=0))
    with pytest.raises(ValueError, match="cache"):
        Batches(ds, SPEC, Order(cache="disk"))
    with pytest.raises(TypeError, match="BatchSpec"):
        Batches(ds, {"x": 1})
    with pytest.raises(lstm_data.SchemaError, match="did you mean"):
        Batches(ds, BatchSpec(inputs={"x": Scalars(["nhit"])}))
    for bad_seed in (-5, 1.5, "1", True):
        with pytest.raises(ValueError, match=r"seed must be an int >= 0, got"):
            Batches(ds, SPEC, Order(seed=bad_seed))
    b = Batches(ds, SPEC, Order(seed=np.int64(3)))
    with pytest.raises(ValueError, match=r"seed must be an int >= 0, got -1"):
        b.split(0.1, seed=-1)
    with pytest.raises(ValueError, match=r"epoch must be an int >= 0, got -1"):
        b.set_epoch(-1)
    assert b.epoch == 0
    with pytest.raises(ValueError, match="nan_to must be a number or None, got 'zero'"):
        Batches(ds, SPEC.replace(nan_to="zero"))
    weights = np.ones(len(ds))
    weights[17] = np.nan
    with pytest.raises(ValueError, match=r"weights: 1 non-finite value\(s\), first at row 17"):
        Batches(ds, SPEC, Order(weights=weights))
    weights[17] = -0.5  # negative weights (NLO generators) are fine
    Batches(ds, SPEC, Order(weights=weights))
    n = len(b)
    assert_same_arrays(b[-n][0], b[0][0])
    for bad_index in (-n - 1, n):  # the index as given, not after wrapping
        with pytest.raises(IndexError, match=rf"batch index {bad_index} out of range for {n} batches"):
            b[bad_index]
    with pytest.raises(lstm_data.SchemaError, match=r"'png.calE' is a prong variable of group 'png'"):
        ds.scalar("png.calE")


def test_block_shuffle_reads_ahead_each_window_once(tmp_path):
    data = make_dataset(20_000, seed=3)
    data.to_zarr(tmp_path / "d.zarr", chunk_bytes=1 << 16)
    disk = lstm_data.open(tmp_path / "d.zarr")
    disk.io_stats.track_chunks()
    b = Batches(disk, SPEC, Order(batch_size=512, shuffle="block", seed=4, window_rows=4096))
    assert b.pipeline.blocks.read_ahead  # on disk: the next window loads in the background
    b.pipeline.blocks.next_epoch_ahead = False  # this epoch's loads only (next epoch: test above)
    assert not Batches(data, SPEC, Order(shuffle="block")).pipeline.blocks.read_ahead  # in RAM: no thread
    seen = [b[i][0] for i in range(len(b))]
    for i, got in enumerate(seen):
        assert_same_arrays(got, _reference(data, b.rows_of(i)))
    assert b.pipeline.blocks.block_loads == len(b.pipeline.blocks.bounds) - 1  # every block loaded exactly once
    assert max(disk.io_stats.per_chunk.values()) <= 2


def test_block_shuffle_failed_window_load_is_retried(tmp_path, monkeypatch):
    data = make_dataset(3000, seed=3)
    data.to_zarr(tmp_path / "d.zarr", chunk_bytes=1 << 14)
    disk = lstm_data.open(tmp_path / "d.zarr")
    b = Batches(disk, SPEC, Order(batch_size=256, shuffle="block", seed=1))
    b.pipeline.blocks.read_ahead = False
    real_take = type(disk).take
    calls = {"n": 0}

    def flaky(self, rows):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError("transient")
        return real_take(self, rows)

    monkeypatch.setattr(type(disk), "take", flaky)
    with pytest.raises(OSError, match="transient"):
        b[0]
    assert_same_arrays(b[0][0], _reference(data, b.rows_of(0)))


def test_prefetch_order_bound_errors_and_early_close():
    import threading
    import time

    from lstm_data.batching.epochs.prefetch import prefetch

    state = {"running": 0, "peak": 0, "started": []}
    lock = threading.Lock()

    def build(i):
        with lock:
            state["started"].append(i)
            state["running"] += 1
            state["peak"] = max(state["peak"], state["running"])
        time.sleep(0.001)
        with lock:
            state["running"] -= 1
        if i == 7:
            raise KeyError(i)
        return i * i

    gen = prefetch(build, 20, workers=3, ahead=4)
    assert [next(gen) for _ in range(7)] == [i * i for i in range(7)]
    with pytest.raises(KeyError):
        next(gen)  # the error of item 7 surfaces when item 7 is due
    assert max(state["started"]) < 7 + 1 + 4 and state["peak"] <= 3
    gen = prefetch(build, 1000, workers=2, ahead=3)
    assert next(gen) == 0
    gen.close()  # workers stop after the items they are building, and close waits for them
    assert state["running"] == 0
    started = len(state["started"])
    time.sleep(0.02)
    assert len(state["started"]) == started
    assert [x for x in prefetch(lambda i: i, 0, workers=2)] == []
    side = []
    release, done = threading.Event(), threading.Event()

    def side_job():
        release.wait(timeout=20)  # held until the run is over: closing must not wait for it
        side.append(1)
        done.set()

    t0 = time.perf_counter()
    assert list(prefetch(lambda i: i, 6, workers=3, side_job=side_job)) == list(range(6))
    assert time.perf_counter() - t0 < 10 and side == []
    release.set()
    assert done.wait(timeout=30) and side == [1]  # once, by one background worker
    assert list(prefetch(lambda i: i, 3, workers=1, side_job=side_job)) == [0, 1, 2]
    time.sleep(0.1)
    assert side == [1]  # one worker: no spare thread
    assert list(prefetch(lambda i: -i, 5, workers=4, ahead=1)) == [0, -1, -2, -3, -4]
