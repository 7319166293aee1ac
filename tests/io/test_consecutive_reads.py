"""Consecutive rows of several files are read as one: chunks that end with their array, rows
decoded straight into one buffer, scalars checked once per batch."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import zarr

import lstm_data
from lstm_data.data.concat import ConcatDataset
from lstm_data.errors import SchemaError

DS_ROWS = 2000


def _arrays(path):
    root = zarr.open_group(str(path), mode="r")
    out = {}

    def walk(group, prefix=""):
        for name, node in group.members():
            if isinstance(node, zarr.Array):
                out[prefix + name] = node
            else:
                walk(node, prefix + name + "/")
    walk(root)
    return out


@pytest.mark.parametrize("chunk_bytes", [4096, 1 << 20])
def test_arrays_of_known_length_get_equal_chunks_that_end_with_them(ds, tmp_path, chunk_bytes):
    ds.to_zarr(tmp_path / "a.zarr", chunk_bytes=chunk_bytes)
    arrays = _arrays(tmp_path / "a.zarr")
    assert any(k.endswith("/values") for k in arrays)
    for key, arr in arrays.items():
        n, c = arr.shape[0], arr.chunks[0]
        row_bytes = int(np.prod(arr.shape[1:], dtype=np.int64)) * arr.dtype.itemsize
        k = math.ceil(n / c)
        assert c * row_bytes <= max(1.5 * chunk_bytes, row_bytes) + row_bytes, key  # about the size asked
        assert k * c - n < k, (key, n, c)  # the last chunk is as full as the others, less one row each
        if n * row_bytes <= chunk_bytes:
            assert c == n, key  # a small array is one chunk of its own length
        elif k > 1:
            assert c * row_bytes >= chunk_bytes / 1.5 - row_bytes, key
    back = lstm_data.open(tmp_path / "a.zarr")
    for g in ds.groups:
        np.testing.assert_array_equal(back.ragged(g)[0], ds.ragged(g)[0])


def test_streamed_text_keeps_its_chunk_length(tmp_path):
    """A CSV stream does not know its length before it is read: the chunks keep their size."""
    text = "a,b\n" + "".join(f"{i},{i * 0.5}\n" for i in range(50))
    (tmp_path / "t.csv").write_text(text)
    lstm_data.convert(tmp_path / "t.csv", tmp_path / "t.zarr")
    arr = _arrays(tmp_path / "t.zarr")["a"]
    assert arr.shape == (50,) and arr.chunks[0] > 50
    np.testing.assert_array_equal(lstm_data.open(tmp_path / "t.zarr").scalar("a"), np.arange(50))


def test_ragged_into_decodes_rows_of_a_store_straight_into_a_buffer(ds, tmp_path):
    ds.to_zarr(tmp_path / "a.zarr", chunk_bytes=8192)
    store = lstm_data.open(tmp_path / "a.zarr")
    offsets = store.offsets("png")
    for lo, hi in [(0, 1), (5, 300), (1999, 2000), (0, 2000), (700, 700)]:
        out = np.full((int(offsets[hi] - offsets[lo]), len(store.groups["png"])), -1.0, np.float32)
        store.ragged_into("png", lo, hi, out)
        np.testing.assert_array_equal(out, ds.ragged("png", slice(lo, hi))[0])
    wide = np.empty((int(offsets[20] - offsets[10]), len(store.groups["png"])), np.float64)
    store.ragged_into("png", 10, 20, wide)  # another dtype: decoded, then cast
    np.testing.assert_array_equal(wide, ds.ragged("png", slice(10, 20))[0].astype(np.float64))
    with pytest.raises(ValueError, match="out has shape"):
        store.ragged_into("png", 10, 20, np.empty((1, len(store.groups["png"])), np.float32))
    with pytest.raises(IndexError, match="out of range"):
        store.ragged_into("png", 10, 2001, np.empty((0, 1), np.float32))
    in_ram = np.empty((int(offsets[-1]), len(store.groups["png"])), np.float32)
    ds.ragged_into("png", 0, 2000, in_ram)  # the generic path: a dataset in RAM
    np.testing.assert_array_equal(in_ram, ds.ragged("png")[0])
    with pytest.raises(ValueError, match="out holds 1 records"):
        ds.ragged_into("png", 0, 2000, in_ram[:1])


def _parts(ds, tmp_path, cuts):
    tmp_path.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:])):
        paths.append(tmp_path / f"p{i}.zarr")
        ds.take(np.arange(lo, hi)).to_zarr(paths[-1])
    return lstm_data.open(paths)


def test_consecutive_rows_of_several_files_are_one_piece(ds, tmp_path):
    many = _parts(ds, tmp_path, [0, 300, 301, 1200, 2000])
    assert isinstance(many, ConcatDataset) and not many.in_ram
    for lo, hi in [(250, 1300), (299, 302), (0, 2000), (1199, 1201), (400, 900), (300, 301)]:
        rows = np.arange(lo, hi)  # the last two within one file
        pieces, at = many.ragged_pieces("png", rows)
        assert len(pieces) == 1 and at.tolist() == list(range(hi - lo))
        want = ds.ragged("png", rows)
        for got, ref in zip(pieces[0], want):
            np.testing.assert_array_equal(got, ref)
        for got, ref in zip(many.ragged("png", rows), want):  # the generic read takes the same path
            np.testing.assert_array_equal(got, ref)
    rows = np.array([1500, 10, 11, 700])  # not consecutive: one piece per file, rows placed by `at`
    pieces, at = many.ragged_pieces("png", rows)
    assert len(pieces) == 3
    flat = [(v, o, k) for v, o in pieces for k in range(len(o) - 1)]
    for i, r in enumerate(rows):
        v, o, k = flat[at[i]]
        np.testing.assert_array_equal(v[o[k]:o[k + 1]], ds.ragged("png", [r])[0])


def test_consecutive_rows_across_a_file_without_rows(ds, tmp_path):
    empty = ds.take(np.arange(0))
    empty.to_zarr(tmp_path / "empty.zarr")
    first, second = _parts(ds, tmp_path / "p", [0, 1000, 2000]).datasets
    many = ConcatDataset([first, lstm_data.open(tmp_path / "empty.zarr"), second])
    assert len(many) == 2000  # the file without rows adds none (and is left out)
    names = ds.scalar_names[:2]
    for lo, hi in [(990, 1010), (0, 2000), (1000, 1001)]:
        rows = np.arange(lo, hi)
        (values, offsets), = many.ragged_pieces("png", rows)[0]
        want = ds.ragged("png", rows)
        np.testing.assert_array_equal(values, want[0])
        np.testing.assert_array_equal(offsets, want[1])
        for n, got in many.scalars_at(names, rows).items():
            np.testing.assert_array_equal(got, ds.scalar(n, rows))


def test_consecutive_scalars_are_slices_of_the_columns_held_not_kept_in_pickles(ds, tmp_path):
    many = _parts(ds, tmp_path, [0, 700, 1400, 2000])
    assert all(p.scalars_held for p in many.datasets) and not many.scalars_held
    names = ds.scalar_names[:3]
    size = len(pickle.dumps(many))
    for lo, hi in [(0, 10), (690, 1410), (1999, 2000), (0, 2000)]:
        got = many.scalars_at(names, np.arange(lo, hi))
        for n in names:
            np.testing.assert_array_equal(got[n], ds.scalar(n, slice(lo, hi)))
            got[n][:] = -1  # a copy: the files' columns are not changed
    np.testing.assert_array_equal(many.scalar(names[0]), ds.scalar(names[0]))
    assert len(pickle.dumps(many)) == size  # a pickle sends paths, not the columns read


def test_scalars_at_checks_rows_once_and_names_each_column(ds, tmp_path):
    names = ds.scalar_names[:3]
    rows = np.array([5, 2, 1999, 2])
    got = ds.scalars_at(names, rows)
    for n in names:
        np.testing.assert_array_equal(got[n], ds.scalar(n, rows))
    with pytest.raises(SchemaError, match="unknown scalar"):
        ds.scalars_at(["nope"], rows)
    with pytest.raises(SchemaError, match="prong variable"):
        ds.scalars_at([ds.groups["png"][0]], rows)
    with pytest.raises(IndexError):
        ds.scalars_at(names, [2000])
    many = ConcatDataset(_parts(ds, tmp_path, [0, 1000, 2000]).datasets, part_values={"file": [7, 9]})
    for rows in (np.arange(990, 1010), np.arange(10, 20), np.array([1500, 3, 999])):
        got = many.scalars_at(names + ["file"], rows)
        for n in names:
            np.testing.assert_array_equal(got[n], ds.scalar(n, rows))
        np.testing.assert_array_equal(got["file"], np.where(rows < 1000, 7, 9))


def test_consecutive_rows_are_one_read_of_their_chunks(ds, tmp_path):
    ds.to_zarr(tmp_path / "a.zarr", chunk_bytes=2048)
    store = lstm_data.open(tmp_path / "a.zarr")
    store.io_stats.reset()
    store.ragged("png", np.arange(100, 140))
    assert store.io_stats.reads == 1
    store.io_stats.reset()
    store.ragged("png", np.arange(0, 2000))  # longer than one read may be: split, never one huge read
    n_chunks = math.ceil(int(store.offsets("png")[-1]) / store.value_chunk_len("png"))
    assert n_chunks > 32 and store.io_stats.reads >= math.ceil(n_chunks / 32)


def test_runs_of_rows_across_files_are_read_in_place_in_request_order(ds, tmp_path):
    """What block shuffle loads: runs of consecutive rows, the runs shuffled, across files."""
    many = _parts(ds, tmp_path, [0, 300, 301, 1200, 2000])
    runs = [(1100, 1350), (0, 40), (290, 310), (1990, 2000), (500, 520)]
    rows = np.concatenate([np.arange(a, b) for a, b in runs])
    got, want = many.take(rows), ds.take(rows)
    for g in ds.groups:
        for x, y in zip(got.ragged(g), want.ragged(g)):
            np.testing.assert_array_equal(x, y)
    for s in ds.scalar_names:
        np.testing.assert_array_equal(got.scalar(s), want.scalar(s))
    scattered = np.random.default_rng(0).permutation(2000)[:300]  # the per-file path
    np.testing.assert_array_equal(many.ragged("png", scattered)[0], ds.ragged("png", scattered)[0])
    with pytest.raises(IndexError, match="2000"):
        many.take(np.arange(1990, 2001))


def test_block_shuffle_over_zarr_files_reads_each_chunk_at_most_twice(ds, tmp_path):
    from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars

    paths = []
    for i, (lo, hi) in enumerate([(0, 700), (700, 1500), (1500, 2000)]):
        paths.append(tmp_path / f"c{i}.zarr")
        ds.take(np.arange(lo, hi)).to_zarr(paths[-1], chunk_bytes=16384)
    many = lstm_data.open(paths)
    for part in many.datasets:
        part.io_stats.track_chunks()
    spec = BatchSpec(inputs={"png": Ragged(ds.groups["png"][:3], max_len=6)},
                     targets={"t": Scalars(ds.scalar_names[:1])})
    b = Batches(many, spec, Order(batch_size=100, shuffle="block", seed=3, read_ahead=False))
    for epoch in range(2):
        for part in many.datasets:
            part.io_stats.reset()
        for i in range(len(b)):
            b.batch(i, epoch)
        for part in many.datasets:
            per = part.io_stats.per_chunk
            assert per and max(per.values()) <= 2, per


def test_a_read_over_many_files_shares_its_files_with_a_helper_thread(ds, tmp_path, monkeypatch):
    """Above a size, half of the files are read on a helper thread: the same values, and a
    damaged file read there is the same located error."""
    import lstm_data.data.concat_reads as concat_module
    from lstm_data.errors import FormatError

    monkeypatch.setattr(concat_module, "_PARALLEL_BYTES", 0)
    cuts = [0, 300, 700, 1100, 1600, 2000]
    many = _parts(ds, tmp_path, cuts)
    rows = np.arange(100, 1900)
    for got, want in zip(many.ragged("png", rows), ds.ragged("png", rows)):
        np.testing.assert_array_equal(got, want)
    pieces, _ = many.ragged_pieces("png2d", np.arange(0, 2000))
    np.testing.assert_array_equal(pieces[0][0], ds.ragged("png2d")[0])
    damaged = sorted((tmp_path / "p4.zarr").glob("png/values/c/*/*"))[0]  # read by the helper
    raw = bytearray(damaged.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    damaged.write_bytes(bytes(raw))
    fresh = lstm_data.open([tmp_path / f"p{i}.zarr" for i in range(len(cuts) - 1)])
    with pytest.raises(FormatError) as err:
        fresh.ragged("png", np.arange(0, 2000))
    assert "p4.zarr" in str(err.value)


def test_rows_changed_in_place_between_reads_are_split_again(ds, tmp_path):
    many = _parts(ds, tmp_path, [0, 1000, 2000])
    names = ds.scalar_names[:2]
    rows = np.arange(990, 1010)
    many.scalars_at(names, rows)
    rows[:] = np.arange(5, 25)[::-1]  # the same array object, other rows
    got = many.scalars_at(names, rows)
    for n in names:
        np.testing.assert_array_equal(got[n], ds.scalar(n, rows))
    pieces, at = many.ragged_pieces("png", rows)
    flat = [(v, o, k) for v, o in pieces for k in range(len(o) - 1)]
    for i, r in enumerate(rows):
        v, o, k = flat[at[i]]
        np.testing.assert_array_equal(v[o[k]:o[k + 1]], ds.ragged("png", [r])[0])


def test_parts_of_parts_read_on_the_helper_do_not_wait_on_it(ds, tmp_path, monkeypatch):
    """A part that is itself several files reads them in the helper's thread, never by waiting
    on the helper it runs in."""
    import threading

    import lstm_data.data.concat_reads as concat_module

    monkeypatch.setattr(concat_module, "_PARALLEL_BYTES", 0)
    inner = [_parts(ds.take(np.arange(lo, hi)), tmp_path / f"in{lo}", [0, (hi - lo) // 2, hi - lo])
             for lo, hi in [(0, 1000), (1000, 2000)]]
    nested = ConcatDataset(inner)
    got: list = []
    reader = threading.Thread(target=lambda: got.append(nested.ragged("png", np.arange(0, 2000))),
                              daemon=True)
    reader.start()
    reader.join(timeout=60)
    assert not reader.is_alive(), "a read of parts of parts waits on its own helper thread"
    np.testing.assert_array_equal(got[0][0], ds.ragged("png")[0])


@pytest.mark.parametrize("layout", ["padded", "packed"])
def test_batches_in_file_order_kept_across_an_epoch_stay_those_of_ram(ds, tmp_path, layout):
    """Batches in file order read each range in place: every batch kept until the epoch
    ends still equals the batch built in RAM."""
    from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars

    png = ds.groups["png"]
    spec = BatchSpec(inputs={"p": Ragged(png[:4], max_len=6, layout=layout),
                             "q": Ragged(ds.groups["png2d"][:2], max_len=5, sort_by=ds.groups["png2d"][0]),
                             "s": Scalars(ds.scalar_names[:2])})
    order = Order(batch_size=300, shuffle=False)
    want = list(Batches(ds, spec, order))
    ds.to_zarr(tmp_path / "one.zarr")
    for source in (lstm_data.open(tmp_path / "one.zarr"), _parts(ds, tmp_path / "p", [0, 500, 1300, 2000])):
        got = list(Batches(source, spec, order.replace(read_ahead=False)))
        assert len(got) == len(want)
        for w, g in zip(want, got):
            for key in w[0]:
                np.testing.assert_array_equal(g[0][key], w[0][key])


def test_ragged_range_reads_rows_in_file_order(ds, tmp_path):
    ds.to_zarr(tmp_path / "one.zarr")
    sources = [ds, lstm_data.open(tmp_path / "one.zarr"), _parts(ds, tmp_path / "p", [0, 900, 2000])]
    for source in sources:
        for lo, hi in [(0, 0), (10, 400), (850, 950), (0, 2000)]:
            want = ds.ragged("png", slice(lo, hi))
            values, offsets = source.ragged_range("png", lo, hi)
            np.testing.assert_array_equal(values, want[0])
            np.testing.assert_array_equal(offsets, want[1])
            assert offsets.dtype == np.int64
        with pytest.raises(IndexError):
            source.ragged_range("png", 5, 2001)
        with pytest.raises(SchemaError, match="unknown group"):
            source.ragged_range("nope", 0, 5)
