"""Chunks bound to their place, metadata bound to its digest (the store's manifest).

A chunk's CRC-32C proves its bytes, not where they belong: swapped chunks, a chunk
copied over another position or another array's chunk, and edited ``zarr.json``
files (dtype, byte order, variable order) must be ``FormatError``s naming the
store, the file and (for chunks) array and chunk, on every read path: our direct
decoder, zarr-python, precomputed batch stores and HTTP.
"""
from __future__ import annotations

import functools
import http.server
import json
import re
import shutil
import threading

import numpy as np
import pytest
import zarr
from zarr.storage import LocalStore

import lstm_data
from lstm_data import BatchSpec, FormatError, Order
from lstm_data.io.ours.zarr import ZarrDataset
from lstm_data.store.write import precompute
from tests.helpers import EXAMPLES, as_old_zarr_store, without_manifest
from tests.io.test_zarr import CountingStore

SMALL = 4 << 10  # chunk bytes: every array has several chunks


@pytest.fixture(scope="module")
def good(ds, tmp_path_factory):
    path = tmp_path_factory.mktemp("good") / "d.zarr"
    ds.to_zarr(path, chunk_bytes=SMALL)
    return path


@pytest.fixture(scope="module")
def batch_store(ds, tmp_path_factory):
    path = tmp_path_factory.mktemp("batches") / "b.zarr"
    spec = BatchSpec.from_toml(EXAMPLES / "numu_v3.toml")
    precompute(ds, spec, path, Order(batch_size=128, seed=1), progress=False)
    return path


def _chunk(path, array, index):
    arr = zarr.open_group(path, mode="r")[array]
    return path / array / arr.metadata.encode_chunk_key((index,) + (0,) * (arr.ndim - 1))


def _swap(a, b):
    tmp = a.with_name(a.name + ".swap")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)


def _readers(path):
    """Every way a dataset's values are read: our decoder, and zarr-python (wrapped store)."""
    return {"local": lambda: ZarrDataset(path),
            "zarr-python": lambda: ZarrDataset(CountingStore(LocalStore(str(path), read_only=True)))}


@pytest.mark.parametrize("reader", ["local", "zarr-python"])
def test_swapped_value_chunks_are_a_format_error(good, tmp_path, reader):
    path = shutil.copytree(good, tmp_path / "d.zarr")
    _swap(_chunk(path, "png/values", 2), _chunk(path, "png/values", 5))
    z = _readers(path)[reader]()
    with pytest.raises(FormatError, match=r"chunk ([25]) of array 'png/values' .*holds another "
                                          r"chunk's bytes.*moved, swapped or copied") as err:
        z.ragged("png")  # zarr-python reads chunks concurrently: either one is named
    assert re.search(r"png/values/c/[25]/0$", err.value.file)
    # rows whose chunks are in place still read
    ok = ZarrDataset(good)
    np.testing.assert_array_equal(z.ragged("png", [0])[0], ok.ragged("png", [0])[0])


@pytest.mark.parametrize("source", ["same array", "other array"])
def test_a_chunk_copied_over_another_is_a_format_error(good, tmp_path, source):
    path = shutil.copytree(good, tmp_path / "d.zarr")
    donor = _chunk(path, "png/values", 1) if source == "same array" else _chunk(path, "png2d/values", 1)
    shutil.copyfile(donor, _chunk(path, "png/values", 3))
    with pytest.raises(FormatError, match=r"chunk 3 of array 'png/values'"):
        ZarrDataset(path).ragged("png")


def test_a_scalar_chunk_moved_is_a_format_error_at_open(good, tmp_path):
    path = shutil.copytree(good, tmp_path / "d.zarr")
    _swap(_chunk(path, "calE", 0), _chunk(path, "calE", 1))
    for make in _readers(path).values():
        with pytest.raises(FormatError, match=r"chunk [01] of array 'calE'"):
            make()


