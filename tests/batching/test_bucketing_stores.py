"""Length bucketing over on-disk data (``shuffle="block"``) and into precomputed batch stores."""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Ragged, Scalars, open_batches
from lstm_data.batching.order.options import Order
from lstm_data.cli import main
from lstm_data.data.synthetic import PNG2D_VARS, PNG3D_VARS, SLICE_VARS, make_dataset
from lstm_data.io.ours.zarr import ZarrDataset
from lstm_data.store.format import StoreMismatchError
from lstm_data.store.write import precompute
from tests.helpers import EXAMPLES, assert_same_batch

N_ROWS = 6000


@pytest.fixture(scope="module")
def data():
    return make_dataset(N_ROWS, seed=21)


@pytest.fixture(scope="module")
def store(data, tmp_path_factory):
    path = tmp_path_factory.mktemp("bucket") / "d.zarr"
    data.to_zarr(path, chunk_bytes=64 * 1024)
    return path


def _spec() -> BatchSpec:
    return BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                             "input_png3d": Ragged(PNG3D_VARS[:4], max_len=20, lengths=True, pad_value=np.nan),
                             "input_png2d": Ragged(PNG2D_VARS[:3], max_len=6, pad_value=np.nan)},
                     targets={"target_total": Scalars(["trueE"])})


def _padding(b: Batches, lens: np.ndarray) -> float:
    """Padded slots per real prong of ``input_png3d`` over an epoch."""
    slots = real = 0
    for i in range(len(b)):
        x = b[i][0]["input_png3d"]
        slots += x.shape[0] * x.shape[1]
        real += int(np.minimum(lens[b.rows_of(i)], 20).sum())
    return (slots - real) / real


@pytest.mark.parametrize("drop_last", [False, True])
def test_block_shuffle_buckets_inside_windows(data, store, drop_last):
    disk = ZarrDataset(store)
    lens = np.diff(data.ragged("png")[1])
    order = Order(batch_size=100, seed=4, shuffle="block", drop_last=drop_last, window_rows=1500,
                  read_ahead=False)
    bucketed = order.replace(bucket_by="input_png3d", bucket_window=5)
    plain = Batches(disk, _spec(), order)
    b = Batches(disk, _spec().replace(pad_to_multiple_of=2), bucketed)
    assert len(b) == len(plain)
    ram = Batches(data, _spec(), Order(batch_size=100, shuffle=False))
    for epoch in (0, 1):
        b.set_epoch(epoch)
        plain.set_epoch(epoch)
        rows = np.concatenate([b.rows_of(i) for i in range(len(b))])
        want = np.concatenate([plain.rows_of(i) for i in range(len(plain))])
        assert len(rows) == len(np.unique(rows))  # every row at most once
        np.testing.assert_array_equal(np.sort(rows), np.sort(want))  # the rows of the unbucketed epoch
        loads = b.pipeline.blocks.block_loads
        for i in range(len(b)):
            got = b[i]
            ref = ram.builder.build(b.rows_of(i))[0]["input_png3d"]
            x = got[0]["input_png3d"]
            longest = int(np.minimum(lens[b.rows_of(i)], 20).max())
            assert x.shape[1] == min(20, longest + longest % 2)
            np.testing.assert_array_equal(x, ref[:, :x.shape[1]])
            assert np.isnan(ref[:, x.shape[1]:]).all()
        # each block is still read once per epoch (windows keep their rows)
        assert b.pipeline.blocks.block_loads - loads == len(b.pipeline.blocks.bounds) - 1
    assert _padding(b, lens) < 0.6 * _padding(plain, lens)
    # reproducible from (seed, epoch), also in a fresh object
    again = Batches(disk, _spec().replace(pad_to_multiple_of=2), bucketed)
    np.testing.assert_array_equal(again.rows_of(3, 1), b.rows_of(3, 1))


def test_block_shuffle_bucketing_over_a_view(data, store):
    disk = ZarrDataset(store)
    b = Batches(disk, _spec(),
                Order(batch_size=64, seed=2, shuffle="block", bucket_by="input_png3d", bucket_window=4))
    train, val = b.split(0.3)
    seen = np.concatenate([train.rows_of(i) for i in range(len(train))]
                          + [val.rows_of(i) for i in range(len(val))])
    assert len(seen) == len(np.unique(seen)) == N_ROWS
    x = train[len(train) // 2][0]["input_png3d"]
    assert x.shape[1] <= 20


@pytest.mark.parametrize("shuffle", [True, "block"])
def test_precompute_stores_per_batch_widths(tmp_path, data, store, shuffle):
    src = data if shuffle is True else ZarrDataset(store)
    spec = _spec().replace(pad_to_multiple_of=4)
    order = Order(batch_size=250, seed=3, shuffle=shuffle, bucket_by="input_png3d", bucket_window=4)
    out = tmp_path / "b.zarr"
    precompute(src, spec, out, order, progress=False)
    stored = open_batches(out, spec=spec, order=order)
    live = Batches(src, spec, order)
    assert len(stored) == len(live)
    widths = set()
    for i in range(len(live)):
        assert_same_batch(live[i], stored[i])
        widths.add(stored[i][0]["input_png3d"].shape[1])
    assert len(widths) > 1 and all(w % 4 == 0 for w in widths)
    assert stored.signature()["input_png3d"].shape == (None, None, 4)
    assert stored.meta["bucketing"] == {"bucket_by": "input_png3d", "bucket_window": 4, "pad_to_multiple_of": 4}
    # reuse only with the same bucketing; another window is a mismatch that names it
    assert precompute(src, spec, out, order, progress=False).reused
    with pytest.raises(StoreMismatchError, match="bucketing"):
        precompute(src, spec, out, order.replace(bucket_window=8), progress=False)
    with pytest.raises(StoreMismatchError, match="bucketing"):
        precompute(src, _spec(), out, Order(batch_size=250, seed=3, shuffle=shuffle), progress=False)


def test_bucketed_store_holds_less_padding(tmp_path, data):
    import zarr

    stored = {}
    for name, opts in {"plain": {}, "bucketed": dict(bucket_by="input_png3d")}.items():
        out = tmp_path / f"{name}.zarr"
        precompute(data, _spec(), out, Order(batch_size=250, seed=3, **opts), progress=False)
        stored[name] = zarr.open_group(str(out), mode="r")["data/input_png3d"].shape[0]
    real = int(np.minimum(np.diff(data.ragged("png")[1]), 20).sum()) * 4
    assert stored["plain"] == len(data) * 20 * 4
    assert stored["bucketed"] - real < 0.3 * (stored["plain"] - real)


def test_cli_precompute_bucket_options(numu_zarr, tmp_path, capsys):
    out = tmp_path / "b.zarr"
    argv = ["precompute", "--data", str(numu_zarr), "--spec", str(EXAMPLES / "numu_v3.toml"),
            "--batch-size", "256", "--out", str(out), "--no-progress", "--bucket-by", "input_png3d",
            "--bucket-window", "8", "--pad-to-multiple-of", "2"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "input_png3d" in text and ".." in text  # per-batch widths are a range in the summary
    assert open_batches(out).meta["bucketing"]["bucket_window"] == 8
    assert main(argv[:-2] + ["--pad-to-multiple-of", "0"]) != 0
    assert "pad_to_multiple_of must be a positive int" in capsys.readouterr().err
