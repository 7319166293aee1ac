"""Our zarr v3 layout: round trip, chunk-aware reads (counted on a real store), atomic writes."""
from __future__ import annotations

import pickle
import re
from collections import Counter

import numpy as np
import pytest
import zarr
from zarr.storage import LocalStore, WrapperStore

from lstm_data import FormatError
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.io.ours.zarr import ZarrDataset
from tests.helpers import as_old_zarr_store, assert_same_dataset, without_manifest


class CountingStore(WrapperStore):
    """A real LocalStore that counts every key it hands out."""

    def __init__(self, store):
        super().__init__(store)
        self.gets: Counter = Counter()

    async def get(self, key, prototype, byte_range=None):
        self.gets[key] += 1
        return await self._store.get(key, prototype, byte_range)


DS_ROWS, DS_SEED = 6000, 3  # the ``ds`` fixture (tests/conftest.py)


@pytest.fixture(scope="module")
def store(ds, tmp_path_factory):
    path = tmp_path_factory.mktemp("z") / "d.zarr"
    # small chunks so a request touches several of them
    ds.to_zarr(path, chunk_bytes=16 << 10)
    return path


def test_round_trip_bitwise(ds, store):
    z = ZarrDataset(store)
    assert len(z) == len(ds)
    assert_same_dataset(z, ds)
    assert_same_dataset(z.load(), ds)


def test_layout_attributes_and_compression(ds, store):
    root = zarr.open_group(store, mode="r")
    assert root.attrs["lstm_data_format"] == "lstm_data"
    assert root.attrs["lstm_data_version"] == 1
    assert root["png"].attrs["names"] == ds.groups["png"]
    values = root["png/values"]
    assert values.shape == (ds.ragged("png")[1][-1], 33)
    assert values.chunks[0] * 33 * 4 <= 1.5 * (16 << 10) + 33 * 4  # equal chunks, the count nearest 16 KiB each
    assert values.nbytes_stored() < values.nbytes  # compressed


def test_take_any_order_with_repeats(ds, store):
    z = ZarrDataset(store)
    rows = np.random.default_rng(0).integers(0, len(ds), 300)
    rows[:5] = rows[0]
    assert_same_dataset(z.take(rows), ds.take(rows))
    empty = z.take(np.zeros(0, dtype=np.intp))
    assert len(empty) == 0 and empty.ragged("png")[0].shape == (0, 33)


