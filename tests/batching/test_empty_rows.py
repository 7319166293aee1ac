"""Ragged(empty=...): rows without elements kept as they are, given one padded step, or dropped."""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars, open_batches
from lstm_data.data.synthetic import PNG2D_VARS, SLICE_VARS, make_dataset
from lstm_data.errors import SchemaError
from lstm_data.store.write import precompute

VARS = PNG2D_VARS[:3]


@pytest.fixture(scope="module")
def data():
    return make_dataset(1000, seed=5)  # ~1 row in 5 has no png2d prong


def _lens(data) -> np.ndarray:
    return np.diff(data.ragged("png2d")[1])


def _spec(**ragged) -> BatchSpec:
    opts = {"max_len": 4, "lengths": True, "mask": True, "pad_value": -1.0, **ragged}
    if opts.get("layout") == "packed":
        opts.pop("mask")
    return BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS[:2]), "input_png2d": Ragged(VARS, **opts)},
                     targets={"target_total": Scalars(["trueE"])})


def _batch(data, spec, rows=None, batch_size=1000):
    b = Batches(data, spec, Order(batch_size=batch_size, shuffle=False), rows=rows)
    return b, b[0][0]


@pytest.mark.parametrize("padding", ["post", "pre"])
def test_one_step_gives_empty_rows_one_padded_step(data, padding):
    lens = _lens(data)
    empty = lens == 0
    _, keep = _batch(data, _spec(padding=padding))
    _, step = _batch(data, _spec(padding=padding, empty="one_step"))
    assert empty.sum() > 50
    assert (keep["input_png2d_lengths"][empty] == 0).all() and not keep["input_png2d_mask"][empty].any()
    np.testing.assert_array_equal(step["input_png2d_lengths"], np.maximum(np.minimum(lens, 4), 1))
    slot = 3 if padding == "pre" else 0
    want_mask = keep["input_png2d_mask"].copy()
    want_mask[empty, slot] = True
    np.testing.assert_array_equal(step["input_png2d_mask"], want_mask)
    np.testing.assert_array_equal(step["input_png2d"], keep["input_png2d"])  # the step holds the pad value
    assert (step["input_png2d"][empty, slot] == -1.0).all()


def test_one_step_in_a_batch_of_empty_rows_only_has_width_one(data):
    rows = np.flatnonzero(_lens(data) == 0)[:10]
    _, x = _batch(data, _spec(max_len=None, empty="one_step"), rows=rows)
    assert x["input_png2d"].shape == (10, 1, 3) and (x["input_png2d"] == -1.0).all()
    assert x["input_png2d_mask"].all() and (x["input_png2d_lengths"] == 1).all()
    _, multiple = _batch(data, _spec(max_len=None, empty="one_step").replace(pad_to_multiple_of=4), rows=rows)
    assert multiple["input_png2d"].shape == (10, 4, 3)
    assert multiple["input_png2d_mask"].sum() == 10


def test_one_step_packed_counts_the_step_and_equals_the_padded_real_elements(data):
    lens = _lens(data)
    _, padded = _batch(data, _spec(empty="one_step"))
    _, packed = _batch(data, _spec(empty="one_step", layout="packed"))
    want_cu = np.concatenate([[0], np.cumsum(np.maximum(np.minimum(lens, 4), 1))])
    np.testing.assert_array_equal(packed["input_png2d_cu_seqlens"], want_cu)
    assert packed["input_png2d_cu_seqlens"].dtype == np.int32
    np.testing.assert_array_equal(packed["input_png2d"], padded["input_png2d"][padded["input_png2d_mask"]])
    assert int(packed["input_png2d_max_seqlen"]) == 4


def test_one_step_lets_an_lstm_take_every_row(data):
    torch = pytest.importorskip("torch")
    from torch.nn.utils.rnn import pack_padded_sequence

    lstm = torch.nn.LSTM(3, 5, batch_first=True)
    for empty, ok in (("keep", False), ("one_step", True)):
        _, x = _batch(data, _spec(empty=empty, pad_value=0.0))
        seq = torch.from_numpy(x["input_png2d"])
        lengths = torch.from_numpy(x["input_png2d_lengths"])
        if not ok:  # what cuDNN and pack_padded_sequence do with a row of length 0
            with pytest.raises(RuntimeError, match="greater than 0"):
                pack_padded_sequence(seq, lengths, batch_first=True, enforce_sorted=False)
            continue
        out, (h, _) = lstm(pack_padded_sequence(seq, lengths, batch_first=True, enforce_sorted=False))
        assert h.shape == (1, 1000, 5) and torch.isfinite(h).all()


