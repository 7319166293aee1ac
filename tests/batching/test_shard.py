"""``Batches.shard``: disjoint, equal shares of every epoch; ``state_dict`` resumes mid-epoch."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from lstm_data.batching.epochs.source import BuildsInArena
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset
from lstm_data.io.ours.zarr import ZarrDataset
from tests.helpers import assert_same_batch


@pytest.fixture(scope="module")
def data():
    return make_dataset(2000, seed=3)


def _spec() -> BatchSpec:
    return BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                             "input_png3d": Ragged(PNG3D_VARS[:3], max_len=12)},
                     targets={"target_total": Scalars(["trueE"])})


MODES = [dict(shuffle=True), dict(shuffle=False), dict(shuffle=True, cache="ram"),
         dict(shuffle=True, bucket_by="input_png3d", bucket_window=3), dict(shuffle="block")]


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: "-".join(f"{k}={v}" for k, v in m.items()))
def test_shards_are_disjoint_equal_and_cover_the_epoch(data, world, mode):
    order = Order(batch_size=90, seed=8, **mode)
    full = Batches(data, _spec(), order)  # 23 batches, the last short
    shards = [Batches(data, _spec(), order).shard(r, world) for r in range(world)]
    assert {len(s) for s in shards} == {len(full) // world}
    for epoch in (0, 1, 2):
        got = [s.rows_of(i, epoch) for s in shards for i in range(len(s))]
        # shuffle=True: each step of the ranks takes one round of world_size batches (see
        # lstm_data.batching.epochs.resume); else rank r holds the r-th consecutive run
        if mode.get("shuffle") is True:
            lanes = []
            taken = np.concatenate([s.parent_indices(epoch) for s in shards])
            assert len(np.unique(taken)) == len(taken) == len(shards[0]) * world
        else:
            lanes = [np.arange(r * len(shards[0]), (r + 1) * len(shards[0])) for r in range(world)]
        want = [full.rows_of(int(i), epoch) for s in shards for i in s.parent_indices(epoch)]
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)
        if mode.get("shuffle") is not True:
            for s, lane in zip(shards, lanes):
                np.testing.assert_array_equal(s.parent_indices(epoch), lane)
        rows = np.concatenate(got)
        assert len(rows) == len(np.unique(rows))
        for s in shards:
            s.set_epoch(epoch)
        last = int(shards[-1].parent_indices(epoch)[-1])
        assert_same_batch(shards[-1][len(shards[-1]) - 1], full.batch(last, epoch))
    assert shards[0].n_rows == len(shards[0]) * 90


def test_shard_arguments_are_checked(data):
    b = Batches(data, _spec(), Order(batch_size=100, seed=1))
    with pytest.raises(ValueError, match=r"rank must be in \[0, world_size\)"):
        b.shard(2, 2)
    with pytest.raises(ValueError, match="world_size must be >= 1"):
        b.shard(0, 0)
    # without a seed every rank reads seed 0: the same order, so shards need no seed
    unseeded = Batches(data, _spec(), Order(batch_size=100)).split(0.2)[0].shard(0, 2)
    seeded = Batches(data, _spec(), Order(batch_size=100, seed=0)).split(0.2)[0].shard(0, 2)
    assert_same_batch(unseeded[0], seeded[0])
    assert "rank 1 of 4" in repr(b.shard(1, 4))


def test_shard_of_an_on_disk_block_shuffle_reads_part_of_the_data(data, tmp_path):
    data.to_zarr(tmp_path / "d.zarr", chunk_bytes=32 * 1024)
    disk = ZarrDataset(tmp_path / "d.zarr")
    b = Batches(disk, _spec(), Order(batch_size=50, seed=2, shuffle="block", window_rows=200,
                                          read_ahead=False))
    shard = b.shard(0, 4)
    for _ in shard:
        pass
    assert b.pipeline.blocks.block_loads < 0.5 * (len(b.pipeline.blocks.bounds) - 1)


@pytest.mark.parametrize("sharded", [False, True])
def test_state_dict_resumes_at_the_next_batch(data, sharded):
    def make():
        b = Batches(data, _spec(), Order(batch_size=100, seed=5))
        return b.shard(1, 2) if sharded else b
    a = make()
    a.set_epoch(2)
    it = a.iter(threads=2)
    seen = [next(it) for _ in range(4)]
    state = a.state_dict()
    assert state["epoch"] == 2 and state["next_batch"] == 4
    assert json.loads(json.dumps(state)) == state
    resumed = make()
    resumed.load_state_dict(state)
    rest = list(resumed)
    assert len(seen) + len(rest) == len(a)
    for i, batch in enumerate(rest, 4):
        assert_same_batch(batch, a.batch(i, epoch=2))
    assert resumed.state_dict()["next_batch"] == len(a)
    assert len(list(resumed)) == len(a)  # iterating again: the whole epoch, from its first batch
    resumed.on_epoch_end()
    assert resumed.state_dict() == {**state, "epoch": 3, "next_batch": 0}
    assert len(list(resumed)) == len(a)


def test_state_from_other_batches_is_refused(data):
    state = Batches(data, _spec(), Order(batch_size=100, seed=5)).state_dict()
    with pytest.raises(ValueError, match="seed: state has 5, this sequence 6"):
        Batches(data, _spec(), Order(batch_size=100, seed=6)).load_state_dict(state)
    with pytest.raises(ValueError, match="batch_size"):
        Batches(data, _spec(), Order(batch_size=50, seed=5)).load_state_dict(state)
    with pytest.raises(ValueError, match="shard"):  # a world of 3 resumes a shard, not unsharded batches
        Batches(data, _spec(), Order(batch_size=100, seed=5)).load_state_dict(
            Batches(data, _spec(), Order(batch_size=100, seed=5)).shard(0, 3).state_dict())
    with pytest.raises(ValueError, match="next_batch"):
        Batches(data, _spec(), Order(batch_size=100, seed=5)).load_state_dict({"epoch": 0})


_LOOP = textwrap.dedent('''
    import json, os, sys
    import numpy as np
    from lstm_data import Batches, BatchSpec, Ragged, Scalars
    from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset

    ckpt, log, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
    spec = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                             "input_png3d": Ragged(PNG3D_VARS[:3], max_len=12)},
                     targets={"target_total": Scalars(["trueE"])})
    b = Batches(make_dataset(2000, seed=3), spec, batch_size=100, seed=5)
    if os.path.exists(ckpt):
        b.load_state_dict(json.load(open(ckpt)))
    step = 0
    while b.epoch < 2:
        for batch in b.iter(threads=2):
            rows = b.rows_of(b.state_dict()["next_batch"] - 1).tolist()
            with open(log, "a") as fh:
                fh.write(json.dumps([b.epoch, rows]) + "\\n")
            with open(ckpt + ".tmp", "w") as fh:  # the checkpoint, saved after each step
                json.dump(b.state_dict(), fh)
            os.replace(ckpt + ".tmp", ckpt)
            step += 1
            if step == kill_at:
                os.kill(os.getpid(), 9)  # preempted: no cleanup, no flush of anything else
        b.on_epoch_end()
''')


def test_a_killed_loop_resumes_with_exactly_the_remaining_batches(tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(_LOOP)
    ckpt, log = tmp_path / "state.json", tmp_path / "seen.jsonl"
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    first = subprocess.run([sys.executable, str(script), str(ckpt), str(log), "27"], env=env)
    assert first.returncode == -9  # killed mid-epoch 1 (20 batches per epoch)
    second = subprocess.run([sys.executable, str(script), str(ckpt), str(log), "0"], env=env)
    assert second.returncode == 0
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    full = Batches(make_dataset(2000, seed=3), _spec(), Order(batch_size=100, seed=5))
    want = [[e, full.rows_of(i, e).tolist()] for e in (0, 1) for i in range(len(full))]
    assert seen == want


def test_keras_batches_over_a_shard(data):
    pytest.importorskip("keras")
    import warnings

    from lstm_data.keras import KerasBatches

    shard = Batches(data, _spec().replace(nan_to=0.0), Order(batch_size=100, seed=5)).shard(0, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nan_to of the parent is seen: no NaN warning
        k = KerasBatches(shard, threads=2)
        assert len(k) == len(shard) == 10
        assert_same_batch(k[0], shard[0])


def test_a_shard_builds_in_an_arena_like_its_batches(data):
    batches = Batches(data, _spec(), Order(batch_size=64, seed=1))
    shard = batches.shard(1, 3)
    assert isinstance(shard, BuildsInArena) and isinstance(batches, BuildsInArena)
    space = np.zeros((1 << 20) + 64, np.uint8)
    arena = space[(-space.ctypes.data) % 64:][:1 << 20]  # an arena starts 64-byte aligned
    got = shard.batch_into(2, 4, arena)
    assert_same_batch(got, shard.batch(2, epoch=4))
    assert np.shares_memory(got[0]["input_png3d"], arena)
