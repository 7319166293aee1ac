"""Streaming convert: blocks in, blocks out; the external shuffle; several inputs as one table."""
from __future__ import annotations

import numpy as np
import pytest

import lstm_data
from lstm_data.data.synthetic import make_dataset, write_csv
from lstm_data.errors import SchemaError
from lstm_data.io.ours.convert import concat_blocks, convert_streaming, open_blocks
from lstm_data.io.ours.external_shuffle import bucket_of, external_shuffle
from lstm_data.io.ours.row_blocks import dataset_blocks
from lstm_data.io.ours.write import write_hdf5, write_zarr
from tests.helpers import assert_same_dataset


@pytest.fixture(scope="module")
def ds():
    return make_dataset(3000, seed=4)


@pytest.mark.parametrize("block_bytes", [1 << 12, 1 << 16, 1 << 30])
@pytest.mark.parametrize("fmt", ["zarr", "hdf5"])
def test_blocks_of_any_size_write_the_same_output(ds, tmp_path, block_bytes, fmt):
    write = write_zarr if fmt == "zarr" else write_hdf5
    out = tmp_path / f"o.{'zarr' if fmt == 'zarr' else 'h5'}"
    write(dataset_blocks(ds, block_bytes=block_bytes), out, chunk_bytes=8 * 1024)
    assert_same_dataset(lstm_data.open(out), ds)


def _rows_of(table) -> np.ndarray:
    """The ``trueE`` column of a RowBlocks pass (identifies rows of the synthetic data)."""
    return np.concatenate([b.scalar("trueE") for b, _ in table.blocks()])


@pytest.mark.parametrize("buckets", [1, 2, 7])
def test_external_shuffle_is_a_seeded_permutation_independent_of_blocks(ds, tmp_path, buckets):
    ds = ds.take(np.arange(1000))  # still 167 blocks of 4 KiB to spill
    key = np.arange(len(ds), dtype=np.float64)
    scalars = {s: ds.scalar(s) for s in ds.scalar_names}
    scalars["row"] = key
    data = lstm_data.InMemoryDataset(scalars, {g: ds.group(g) for g in ds.groups})
    orders = []
    for block_bytes in (1 << 12, 1 << 15, 1 << 30):
        table = external_shuffle(dataset_blocks(data, block_bytes=block_bytes), 11, tmp_path / "w",
                                 n_buckets=buckets)
        blocks = [b for b, _ in table.blocks()]
        rows = np.concatenate([b.scalar("row") for b in blocks]).astype(np.int64)
        orders.append(rows)
        assert_same_dataset(lstm_data.data.concat.concat_datasets(blocks), data.take(rows))
        assert not (tmp_path / "w").exists()  # spill files removed after the pass
    np.testing.assert_array_equal(orders[0], orders[1])
    np.testing.assert_array_equal(orders[0], orders[2])
    assert sorted(orders[0].tolist()) == list(range(len(ds)))
    if buckets == 1:  # the plain seeded permutation
        np.testing.assert_array_equal(orders[0], np.random.default_rng(11).permutation(len(ds)))
    else:  # rows of bucket b, permuted by (seed, b), bucket after bucket
        which = bucket_of(np.arange(len(ds)), 11, buckets)
        want = np.concatenate([np.flatnonzero(which == b)[np.random.default_rng([11, b]).permutation(
            int((which == b).sum()))] for b in range(buckets)])
        np.testing.assert_array_equal(orders[0], want)
    other = external_shuffle(dataset_blocks(data), 12, tmp_path / "w", n_buckets=buckets)
    assert not np.array_equal(np.concatenate([b.scalar("row") for b, _ in other.blocks()]), orders[0])


def test_bucket_assignment_spreads_rows_evenly():
    which = bucket_of(np.arange(100_000), 3, 10)
    counts = np.bincount(which, minlength=10)
    assert counts.min() > 9_500 and counts.max() < 10_500


def test_convert_streaming_several_formats_in_order(ds, tmp_path):
    a, b = ds.take(np.arange(1000)), ds.take(np.arange(1000, 3000))
    a.to_zarr(tmp_path / "a.zarr")
    b.to_hdf5(tmp_path / "b.h5")
    convert_streaming([str(tmp_path / "a.zarr"), str(tmp_path / "b.h5")], tmp_path / "ab.zarr",
                      block_bytes=1 << 14, chunk_bytes=16 * 1024)
    assert_same_dataset(lstm_data.open(tmp_path / "ab.zarr"), ds)
    convert_streaming([str(tmp_path / "a.zarr"), str(tmp_path / "b.h5")], tmp_path / "s.h5", shuffle_seed=3,
                      block_bytes=1 << 14, bucket_bytes=1 << 16)
    shuffled = lstm_data.open(tmp_path / "s.h5")
    assert len(shuffled) == len(ds)
    np.testing.assert_array_equal(np.sort(shuffled.scalar("trueE")), np.sort(ds.scalar("trueE")))
    assert not list(tmp_path.glob(".*shuffle*"))
    with pytest.raises(FileExistsError):
        convert_streaming([str(tmp_path / "a.zarr")], tmp_path / "ab.zarr")


