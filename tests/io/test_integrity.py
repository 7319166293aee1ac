"""Damaged stores read as errors, never as numbers (issue 16, items 2 and 3).

* zarr: every chunk is written (all-zero ones too) and the store says so, so a lost
  chunk is a ``FormatError`` naming store, array and chunk on every read path; each
  chunk carries a CRC-32C checksum, so a flipped byte is one too.
* HDF5: every chunked dataset carries ``fletcher32``; a read HDF5 refuses is a
  ``FormatError`` naming file, group/array and chunk, chained from h5py's ``OSError``.
"""
from __future__ import annotations

import re

import h5py
import numpy as np
import pytest
import zarr
from zarr.storage import LocalStore

import lstm_data
from lstm_data import Batches, BatchSpec, FormatError, Order
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.io.hdf5.reader import HDF5Dataset, read_vlen_hdf5
from lstm_data.io.ours.zarr import ZarrDataset
from tests.helpers import EXAMPLES, assert_same_dataset
from tests.io.test_zarr import CountingStore

DS_ROWS, DS_SEED = 3000, 11  # the ``ds`` fixture (tests/conftest.py)
SMALL = 4 << 10  # chunk bytes: every array (scalars too) has several chunks


@pytest.fixture(scope="module")
def spec():
    return BatchSpec.from_toml(EXAMPLES / "numu_v3.toml")


@pytest.fixture(scope="module")
def good(ds, tmp_path_factory):
    """A store written now, never damaged (tests copy it)."""
    path = tmp_path_factory.mktemp("good") / "d.zarr"
    ds.to_zarr(path, chunk_bytes=SMALL)
    return path


