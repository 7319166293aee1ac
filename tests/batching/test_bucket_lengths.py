"""Padded lengths chosen from the length histogram: ``Order(bucket_lengths="auto", max_shapes=k)``."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Ragged, Scalars, open_batches
from lstm_data.batching.order.bucket_lengths import choose_lengths, padding_of
from lstm_data.batching.order.options import Order
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset
from lstm_data.errors import OptionError
from lstm_data.io.ours.zarr import ZarrDataset
from lstm_data.store.write import precompute
from tests.helpers import assert_same_batch

MAX_LEN = 20


@pytest.fixture(scope="module")
def numu_like():
    return make_dataset(20_000, seed=8, png_mean=2.0)  # numu-like: about 3 png3d prongs, a tail to 20+


def _spec(multiple=None, padding="post", nan_to=None) -> BatchSpec:
    return BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                             "input_png3d": Ragged(PNG3D_VARS[:3], max_len=MAX_LEN, lengths=True,
                                                   padding=padding)},
                     targets={"target_total": Scalars(["trueE"])}, pad_to_multiple_of=multiple, nan_to=nan_to)


def _epoch_slots(b: Batches) -> tuple[int, set[int]]:
    slots, shapes = 0, set()
    for i in range(len(b)):
        x = b[i][0]["input_png3d"]
        slots += x.shape[0] * x.shape[1]
        shapes.add(x.shape[1])
    return slots, shapes


def test_dynamic_programme_is_exact():
    rng = np.random.default_rng(3)
    for _ in range(200):
        w = rng.integers(0, 12, size=int(rng.integers(1, 40)))
        k = int(rng.integers(1, 5))
        got = choose_lengths(w, k)
        values = np.unique(w)
        best = min(padding_of(w, np.array(sorted(set(c) | {values[-1]})))
                   for r in range(k) for c in itertools.combinations(values[:-1], r))
        assert len(got) <= k and got[-1] == values[-1]
        assert padding_of(w, got) == best


def test_four_auto_lengths_pad_no_more_than_the_best_multiple(numu_like):
    order = Order(batch_size=512, seed=2, bucket_by="input_png3d")
    auto_slots, auto_shapes = _epoch_slots(Batches(numu_like, _spec(), order.replace(bucket_lengths="auto",
                                                                                   max_shapes=4)))
    assert len(auto_shapes) <= 4
    compared = 0
    for m in range(2, MAX_LEN + 1):
        slots, shapes = _epoch_slots(Batches(numu_like, _spec(multiple=m), order))
        if len(shapes) <= 4:  # a pad_to_multiple_of with as few distinct shapes
            compared += 1
            assert auto_slots <= slots, m
    assert compared
    # and per row over the whole histogram: never more than the multiples' lengths
    widths = np.minimum(np.diff(numu_like.ragged("png")[1]), MAX_LEN)
    for m in range(2, MAX_LEN + 1):
        grid = np.unique(np.minimum(-(-widths // m) * m, MAX_LEN))
        if len(grid) <= 4:
            assert padding_of(widths, choose_lengths(widths, 4)) <= padding_of(widths, grid)


@pytest.mark.parametrize("padding", ["post", "pre"])
def test_batches_pad_to_the_chosen_lengths(numu_like, padding):
    order = Order(batch_size=256, seed=1, bucket_by="input_png3d", bucket_lengths=[3, 6, MAX_LEN])
    b = Batches(numu_like, _spec(padding=padding, nan_to=0.0), order)
    plain = Batches(numu_like, _spec(padding=padding, nan_to=0.0), Order(batch_size=256, shuffle=False))
    for i in range(0, len(b), 7):
        x = b[i][0]["input_png3d"]
        assert x.shape[1] in (3, 6, MAX_LEN)
        want = plain.builder.build(b.rows_of(i))[0]["input_png3d"]  # padded to max_len
        cut = want[:, :x.shape[1]] if padding == "post" else want[:, MAX_LEN - x.shape[1]:]
        assert np.array_equal(x, cut)


def test_block_shuffle_and_precompute_take_the_lengths(numu_like, tmp_path):
    path = tmp_path / "d.zarr"
    numu_like.to_zarr(path, chunk_bytes=64 * 1024)
    order = Order(batch_size=256, seed=1, shuffle="block", bucket_by="input_png3d", bucket_lengths="auto",
                  max_shapes=3)
    b = Batches(ZarrDataset(path), _spec(), order)
    _, shapes = _epoch_slots(b)
    assert len(shapes) <= 3
    out = tmp_path / "b.zarr"
    precompute(numu_like, _spec(), out, order.replace(shuffle=True), progress=False)
    stored = open_batches(out, order=order.replace(shuffle=True), permute=False)
    fresh = Batches(numu_like, _spec(), order.replace(shuffle=True))
    for i in (0, len(fresh) - 1):
        assert_same_batch(stored[i], fresh[i])


def test_lengths_are_checked(numu_like):
    with pytest.raises(OptionError, match="increasing"):
        Order(bucket_lengths=[4, 2])
    with pytest.raises(OptionError, match="auto"):
        Order(bucket_lengths="fast")
    with pytest.raises(OptionError, match="needs bucket_by"):
        Batches(numu_like, _spec(), Order(bucket_lengths="auto"))
    with pytest.raises(OptionError, match="below"):
        Batches(numu_like, _spec(), Order(bucket_by="input_png3d", bucket_lengths=[2, 5]))


def test_inspect_spec_reports_the_chosen_lengths(numu_like, tmp_path, capsys):
    import json

    from lstm_data.cli import main

    data = tmp_path / "d.zarr"
    numu_like.to_zarr(data)
    spec = tmp_path / "s.toml"
    order = Order(batch_size=512, bucket_by="input_png3d", bucket_lengths="auto", max_shapes=3)
    spec.write_text(_spec().to_toml() + "\n" + order.to_toml())
    assert main(["inspect", str(data), "--spec", str(spec), "--json", "--no-stats"]) == 0
    doc = json.loads(capsys.readouterr().out)["order"]
    widths = np.minimum(np.diff(numu_like.ragged("png")[1]), MAX_LEN)
    assert doc["bucket_lengths"]["lengths"] == choose_lengths(widths, 3).tolist()
    assert doc["bucket_lengths"]["padding_per_element"] == pytest.approx(
        padding_of(widths, choose_lengths(widths, 3)) / widths.sum())
    longer = int((np.diff(numu_like.ragged("png")[1]) > MAX_LEN).sum())
    assert doc["stats"]["truncated"]["input_png3d"]["rows"] == longer
    assert main(["inspect", str(data), "--spec", str(spec), "--no-stats"]) == 0
    assert "bucket lengths of input_png3d (in use): " + ", ".join(map(str, doc["bucket_lengths"]["lengths"])) \
        in capsys.readouterr().out
