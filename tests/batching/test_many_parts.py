"""A dataset of many in-RAM parts batches as one: bitwise the batches of the same rows in one
file, gathered in one kernel pass without concatenating; integer groups batch exactly."""
from __future__ import annotations

import numpy as np
import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Ragged, Scalars
from lstm_data.errors import PrecisionWarning
from lstm_data.batching.order.options import Order
from lstm_data.data.concat import ConcatDataset
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.data.synthetic import make_dataset
from tests.helpers import assert_same_batch

SPEC = BatchSpec(inputs={"input_png": Ragged(["png.calE", "png.nhit", "png.len"], max_len=8, sort_by="png.calE"),
                         "input_slice": Scalars(["calE", "nHit"])},
                 targets={"target": Scalars(["trueE"])}, nan_to=0.0)


@pytest.mark.parametrize("n_files", [2, 7])
@pytest.mark.parametrize("shuffle", [False, True])
def test_many_files_give_the_batches_of_one(tmp_path, n_files, shuffle):
    whole = make_dataset(1400, seed=5)
    cuts = np.linspace(0, len(whole), n_files + 1).astype(int)
    paths = []
    for i in range(n_files):
        path = tmp_path / f"part{i:02d}.zarr"
        whole.take(np.arange(cuts[i], cuts[i + 1])).to_zarr(path)
        paths.append(path)
    one = tmp_path / "one.zarr"
    whole.to_zarr(one)
    # in RAM: each zarr part taken into memory, then one ConcatDataset
    parts = ConcatDataset([lstm_data.open(p).take(np.arange(len(lstm_data.open(p)))) for p in paths])
    assert parts.in_ram
    single = lstm_data.open(one).take(np.arange(len(whole)))
    order = Order(batch_size=128, seed=2, shuffle=shuffle)
    a, b = Batches(parts, SPEC, order), Batches(single, SPEC, order)
    assert a.builder.in_ram and len(a) == len(b)
    for epoch in (0, 1):
        for i in range(len(a)):
            assert_same_batch(a.batch(i, epoch), b.batch(i, epoch))


def test_block_shuffle_over_on_disk_parts_cuts_blocks_at_every_files_chunks(tmp_path):
    whole = make_dataset(900, seed=1)
    paths = []
    for i, (lo, hi) in enumerate([(0, 300), (300, 900)]):
        paths.append(tmp_path / f"p{i}.zarr")
        whole.take(np.arange(lo, hi)).to_zarr(paths[-1])
    ds = lstm_data.open(paths)
    starts = ds.value_chunk_starts("png")
    assert 300 in starts.tolist() and 0 in starts.tolist()
    b = Batches(ds, SPEC, Order(batch_size=64, seed=0, shuffle="block"))
    seen = np.concatenate([b.rows_of(i) for i in range(len(b))])
    assert sorted(seen.tolist()) == list(range(900))


def test_integer_and_boolean_groups_batch_exactly_and_large_ids_warn():
    rng = np.random.default_rng(0)
    lens = rng.integers(0, 4, 50)
    offsets = np.zeros(51, np.int64)
    np.cumsum(lens, out=offsets[1:])
    charge = rng.choice(np.array([-1, 1], np.int8), offsets[-1])
    jet_id = rng.integers(0, 7, offsets[-1]).astype(np.int32)
    values = np.stack([charge.astype(np.int32), jet_id], axis=1)
    ds = InMemoryDataset({"event": np.arange(50, dtype=np.int64) + 2**24 + 1},
                         {"Muon": RaggedGroup(["Muon.charge", "Muon.jetId"], values, offsets)})
    spec = BatchSpec(inputs={"mu": Ragged(["Muon.charge", "Muon.jetId"], max_len=4, pad_value=0.0)})
    batch = Batches(ds, spec, Order(batch_size=50, shuffle=False))[0][0]["mu"]
    for r in range(50):
        n = min(4, lens[r])
        np.testing.assert_array_equal(batch[r, :n], values[offsets[r]:offsets[r] + n].astype(np.float32))
    with pytest.warns(PrecisionWarning, match=r"'event'.*16777218 becomes 16777218|integer 16777\d+ becomes"):
        Batches(ds, BatchSpec(inputs={"ev": Scalars(["event"])}), Order(batch_size=10, shuffle=False))[0]


@pytest.mark.parametrize("shuffle", [False, True, "block"])
def test_on_disk_parts_are_padded_from_their_pieces_as_one_file(tmp_path, shuffle):
    """Several zarr files on disk (one stored as float64): each batch reads its rows file by file and
    pads them across the pieces in one kernel pass; the batches equal those of one file, bitwise."""
    whole = make_dataset(1500, seed=8)
    cuts = [0, 400, 410, 1100, 1500]
    paths = []
    for i, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:])):
        paths.append(tmp_path / f"d{i}.zarr")
        piece = whole.take(np.arange(lo, hi))
        if i == 2:  # a file written in float64: its values join the others' float32 exactly
            piece = InMemoryDataset({s: piece.scalar(s) for s in piece.scalar_names},
                                    {g: RaggedGroup(list(piece.groups[g]), piece.ragged(g)[0].astype(np.float64),
                                                    piece.ragged(g)[1]) for g in piece.groups})
        piece.to_zarr(paths[-1])
    whole.to_zarr(tmp_path / "one.zarr")
    many, one = lstm_data.open(paths), lstm_data.open(tmp_path / "one.zarr")
    assert not many.in_ram
    order = Order(batch_size=100, seed=4, shuffle=shuffle)
    a, b = Batches(many, SPEC, order), Batches(one, SPEC, order)
    assert not a.builder.in_ram and len(a) == len(b)
    if shuffle == "block":  # blocks follow each file's chunks: other rows per batch than one file's
        for i in (0, len(a) // 2, len(a) - 1):
            rows = a.rows_of(i, 0)
            ref = Batches(whole.take(rows), SPEC, Order(batch_size=len(rows), shuffle=False))[0]
            assert_same_batch(a.batch(i, 0), ref)
        return
    for i in range(len(a)):
        assert_same_batch(a.batch(i, 0), b.batch(i, 0))