def test_swapped_chunks_of_a_batch_store_are_a_format_error(batch_store, tmp_path):
    path = shutil.copytree(batch_store, tmp_path / "b.zarr")
    arr = zarr.open_group(path, mode="r")["data/input_png3d"]
    assert arr.nchunks >= 2
    _swap(_chunk(path, "data/input_png3d", 0), _chunk(path, "data/input_png3d", 1))
    stored = lstm_data.open_batches(path, permute=False)
    with pytest.raises(FormatError, match=r"chunk [01] of array 'data/input_png3d'"):
        for i in range(len(stored)):
            stored[i]


def test_lost_manifest_is_a_format_error(good, tmp_path):
    path = shutil.copytree(good, tmp_path / "d.zarr")
    shutil.rmtree(path / "_lstm_data_manifest")
    with pytest.raises(FormatError, match="manifest .* is missing"):
        ZarrDataset(path)


def test_stores_without_a_manifest_keep_opening_with_a_note(ds, good, batch_store, tmp_path):
    path = without_manifest(shutil.copytree(good, tmp_path / "d.zarr"))
    z = ZarrDataset(path)
    assert len(z.notes) == 1 and "not checked for their place" in z.notes[0]
    np.testing.assert_array_equal(z.ragged("png")[0], ds.ragged("png")[0])
    old = as_old_zarr_store(shutil.copytree(good, tmp_path / "old.zarr"))
    assert ZarrDataset(old).notes  # the older note (lost chunks read as zeros) still given
    b = without_manifest(shutil.copytree(batch_store, tmp_path / "b.zarr"))
    with pytest.warns(lstm_data.UncheckedStoreWarning, match="not checked"):
        stored = lstm_data.open_batches(b)
    assert len(stored.notes) == 1 and "not checked" in stored.notes[0]
    stored[0]
    assert ZarrDataset(good).notes == () and lstm_data.open_batches(batch_store).notes == ()


# -- metadata ------------------------------------------------------------------------------------


def _edit_json(path, edit):
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc, indent=2))


def _to_float64(doc):
    doc["data_type"] = "float64"


def _big_endian(doc):
    doc["codecs"][0]["configuration"] = {"endian": "big"}


def _swap_names(doc):
    names = doc["attributes"]["lstm_data_layout"]["groups"]["png"]["names"]
    names[0], names[1] = names[1], names[0]


@pytest.mark.parametrize("file, edit", [("png/values/zarr.json", _to_float64),
                                        ("png/values/zarr.json", _big_endian),
                                        ("zarr.json", _swap_names)])
def test_edited_metadata_is_a_format_error_naming_the_file(good, tmp_path, file, edit):
    path = shutil.copytree(good, tmp_path / "d.zarr")
    _edit_json(path / file, edit)
    for make in _readers(path).values():
        with pytest.raises(FormatError, match=rf"metadata file '{file}' was changed or damaged") as err:
            make()
        assert err.value.file.endswith(f"{path}/{file}")


def test_byte_flips_in_metadata_files_are_format_errors(good, tmp_path):
    """Flipped bytes in every metadata file: a FormatError naming that file."""
    path = shutil.copytree(good, tmp_path / "d.zarr")
    files = sorted(p.relative_to(path).as_posix() for p in path.rglob("zarr.json")
                   if "_lstm_data_manifest" not in p.parts)
    rng = np.random.default_rng(5)
    for file in files:
        raw = (path / file).read_bytes()
        for at in rng.choice(len(raw), 4, replace=False):
            flipped = bytearray(raw)
            flipped[at] ^= 0x5A
            (path / file).write_bytes(bytes(flipped))
            with pytest.raises(FormatError, match=f"metadata file '{file}' was changed") as err:
                ZarrDataset(path).ragged("png")
            assert err.value.file == f"{path}/{file}", (file, at, err.value)
        (path / file).write_bytes(raw)
    ZarrDataset(path).ragged("png")  # restored: reads again