def test_csv_streams_into_the_same_store(tmp_path):
    write_csv(tmp_path / "e.csv.gz", 2500, seed=3, level=1)
    ref = lstm_data.open(tmp_path / "e.csv.gz")
    convert_streaming([str(tmp_path / "e.csv.gz")], tmp_path / "e.zarr", block_bytes=1 << 15)
    assert_same_dataset(lstm_data.open(tmp_path / "e.zarr"), ref)
    table = open_blocks(str(tmp_path / "e.csv.gz"), block_bytes=1 << 15)
    assert len([b for b, _ in table.blocks()]) > 3  # really in blocks


def test_inputs_with_other_columns_are_refused(ds, tmp_path):
    ds.to_zarr(tmp_path / "a.zarr")
    other = lstm_data.InMemoryDataset({"x": np.zeros(3)}, {})
    other.to_zarr(tmp_path / "b.zarr")
    table = concat_blocks([open_blocks(str(tmp_path / "a.zarr")), open_blocks(str(tmp_path / "b.zarr"))],
                          [str(tmp_path / "a.zarr"), str(tmp_path / "b.zarr")])
    with pytest.raises(SchemaError, match="columns differ") as err:
        list(table.blocks())
    assert err.value.file == str(tmp_path / "b.zarr")
    ds.to_zarr(tmp_path / "c.zarr")
    lstm_data.open(tmp_path / "c.zarr", dtype=np.float64).to_zarr(tmp_path / "wide.zarr")
    with pytest.raises(SchemaError, match="give dtype= to read every input alike"):
        convert_streaming([str(tmp_path / "c.zarr"), str(tmp_path / "wide.zarr")], tmp_path / "x.zarr")
    assert not (tmp_path / "x.zarr").exists()
    # float32 after float64 casts without loss; dtype= reads both alike
    convert_streaming([str(tmp_path / "wide.zarr"), str(tmp_path / "c.zarr")], tmp_path / "x.zarr")
    assert lstm_data.open(tmp_path / "x.zarr").ragged("png")[0].dtype == np.float64
    convert_streaming([str(tmp_path / "c.zarr"), str(tmp_path / "wide.zarr")], tmp_path / "y.zarr",
                      dtype=np.float64)
    assert lstm_data.open(tmp_path / "y.zarr").ragged("png")[0].dtype == np.float64


def test_inputs_are_opened_one_at_a_time(ds, tmp_path, monkeypatch):
    import lstm_data.io.ours.convert as conv

    for i in range(4):
        ds.take(np.arange(i * 500, (i + 1) * 500)).to_hdf5(tmp_path / f"p{i}.h5")
    live, peak = [0], [0]
    real = conv.open_blocks

    def counting(path, **kw):
        table = real(path, **kw)
        inner = table.blocks

        def blocks():
            live[0] += 1
            peak[0] = max(peak[0], live[0])
            try:
                yield from inner()
            finally:
                live[0] -= 1
        table.blocks = blocks
        return table

    monkeypatch.setattr(conv, "open_blocks", counting)
    convert_streaming([str(tmp_path / f"p{i}.h5") for i in range(4)], tmp_path / "all.zarr")
    assert peak[0] == 1
    assert_same_dataset(lstm_data.open(tmp_path / "all.zarr"), ds.take(np.arange(2000)))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_csv_blocks_equal_read_csv(tmp_path, threads, suffix):
    from lstm_data.io.csv.stream import csv_blocks

    path = tmp_path / f"e{suffix}"
    write_csv(path, 4000, seed=5, token_mix=True, level=1)  # the fastest gzip: the text is what counts
    ref = lstm_data.open(path)
    table = csv_blocks(str(path), block_bytes=1 << 15, threads=threads, block_size=1 << 16)
    blocks = [b for b, _ in table.blocks()]
    assert len(blocks) > 5
    assert_same_dataset(lstm_data.data.concat.concat_datasets(blocks), ref)
    assert table.scalar_names == ref.scalar_names and table.groups == ref.groups


def test_csv_stream_error_names_the_row_of_the_file(tmp_path):
    from lstm_data.errors import ParseError

    path = tmp_path / "bad.csv"
    write_csv(path, 3000, seed=5)
    lines = path.read_text().splitlines(keepends=True)
    lines[2500] = lines[2500].replace(",", ",x1,", 1)
    path.write_text("".join(lines))
    with pytest.raises(ParseError) as want:
        lstm_data.open(path)
    with pytest.raises(ParseError) as got:
        convert_streaming([str(path)], tmp_path / "o.zarr", block_bytes=1 << 14)
    assert (got.value.line, got.value.row, got.value.file) == (want.value.line, want.value.row, str(path))
    assert not (tmp_path / "o.zarr").exists()


def test_a_plan_changed_by_a_late_row_restarts_the_stream(tmp_path):
    # a column holding one number per cell for the first MiB, and lists later: the in-RAM reader
    # re-plans; the stream starts over, reading the file whole, and writes the same store
    path = tmp_path / "late.csv"
    n = 40_000
    with open(path, "w") as fh:
        fh.write("a,b.x\n")
        for i in range(n):
            fh.write(f"{i},{i * 0.5}\n" if i < n - 10 else f'{i},"{i * 0.5},{i * 0.25}"\n')
    ref = lstm_data.open(path)
    assert "b" in ref.groups
    convert_streaming([str(path)], tmp_path / "late.zarr", block_bytes=1 << 14)
    assert_same_dataset(lstm_data.open(tmp_path / "late.zarr"), ref)