def test_drop_leaves_empty_rows_out_of_every_view(data, tmp_path):
    lens = _lens(data)
    b = Batches(data, _spec(empty="drop"), Order(batch_size=128, seed=2))
    assert b.n_rows == int((lens > 0).sum())
    rows = np.concatenate([b.rows_of(i) for i in range(len(b))])
    np.testing.assert_array_equal(np.sort(rows), np.flatnonzero(lens > 0))
    assert all((b[i][0]["input_png2d_lengths"] > 0).all() for i in range(len(b)))
    train, val = b.split(0.25)
    both = np.concatenate([train.rows_of(i) for i in range(len(train))] + [val.rows_of(i) for i in range(len(val))])
    np.testing.assert_array_equal(np.sort(both), np.flatnonzero(lens > 0))
    # a view of rows is intersected with the non-empty rows, in its order
    view = np.arange(999, -1, -3)
    v = Batches(data, _spec(empty="drop"), Order(batch_size=1000, shuffle=False), rows=view)
    np.testing.assert_array_equal(v.rows_of(0), view[lens[view] > 0])
    # a store holds the same rows
    out = tmp_path / "drop.zarr"
    precompute(data, _spec(empty="drop"), out, Order(batch_size=128, seed=2), progress=False)
    stored = open_batches(out)
    assert stored.n_rows == b.n_rows
    np.testing.assert_array_equal(stored[0][0]["input_png2d"], b[0][0]["input_png2d"])


def test_drop_composes_with_a_selection(data):
    spec = _spec(empty="drop")
    try:
        selected = BatchSpec(spec.inputs, spec.targets, selection="calE > 1.0")
    except TypeError:
        pytest.skip("this build has no BatchSpec(selection=...)")
    lens = _lens(data)
    want = np.flatnonzero((data.scalar("calE") > 1.0) & (lens > 0))
    b = Batches(data, selected, Order(batch_size=2000, shuffle=False))
    x = b[0][0]
    assert b.n_rows == len(want) and (x["input_png2d_lengths"] > 0).all()
    np.testing.assert_array_equal(x["input_slice"][:, 0], data.scalar(SLICE_VARS[0])[want])


def test_one_step_store_equals_live_batches(data, tmp_path):
    for layout in ("padded", "packed"):
        spec = _spec(empty="one_step", max_len=None, layout=layout)
        out = tmp_path / f"{layout}.zarr"
        precompute(data, spec, out, Order(batch_size=50, seed=1), progress=False)
        stored, live = open_batches(out), Batches(data, spec, Order(batch_size=50, seed=1))
        for i in range(len(live)):
            for k, v in live[i][0].items():
                np.testing.assert_array_equal(stored[i][0][k], v, err_msg=f"{layout} {k}")


def test_empty_round_trips_and_is_checked(tmp_path):
    spec = _spec(empty="one_step")
    path = tmp_path / "s.toml"
    path.write_text(spec.to_toml())
    assert 'empty = "one_step"' in path.read_text()
    assert BatchSpec.from_toml(path) == spec
    assert "empty" not in _spec().inputs["input_png2d"].to_dict()  # the default is not written
    with pytest.raises(SchemaError, match="empty must be one of \\['keep', 'one_step', 'drop'\\]"):
        Ragged(VARS, empty="skip")


@pytest.mark.parametrize("shuffle", [True, "block"])
def test_on_disk_equals_in_ram_with_one_step_drop_and_noise(data, tmp_path, shuffle):
    import lstm_data

    path = tmp_path / "d.zarr"
    data.to_zarr(path)
    disk = lstm_data.open(path)
    for empty in ("one_step", "drop"):
        spec = _spec(empty=empty, max_len=None).replace(augment={VARS[0]: {"gaussian": 0.3}})
        ondisk = Batches(disk, spec, Order(batch_size=64, seed=5, shuffle=shuffle))
        assert ondisk.n_rows == (int((_lens(data) > 0).sum()) if empty == "drop" else len(data))
        for i in (0, 3, len(ondisk) - 1):
            rows = ondisk.rows_of(i, 1)
            # the same rows in RAM, in that order, same seed and epoch: the same batch
            ram = Batches(data, spec, Order(batch_size=len(rows), seed=5, shuffle=False), rows=rows)
            for k, v in ram.batch(0, epoch=1)[0].items():
                np.testing.assert_array_equal(ondisk.batch(i, epoch=1)[0][k], v, err_msg=f"{empty} {k}")