def test_damaged_manifest_is_a_format_error(good, tmp_path):
    path = shutil.copytree(good, tmp_path / "d.zarr")
    file = path / "_lstm_data_manifest" / "zarr.json"
    raw = bytearray(file.read_bytes())
    for at in (10, len(raw) // 2, len(raw) - 20):
        damaged = bytearray(raw)
        damaged[at] ^= 0x01
        file.write_bytes(bytes(damaged))
        with pytest.raises(FormatError, match="manifest") as err:
            ZarrDataset(path)
        assert err.value.file.endswith("_lstm_data_manifest/zarr.json")


# -- over HTTP -----------------------------------------------------------------------------------


@pytest.fixture
def served(good, tmp_path):
    pytest.importorskip("aiohttp")
    root = tmp_path / "www"
    path = shutil.copytree(good, root / "d.zarr")
    handler = type("Quiet", (http.server.SimpleHTTPRequestHandler,), {"log_message": lambda *a: None})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/d.zarr", path
    server.shutdown()


def test_swapped_chunks_over_http_are_a_format_error(served):
    url, path = served
    _swap(_chunk(path, "png/values", 1), _chunk(path, "png/values", 4))
    remote = lstm_data.open(url)
    # read to the size the manifest records, a longer chunk put in its place fails its checksum before
    # its digest is compared (which of the two is read first depends on the reader's threads)
    with pytest.raises(FormatError, match=r"chunk [14] of array 'png/values'.*(holds another|fails its CRC-32C)") as err:
        remote.ragged("png")
    assert err.value.file.startswith(url)


def test_edited_metadata_over_http_is_a_format_error(served):
    url, path = served
    _edit_json(path / "png/values/zarr.json", _to_float64)
    with pytest.raises(FormatError, match="metadata file 'png/values/zarr.json' was changed"):
        lstm_data.open(url)


def test_damaged_metadata_of_a_store_without_manifest_is_a_format_error(good, tmp_path):
    """No digest to compare with, but never a raw library error: the file is named."""
    path = without_manifest(shutil.copytree(good, tmp_path / "d.zarr"))
    for file in ("zarr.json", "png/values/zarr.json", "calE/zarr.json"):
        raw = (path / file).read_bytes()
        (path / file).write_bytes(b"x" + raw[1:])  # not JSON any more
        with pytest.raises(FormatError, match=f"metadata file '{file}' is damaged") as err:
            ZarrDataset(path)
        assert err.value.file == f"{path}/{file}"
        (path / file).write_bytes(raw.replace(b'"float32"', b'"flo@t32"').replace(b'"float64"', b'"flo@t64"'))
        if raw != (path / file).read_bytes():  # valid JSON that zarr cannot read
            with pytest.raises(FormatError, match=f"metadata file '{file}' is damaged") as err:
                ZarrDataset(path)
        (path / file).write_bytes(raw)
    ZarrDataset(path)


# -- HDF5: a digest of the layout metadata (checked by the HDF5 reader through check_layout_digest)


@pytest.mark.parametrize("edit", ["names", "dtype", "byte order"])
def test_hdf5_layout_digest_detects_edited_metadata(ds, tmp_path, edit):
    import h5py

    from lstm_data.io.ours.hdf5_out import check_layout_digest

    path = tmp_path / "d.h5"
    ds.to_hdf5(path)
    with h5py.File(path, "r") as fh:
        assert check_layout_digest(fh, file=str(path)) is True
    with h5py.File(path, "r+") as fh:
        if edit == "names":
            names = list(fh["png"].attrs["names"])
            fh["png"].attrs["names"] = names[1:2] + names[:1] + names[2:]
        else:
            data = fh["calE"][...]
            del fh["calE"]
            other = np.float64 if data.dtype == np.float32 else np.float32
            fh["calE"] = data.astype(data.dtype.newbyteorder(">") if edit == "byte order" else other)
    with h5py.File(path, "r") as fh:
        with pytest.raises(FormatError, match="layout metadata .* was changed") as err:
            check_layout_digest(fh, file=str(path))
    assert err.value.file == str(path)


def test_opening_an_hdf5_file_with_edited_layout_metadata_is_a_format_error(ds, tmp_path):
    import h5py

    import lstm_data

    path = tmp_path / "d.h5"
    ds.to_hdf5(path)
    opened = lstm_data.open(path)
    assert not any("layout digest" in note for note in opened.notes)
    opened.close()
    with h5py.File(path, "r+") as fh:
        names = list(fh["png"].attrs["names"])
        fh["png"].attrs["names"] = names[1:2] + names[:1] + names[2:]
    with pytest.raises(FormatError, match="layout metadata .* was changed"):
        lstm_data.open(path)