def _copy(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


def _chunk_files(path, array):
    return sorted(p for p in (path / array / "c").rglob("*") if p.is_file())


def _last_chunk(path, array):
    arr = zarr.open_group(path, mode="r")[array]
    return arr.nchunks - 1


def _chunk_path(path, array, index):
    arr = zarr.open_group(path, mode="r")[array]
    return path / array / arr.metadata.encode_chunk_key((index,) + (0,) * (arr.ndim - 1))


# -- every chunk is written ----------------------------------------------------------------------


def test_writer_stores_all_zero_chunks_and_says_so(tmp_path):
    n = 4000
    values = np.random.default_rng(0).random((n, 2)).astype(np.float32)
    values[1024:2048] = 0  # whole chunks of zeros (fill value): zarr would leave them out
    ds = InMemoryDataset({"zero": np.zeros(n), "a": np.arange(n, dtype=np.float64)},
                         {"png": RaggedGroup(["png.x", "png.y"], values,
                                             np.arange(n + 1, dtype=np.int64))})
    ds.to_zarr(tmp_path / "z.zarr", chunk_bytes=4096)
    root = zarr.open_group(tmp_path / "z.zarr", mode="r")
    assert root.attrs["lstm_data_every_chunk_stored"] is True
    for key in ("zero", "a", "png/offsets", "png/values"):
        arr = root[key]
        assert len(_chunk_files(tmp_path / "z.zarr", key)) == arr.nchunks > 1, key
        assert arr.nchunks_initialized == arr.nchunks
        assert type(arr.metadata.codecs[-1]).__name__ == "Crc32cCodec"
    z = ZarrDataset(tmp_path / "z.zarr")
    assert z.notes == ()
    assert_same_dataset(z, ds)


# -- a lost chunk is an error on every read path ---------------------------------------------


@pytest.mark.parametrize("array,where", [("calE", "middle"), ("calE", "last"),
                                         ("png/offsets", "middle"), ("png/offsets", "last"),
                                         ("png2d/offsets", "last")])
def test_lost_scalar_or_offsets_chunk_fails_at_open(good, tmp_path, array, where):
    path = _copy(good, tmp_path / "d.zarr")
    index = 1 if where == "middle" else _last_chunk(path, array)
    chunk = _chunk_path(path, array, index)
    chunk.unlink()
    for open_ in (lambda: lstm_data.open(path),
                  lambda: ZarrDataset(CountingStore(LocalStore(path, read_only=True)))):
        with pytest.raises(FormatError, match=rf"chunk {index} of array '{array}' is missing") as err:
            open_()
        assert str(path) in err.value.file and err.value.file.endswith(
            str(chunk.relative_to(path)))


def _values_readers(path, spec, ds):
    """Every way a training run reads values, each as a thunk returning all it read."""
    rows = np.random.default_rng(3).permutation(len(ds))

    def batches(shuffle, read_ahead=None):
        b = Batches(lstm_data.open(path), spec, Order(batch_size=256, seed=1, shuffle=shuffle,
                                                          read_ahead=read_ahead))
        return lambda: [b[i] for i in range(len(b))]

    return {
        "open+ragged": lambda: lstm_data.open(path).ragged("png"),
        "coalesced random rows": lambda: lstm_data.open(path).ragged("png", rows),
        "zarr-python store": lambda: ZarrDataset(
            CountingStore(LocalStore(path, read_only=True))).ragged("png", rows[:500]),
        "random batches": batches(shuffle=True),
        "block shuffle read-ahead": batches(shuffle="block", read_ahead=True),
        "threads": lambda: list(Batches(lstm_data.open(path), spec,
                                        Order(batch_size=256, seed=1, shuffle=True)).iter(threads=2)),
    }


@pytest.mark.parametrize("where", ["middle", "last (partial)"])
@pytest.mark.parametrize("reader", ["open+ragged", "coalesced random rows", "zarr-python store",
                                    "random batches", "block shuffle read-ahead", "threads"])
def test_lost_values_chunk_fails_every_read_path(good, tmp_path, ds, spec, reader, where):
    path = _copy(good, tmp_path / "d.zarr")
    index = 2 if where == "middle" else _last_chunk(path, "png/values")
    chunk = _chunk_path(path, "png/values", index)
    assert where == "middle" or zarr.open_group(path)["png/values"].shape[0] % zarr.open_group(
        path)["png/values"].chunks[0], "the last chunk must be a partial one"
    chunk.unlink()
    z = lstm_data.open(path)  # opens: values are read per request
    assert_same_dataset(z.take(np.arange(3)), ds.take(np.arange(3)))
    with pytest.raises(FormatError, match=rf"chunk {index} of array 'png/values' is missing "
                                          rf"\(chunk key 'c/{index}/0'\)") as err:
        _values_readers(path, spec, ds)[reader]()
    assert str(path) in err.value.file


def test_old_store_with_a_lost_chunk_keeps_reading_zeros_with_a_note(ds, tmp_path):
    from tests.helpers import as_old_zarr_store

    path = tmp_path / "old.zarr"
    ds.to_zarr(path, chunk_bytes=SMALL, checksum=False)
    as_old_zarr_store(path)
    _chunk_path(path, "png/values", 2).unlink()
    z = lstm_data.open(path)
    c = zarr.open_group(path)["png/values"].chunks[0]
    values = z.ragged("png")[0]
    assert not values[2 * c:3 * c].any() and values[:2 * c].tobytes() == ds.ragged("png")[0][
        :2 * c].tobytes()
    assert len(z.notes) == 1 and str(path) in z.notes[0] and "re-convert" in z.notes[0]


# -- a damaged chunk fails its checksum ------------------------------------------------------


def _flip(path, offset=None, n=1):
    raw = bytearray(path.read_bytes())
    at = len(raw) // 2 if offset is None else offset
    raw[at:at + n] = bytes(b ^ 0xFF for b in raw[at:at + n])
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("array", ["png/values", "png2d/values", "calE", "png/offsets"])
@pytest.mark.parametrize("store", ["local", "zarr-python"])
def test_flipped_byte_in_a_chunk_is_a_format_error(good, tmp_path, array, store):
    path = _copy(good, tmp_path / "d.zarr")
    chunk = _chunk_path(path, array, 1)
    _flip(chunk)
    pattern = rf"chunk 1 of array '{array}'"

    def read():
        src = path if store == "local" else CountingStore(LocalStore(path, read_only=True))
        z = ZarrDataset(src)
        z.ragged(array.split("/")[0]) if array.endswith("values") else None

    with pytest.raises(FormatError, match=pattern) as err:
        read()
    assert re.search(r"CRC-32C|checksum", str(err.value)), str(err.value)
    assert err.value.file.endswith(str(chunk.relative_to(path)))


def test_checksum_is_verified_before_decoding_on_every_values_path(good, tmp_path, ds, spec):
    path = _copy(good, tmp_path / "d.zarr")
    _flip(_chunk_path(path, "png/values", 3), n=1)
    for read in _values_readers(path, spec, ds).values():
        with pytest.raises(FormatError, match=r"chunk 3 of array 'png/values'"):
            read()


def test_a_chunk_damaged_after_it_was_read_is_caught_on_the_next_read(good, tmp_path, ds):
    path = _copy(good, tmp_path / "d.zarr")
    z = lstm_data.open(path)
    assert_same_dataset(z, ds)  # every checksum verified once
    _flip(_chunk_path(path, "png/values", 1))
    with pytest.raises(FormatError, match=r"chunk 1 of array 'png/values' fails its CRC-32C"):
        z.ragged("png")


# -- the precomputed batch store -------------------------------------------------------------


@pytest.fixture(scope="module")
def batch_store(ds, spec, tmp_path_factory):
    from lstm_data.store.write import precompute

    out = tmp_path_factory.mktemp("b") / "b.zarr"
    precompute(ds, spec, out, Order(batch_size=256, seed=2), progress=False)
    return out


def _largest_output(path):
    data = zarr.open_group(path, mode="r")["data"]
    return max(data.array_keys(), key=lambda k: data[k].nchunks)


def test_batch_store_writes_every_chunk_and_checksums(batch_store):
    root = zarr.open_group(batch_store, mode="r")
    assert root.attrs["lstm_data_every_chunk_stored"] is True
    for name, arr in list(root["data"].arrays()) + list(root["_index"].arrays()):
        assert arr.nchunks_initialized == arr.nchunks, name
        assert type(arr.metadata.codecs[-1]).__name__ == "Crc32cCodec", name
    assert lstm_data.open_batches(batch_store).notes == ()


@pytest.mark.parametrize("damage", ["lost", "flipped"])
def test_batch_store_chunk_damage_is_a_format_error(batch_store, tmp_path, damage):
    path = _copy(batch_store, tmp_path / "b.zarr")
    name = _largest_output(path)
    arr = zarr.open_group(path, mode="r")[f"data/{name}"]
    assert arr.nchunks > 1
    chunk = _chunk_path(path, f"data/{name}", arr.nchunks - 1)  # the trailing partial chunk
    chunk.unlink() if damage == "lost" else _flip(chunk)
    stored = lstm_data.open_batches(path)
    with pytest.raises(FormatError, match=rf"chunk {arr.nchunks - 1} of array 'data/{name}'") as err:
        for i in range(len(stored)):
            stored[i]
    assert str(path) in err.value.file


def test_batch_store_lost_index_chunk_fails_at_open(batch_store, tmp_path):
    path = _copy(batch_store, tmp_path / "b.zarr")
    index = zarr.open_group(path, mode="r")["_index"]
    key = next(iter(index.array_keys()))
    _chunk_path(path, f"_index/{key}", 0).unlink()
    with pytest.raises(FormatError, match=rf"chunk 0 of array '_index/{re.escape(key)}' is missing"):
        lstm_data.open_batches(path)


def test_old_batch_store_keeps_reading_with_a_note(batch_store, tmp_path):
    from tests.helpers import as_old_zarr_store

    path = as_old_zarr_store(_copy(batch_store, tmp_path / "b.zarr"))
    with pytest.warns(lstm_data.UncheckedStoreWarning, match="reads back as zeros.*no manifest"):
        stored = lstm_data.open_batches(path)
    assert len(stored.notes) == 1 and "precompute --overwrite" in stored.notes[0]
    stored[0]


# -- HDF5: fletcher32 and located read errors ------------------------------------------------


@pytest.mark.parametrize("compression", ["gzip", "lzf", None])
def test_hdf5_writer_checksums_every_dataset(ds, tmp_path, compression):
    ds.to_hdf5(tmp_path / "d.h5", compression=compression, chunk_bytes=SMALL)
    with h5py.File(tmp_path / "d.h5", "r") as fh:
        keys = []
        fh.visititems(lambda k, v: keys.append(k) if isinstance(v, h5py.Dataset) else None)
        assert len(keys) == len(ds.scalar_names) + 2 * len(ds.groups)
        for k in keys:
            assert fh[k].chunks and fh[k].fletcher32, k
            assert fh[k].compression == compression, k
    h = HDF5Dataset(tmp_path / "d.h5")
    assert h.notes == ()
    assert_same_dataset(h, ds)
    h.close()


def _flip_hdf5_chunk(path, key, index, n=8):
    """Invert ``n`` bytes in the middle of chunk ``index`` of dataset ``key``."""
    with h5py.File(path, "r") as fh:
        info = fh[key].id.get_chunk_info(index)
    _flip(path, info.byte_offset + info.size // 2, n)


@pytest.mark.parametrize("compression", ["lzf", "gzip", None])
def test_damaged_hdf5_values_chunk_is_a_format_error(ds, tmp_path, compression):
    path = tmp_path / "d.h5"
    ds.to_hdf5(path, compression=compression, chunk_bytes=SMALL)
    _flip_hdf5_chunk(path, "png/values", 2)
    h = lstm_data.open(path)
    assert_same_dataset(h.take(np.arange(3)), ds.take(np.arange(3)))  # other chunks read
    for read in (lambda: h.ragged("png"),
                 lambda: h.ragged("png", np.random.default_rng(0).permutation(len(ds)))):
        with pytest.raises(FormatError, match=r"cannot read chunk 2 \(records \d+:\d+\) of "
                                              r"dataset 'png/values': damaged") as err:
            read()
        assert err.value.file == str(path) and err.value.variable == "png"
        assert isinstance(err.value.__cause__, OSError)
    h.close()


@pytest.mark.parametrize("key", ["calE", "png2d/offsets"])
def test_damaged_hdf5_scalar_or_offsets_chunk_fails_at_open(ds, tmp_path, key):
    path = tmp_path / "d.h5"
    ds.to_hdf5(path, compression="lzf", chunk_bytes=SMALL)
    _flip_hdf5_chunk(path, key, 1)
    with pytest.raises(FormatError, match=rf"chunk 1 \(records \d+:\d+\) of dataset '{key}'") as err:
        lstm_data.open(path)
    assert err.value.file == str(path) and isinstance(err.value.__cause__, OSError)


def test_hdf5_file_without_checksums_has_a_note(ds, tmp_path):
    path = tmp_path / "bare.h5"
    ds.to_hdf5(path, chunk_bytes=SMALL)
    with h5py.File(path, "r") as src, h5py.File(tmp_path / "copy.h5", "w") as dst:
        for k, v in src.attrs.items():
            dst.attrs[k] = v

        def copy(name, node):
            if isinstance(node, h5py.Group):
                dst.create_group(name)
                for k, v in node.attrs.items():
                    dst[name].attrs[k] = v
            else:
                dst.create_dataset(name, data=node[()], chunks=node.chunks, compression="lzf")
        src.visititems(copy)
    h = HDF5Dataset(tmp_path / "copy.h5")
    assert len(h.notes) == 1 and "fletcher32" in h.notes[0] and str(tmp_path / "copy.h5") in h.notes[0]
    h.close()


def test_damaged_vlen_hdf5_chunk_is_a_format_error(tmp_path):
    """lstm_ee-like file written with h5py (gzip): bare OSError before, now located."""
    path = tmp_path / "ee.h5"
    rng = np.random.default_rng(0)
    n = 5000
    with h5py.File(path, "w") as fh:
        fh.create_dataset("calE", data=rng.random(n).astype(np.float32), chunks=(500,),
                          compression="gzip")
        vl = fh.create_dataset("png.calE", (n,), dtype=h5py.vlen_dtype(np.float32),
                               chunks=(500,), compression="gzip")
        for i in range(n):
            vl[i] = rng.random(i % 4).astype(np.float32)
    assert len(read_vlen_hdf5(path)) == n
    _flip_hdf5_chunk(path, "calE", 3, n=16)
    with pytest.raises(FormatError, match=r"chunk 3 \(records 1500:2000\) of dataset 'calE'") as err:
        read_vlen_hdf5(path)
    assert err.value.file == str(path) and isinstance(err.value.__cause__, OSError)


@pytest.mark.parametrize("key,chunk", [("calE", 4), ("png_calE", 1)])
def test_damaged_pytables_file_is_a_format_error(tmp_path, key, chunk):
    """lstm_ee's own layout (PyTables, zlib): a damaged earray or VLArray chunk."""
    tables = pytest.importorskip("tables")
    path = tmp_path / "ee.h5"
    n = 6000
    with tables.open_file(str(path), "w", filters=tables.Filters(complib="zlib", complevel=5)) as f:
        arr = f.create_earray("/", "calE", atom=tables.Float32Atom(), shape=(0,), chunkshape=(1000,))
        arr.append(np.random.default_rng(1).random(n).astype(np.float32))
        vl = f.create_vlarray("/", "png_calE", atom=tables.Float32Atom(shape=()), chunkshape=(1000,))
        for i in range(n):
            vl.append(np.arange(i % 5, dtype=np.float32))
    _flip_hdf5_chunk(path, key, chunk, n=16)
    with pytest.raises(FormatError, match=rf"chunk {chunk} \(records {chunk}000:{chunk + 1}000\) "
                                          rf"of dataset '{key}'") as err:
        lstm_data.open(path)
    assert err.value.file == str(path) and isinstance(err.value.__cause__, OSError)


def test_a_partly_read_chunk_kept_for_the_next_read_is_checked_unchanged(good, tmp_path):
    """A reader keeps its last partly read chunk for the next read of the same chunk (batches in file
    order); a chunk file changed in between is read again, and its damage is found."""
    from lstm_data.io.ours.zarr_chunks import ChunkDecoder

    path = _copy(good, tmp_path / "k.zarr")
    array = zarr.open_group(path, mode="r")["png/values"]
    decoder = ChunkDecoder.for_array(array)
    c = decoder.chunk_len
    assert c >= 4 and array.shape[0] > 2 * c
    first, second = np.empty((c // 2,) + array.shape[1:], array.dtype), np.empty((c - c // 2,) + array.shape[1:],
                                                                                  array.dtype)
    decoder.read_into(c, c + c // 2, first)  # chunk 1 decoded for its first half, and kept
    decoder.read_into(c + c // 2, 2 * c, second)  # its second half: from the kept copy
    assert np.array_equal(np.concatenate([first, second]), array[c:2 * c])
    decoder.read_into(c, c + c // 2, first)
    _flip(_chunk_path(path, "png/values", 1))  # changed on disk before the next read
    with pytest.raises(FormatError, match=r"chunk 1 of array 'png/values' fails its CRC-32C"):
        decoder.read_into(c + c // 2, 2 * c, second)