def _touched_chunks(offsets, rows, chunk_len):
    touched = set()
    for r in rows:
        a, b = offsets[r], offsets[r + 1]
        if b > a:
            touched.update(range(a // chunk_len, (b - 1) // chunk_len + 1))
    return touched


def test_each_touched_chunk_is_read_once(ds, store):
    counting = CountingStore(LocalStore(store, read_only=True))
    z = ZarrDataset(counting)
    counting.gets.clear()
    rows = np.random.default_rng(1).choice(len(ds), 40, replace=False)
    rows = np.concatenate([rows, rows[:10]])  # repeats must not cause re-reads
    values, offsets = z.ragged("png", rows)
    chunk_len = zarr.open_group(store, mode="r")["png/values"].chunks[0]
    expected = _touched_chunks(ds.ragged("png")[1], rows, chunk_len)
    got = {k for k in counting.gets if k.startswith("png/values/c/")}
    assert len(got) == len(expected) and len(expected) < len(ds.ragged("png")[0]) // chunk_len
    assert {int(k.split("/")[3]) for k in got} == expected
    assert max(counting.gets[k] for k in got) == 1
    assert z.io_stats.chunks_read == len(expected)
    ref_v, ref_o = ds.ragged("png", rows)
    assert np.array_equal(offsets, ref_o) and values.tobytes() == ref_v.tobytes()


def test_contiguous_rows_read_few_chunks(ds, store):
    z = ZarrDataset(store)
    z.io_stats.track_chunks()
    z.ragged("png", np.arange(1000, 1100))
    chunk_len = zarr.open_group(store, mode="r")["png/values"].chunks[0]
    span = z.offsets("png")[1100] - z.offsets("png")[1000]
    assert z.io_stats.chunks_read <= span // chunk_len + 2
    assert z.io_stats.reads == 1  # one coalesced read
    assert max(z.io_stats.per_chunk.values()) == 1


def test_hook_sees_every_read(store):
    z = ZarrDataset(store)
    seen = []
    z.io_stats.hook = lambda key, first, stop: seen.append((key, first, stop))
    z.take(np.arange(0, 6000, 500))
    assert seen and all(stop > first for _, first, stop in seen)
    assert {k for k, _, _ in seen} == {"png/values", "png2d/values"}


def test_pickle_sends_the_path_not_the_data(store):
    z = ZarrDataset(store)
    blob = pickle.dumps(z)
    assert len(blob) < 1000
    z2 = pickle.loads(blob)
    assert_same_dataset(z2.take([5, 1, 5]), z.take([5, 1, 5]))


def test_permuted_and_streamed_write(ds, tmp_path):
    perm = np.random.default_rng(7).permutation(len(ds))
    seen = []
    ds.to_zarr(tmp_path / "p.zarr", permutation=perm, block_bytes=50_000,
               progress=lambda done, total: seen.append((done, total)))
    assert len(seen) > 3 and seen[-1][0] == seen[-1][1]
    assert_same_dataset(ZarrDataset(tmp_path / "p.zarr"), ds.take(perm))
    with pytest.raises(ValueError, match="permutation"):
        ds.to_zarr(tmp_path / "bad.zarr", permutation=np.zeros(len(ds), dtype=int))
    assert not (tmp_path / "bad.zarr").exists()


class _Failing(InMemoryDataset):
    """Raises while its second row block is being written."""

    calls = 0

    def _ragged(self, group, rows):
        if rows is not None and len(rows) and rows[0] > 0:
            raise RuntimeError("disk on fire")
        return super()._ragged(group, rows)


def test_failed_write_leaves_nothing(ds, tmp_path):
    bad = _Failing({s: ds.scalar(s) for s in ds.scalar_names},
                   {g: RaggedGroup(ds.groups[g], *ds.ragged(g)) for g in ds.groups})
    with pytest.raises(RuntimeError, match="disk on fire"):
        bad.to_zarr(tmp_path / "x.zarr", block_bytes=50_000)
    assert list(tmp_path.iterdir()) == []
    ds.to_zarr(tmp_path / "x.zarr")
    with pytest.raises(FileExistsError):
        ds.to_zarr(tmp_path / "x.zarr")
    with pytest.raises(RuntimeError):
        bad.to_zarr(tmp_path / "x.zarr", block_bytes=50_000, overwrite=True)
    assert_same_dataset(ZarrDataset(tmp_path / "x.zarr"), ds)  # the old store survives
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.zarr"]


def test_incomplete_store_is_rejected(tmp_path):
    root = zarr.open_group(tmp_path / "half.zarr", mode="w", zarr_format=3)
    root.create_array("calE", shape=(3,), dtype="f4")
    with pytest.raises(FormatError, match="not an lstm_data store"):
        ZarrDataset(tmp_path / "half.zarr")


def test_empty_rows_and_empty_group(tmp_path):
    off = np.array([0, 0, 2, 2], dtype=np.int64)
    ds = InMemoryDataset({"a": np.array([1.0, np.nan, 3.0])},
                         {"png": RaggedGroup(["png.x"], np.array([[1.5], [2.5]], np.float32), off),
                          "none": RaggedGroup(["none.y"], np.zeros((0, 1), np.float64),
                                              np.zeros(4, np.int64))})
    ds.to_zarr(tmp_path / "e.zarr")
    z = ZarrDataset(tmp_path / "e.zarr")
    assert_same_dataset(z, ds)
    assert_same_dataset(z.take([2, 1, 0, 1]), ds.take([2, 1, 0, 1]))


# -- direct chunk decoding and the contiguous-run path ---------------------------------------


def test_local_store_decodes_chunks_directly(ds, store):
    z = ZarrDataset(store)
    assert all(dg.read_into is not None for dg in z._disk_groups.values())
    counting = ZarrDataset(CountingStore(LocalStore(store, read_only=True)))
    assert all(dg.read_into is None for dg in counting._disk_groups.values())  # zarr-python path
    rng = np.random.default_rng(5)
    for rows in (np.arange(17, 4100), np.concatenate([np.arange(3000, 3400), np.arange(10, 900)]),
                 rng.integers(0, len(ds), 500)):
        assert_same_dataset(z.take(rows), ds.take(rows))
        assert_same_dataset(counting.take(rows), ds.take(rows))


def test_runs_of_rows_decode_each_chunk_once(ds, store):
    z = ZarrDataset(store)
    z.io_stats.track_chunks()
    # two runs sharing a chunk, in reverse order, plus a long run
    off = ds.ragged("png")[1]
    chunk_len = zarr.open_group(store, mode="r")["png/values"].chunks[0]
    mid = int(np.searchsorted(off, 30 * chunk_len + chunk_len // 2))
    assert mid > 300
    rows = np.concatenate([np.arange(mid, mid + 400), np.arange(mid - 300, mid - 1),
                           np.arange(2500, 4000)])
    got_v, got_o = z.ragged("png", rows)
    ref_v, ref_o = ds.ragged("png", rows)
    assert np.array_equal(got_o, ref_o) and got_v.tobytes() == ref_v.tobytes()
    expected = _touched_chunks(off, rows, chunk_len)
    png = {c: n for (k, c), n in z.io_stats.per_chunk.items() if k == "png/values"}
    assert set(png) == expected and max(png.values()) == 1


def test_chunks_equal_to_the_fill_value_are_stored_and_read(tmp_path):
    n = 4000
    off = np.arange(n + 1, dtype=np.int64)
    values = np.zeros((n, 2), np.float32)
    values[3000:] = 1.5  # the first chunks are all fill value: written all the same
    ds = InMemoryDataset({"a": np.arange(n, dtype=np.float64)},
                         {"png": RaggedGroup(["png.x", "png.y"], values, off)})
    ds.to_zarr(tmp_path / "f.zarr", chunk_bytes=4096)
    z = ZarrDataset(tmp_path / "f.zarr")
    assert z._disk_groups["png"].read_into is not None
    assert_same_dataset(z, ds)
    assert_same_dataset(z.take(np.arange(100, 3500)), ds.take(np.arange(100, 3500)))


def test_zstd_and_uncompressed_stores_read_directly(ds, tmp_path):
    from zarr.codecs import ZstdCodec

    for cname in ("zstd", "blosclz"):
        ds.to_zarr(tmp_path / f"{cname}.zarr", cname=cname, clevel=1, chunk_bytes=16 << 10)
        assert_same_dataset(ZarrDataset(tmp_path / f"{cname}.zarr").take(np.arange(50, 3000)),
                    ds.take(np.arange(50, 3000)))
    root = zarr.open_group(tmp_path / "plain.zarr", mode="w", zarr_format=3)
    for name, codec in (("zstd", ZstdCodec(level=1)), ("raw", None)):
        arr = root.create_array(name, shape=(1000, 3), chunks=(64, 3), dtype="f8",
                                compressors=codec, fill_value=0)
        data = np.random.default_rng(0).random((1000, 3))
        arr[:] = data
        from lstm_data.io.ours.zarr_chunks import ChunkDecoder

        dec = ChunkDecoder.for_array(arr)
        assert dec is not None
        out = np.empty((900, 3))
        dec.read_into(30, 930, out)
        assert np.array_equal(out, data[30:930])


# -- damaged stores: every bad chunk is a FormatError naming the chunk file and the array -----


def _two_chunkings(tmp_path, ds):
    """The same data written with small (``s.zarr``) and large (``b.zarr``) value chunks."""
    ds.to_zarr(tmp_path / "s.zarr", chunk_bytes=16 << 10)
    ds.to_zarr(tmp_path / "b.zarr", chunk_bytes=64 << 10)
    return tmp_path / "s.zarr", tmp_path / "b.zarr"


@pytest.mark.parametrize("direction", ["short", "long"])
def test_chunk_of_another_chunking_is_a_format_error(ds, tmp_path, direction):
    small, big = _two_chunkings(tmp_path, ds)
    src, dst = (small, big) if direction == "short" else (big, small)
    chunk = dst / "png" / "values" / "c" / "1" / "0"
    chunk.write_bytes((src / "png" / "values" / "c" / "0" / "0").read_bytes())
    with pytest.raises(FormatError, match=r"chunk 1 of array 'png/values' .* bytes on disk where the "
                                          r"manifest records"):  # refused by its size, unread
        ZarrDataset(dst).ragged("png")
    z = ZarrDataset(without_manifest(dst))  # without a manifest, the frame checks refuse it
    with pytest.raises(FormatError, match=r"chunk 1 of array 'png/values'") as err:
        z.ragged("png")
    assert err.value.file == str(chunk)
    if direction == "short":  # numcodecs' decode(out=) alone would accept this frame
        assert re.search(r"decodes to \d+ bytes, expected \d+", str(err.value))
    assert_same_dataset(z.take(np.arange(0, 5)), ds.take(np.arange(0, 5)))  # other chunks still read


def test_truncated_chunk_is_a_format_error_naming_it(ds, tmp_path):
    # without the checksum (which fails first, see tests/io/test_integrity.py) the frame
    # checks still catch it
    ds.to_zarr(tmp_path / "t.zarr", chunk_bytes=16 << 10, checksum=False)
    without_manifest(tmp_path / "t.zarr")  # whose size check would refuse it first
    chunk = tmp_path / "t.zarr" / "png2d" / "values" / "c" / "2" / "0"
    chunk.write_bytes(chunk.read_bytes()[:100])
    with pytest.raises(FormatError, match=r"chunk 2 of array 'png2d/values' is 100 bytes long, "
                                          r"but its Blosc header says \d+") as err:
        ZarrDataset(tmp_path / "t.zarr").take(np.arange(len(ds)))
    assert err.value.file == str(chunk)
    chunk.write_bytes(b"\x02\x01")  # not even a header
    with pytest.raises(FormatError, match="shorter than a Blosc header"):
        ZarrDataset(tmp_path / "t.zarr").ragged("png2d")


def test_garbage_in_a_valid_blosc_frame_is_a_format_error(ds, tmp_path):
    ds.to_zarr(tmp_path / "g.zarr", chunk_bytes=16 << 10, clevel=9, checksum=False)
    chunk = tmp_path / "g.zarr" / "png" / "values" / "c" / "0" / "0"
    raw = bytearray(chunk.read_bytes())
    raw[16:] = b"\xff" * (len(raw) - 16)  # header intact, compressed stream destroyed
    chunk.write_bytes(bytes(raw))
    with pytest.raises(FormatError, match=r"cannot decode chunk 0 of array 'png/values'") as err:
        ZarrDataset(tmp_path / "g.zarr").ragged("png")
    assert err.value.file == str(chunk)


@pytest.mark.parametrize("codec", ["zstd", "raw"])
def test_zstd_and_raw_chunks_of_wrong_size_are_format_errors(tmp_path, codec):
    from zarr.codecs import ZstdCodec

    from lstm_data.io.ours.zarr_chunks import ChunkDecoder

    root = zarr.open_group(tmp_path / "a.zarr", mode="w", zarr_format=3)
    data = np.random.default_rng(0).random((1000, 3))
    arrays = {}
    compressor = ZstdCodec(level=1) if codec == "zstd" else None
    for name, chunk_len in (("small", 32), ("big", 64)):
        arrays[name] = root.create_array(name, shape=data.shape, chunks=(chunk_len, 3), dtype="f8",
                                         compressors=compressor, fill_value=0)
        arrays[name][:] = data
    dec = ChunkDecoder.for_array(arrays["big"])
    assert dec is not None and np.array_equal(dec.read(0, 1000), data)
    chunk = tmp_path / "a.zarr" / "big" / "c" / "3" / "0"
    chunk.write_bytes((tmp_path / "a.zarr" / "small" / "c" / "0" / "0").read_bytes())
    with pytest.raises(FormatError, match=r"chunk 3 of array 'big' decodes to 768 bytes, "
                                          r"expected 1536 \(64 records of 24 bytes\)") as err:
        dec.read(100, 300)
    assert err.value.file == str(chunk)
    chunk.write_bytes(b"\x28\xb5\x2f")  # cut inside the Zstd magic / 3 raw bytes
    with pytest.raises(FormatError, match=r"chunk 3 of array 'big'") as err:
        dec.read(100, 300)
    assert err.value.file == str(chunk)


def test_missing_values_chunk_of_an_old_store_reads_as_fill(ds, tmp_path):
    # stores written before every chunk was stored left all-zero chunks out (zarr's
    # write_empty_chunks=False), so there a missing values chunk may be legitimate zeros;
    # only a caller that knows better can make it an error (new stores: test_integrity.py)
    from lstm_data.io.ours.zarr_chunks import ChunkDecoder

    ds.to_zarr(tmp_path / "m.zarr", chunk_bytes=16 << 10, checksum=False)
    as_old_zarr_store(tmp_path / "m.zarr")
    chunk = tmp_path / "m.zarr" / "png" / "values" / "c" / "1" / "0"
    chunk.unlink()
    values = zarr.open_group(tmp_path / "m.zarr", mode="r")["png/values"]
    c = values.chunks[0]
    old = ZarrDataset(tmp_path / "m.zarr")
    assert not old.ragged("png")[0][c:2 * c].any()
    assert len(old.notes) == 1 and "reads back as zeros" in old.notes[0]
    strict = ChunkDecoder.for_array(values, fill_missing=False)
    with pytest.raises(FormatError, match=r"chunk 1 of array 'png/values' is missing") as err:
        strict.read(0, 3 * c)
    assert err.value.file == str(chunk)
    assert strict.read(0, c).tobytes() == ds.ragged("png")[0][:c].tobytes()


def test_missing_offsets_chunk_of_an_old_store_is_a_format_error_naming_the_row(ds, tmp_path):
    ds.to_zarr(tmp_path / "o.zarr", chunk_bytes=16 << 10, checksum=False)
    as_old_zarr_store(tmp_path / "o.zarr")
    c = zarr.open_group(tmp_path / "o.zarr", mode="r")["png/offsets"].chunks[0]
    (tmp_path / "o.zarr" / "png" / "offsets" / "c" / "1").unlink()  # reads back as zeros
    with pytest.raises(FormatError, match=r"decrease") as err:
        ZarrDataset(tmp_path / "o.zarr")
    assert err.value.file == str(tmp_path / "o.zarr") and err.value.variable == "png"
    assert err.value.row == c - 1  # its end is offsets[c], the first lost one
