"""Batch store checks that cannot be switched off: a store that requires its manifest is refused
without it; files that cannot be a store's (devices, FIFOs, sparse giants) are refused unread; a
handle whose store was written anew says so; a store without a manifest warns."""
from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr

import lstm_data
from lstm_data import BatchSpec, FormatError, OptionError, ReadOptions, UncheckedStoreWarning, open_batches
from lstm_data.batching.order.options import Order
from lstm_data.io.ours.manifest import MANIFEST_ATTR, MANIFEST_KEY, write_manifest
from lstm_data.store.read import read_metadata
from lstm_data.store.write import precompute
from tests.helpers import EXAMPLES, without_manifest

DS_ROWS, DS_SEED = 1200, 3
SMALL = 4 << 10  # chunk bytes: every output array has many chunks
ARRAY = "data/input_png3d"


@pytest.fixture(scope="module")
def spec():
    return BatchSpec.from_toml(EXAMPLES / "numu_v3.toml")


@pytest.fixture(scope="module")
def store(ds, spec, tmp_path_factory):
    path = tmp_path_factory.mktemp("checks") / "b.zarr"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("lstm_data.store.write._CHUNK_BYTES", SMALL)
        precompute(ds, spec, path, Order(batch_size=100, seed=1), progress=False)
    return path


@pytest.fixture(scope="module")
def dataset(ds, tmp_path_factory):
    path = tmp_path_factory.mktemp("checks") / "d.zarr"
    ds.to_zarr(path, chunk_bytes=SMALL)
    return path


def _chunk(path: Path, array: str, index: int) -> Path:
    arr = zarr.open_group(path, mode="r")[array]
    return path / array / arr.metadata.encode_chunk_key((index,) + (0,) * (arr.ndim - 1))


def _swap(a: Path, b: Path) -> None:
    tmp = a.with_name(a.name + ".swap")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)


def _edit_root(path: Path, edit) -> None:
    """Edit the root ``zarr.json``'s attributes as text, as a user with an editor would."""
    doc = json.loads((path / "zarr.json").read_text())
    edit(doc["attributes"])
    (path / "zarr.json").write_text(json.dumps(doc, indent=2))


def _read_all(stored) -> None:
    for i in range(len(stored)):
        stored[i]


# -- a store that requires its manifest ----------------------------------------------------------


def test_a_store_records_that_it_requires_its_manifest(store):
    assert read_metadata(store)["requires"] == ["manifest"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a store written now opens without a warning
        stored = open_batches(store)
    assert stored.notes == ()


def test_manifest_and_its_attribute_deleted_then_chunks_swapped_is_refused(ds, spec, store, tmp_path):
    path = shutil.copytree(store, tmp_path / "b.zarr")
    shutil.rmtree(path / MANIFEST_KEY)
    _edit_root(path, lambda attrs: attrs.pop(MANIFEST_ATTR))
    assert zarr.open_group(path, mode="r")[ARRAY].nchunks >= 2
    _swap(_chunk(path, ARRAY, 0), _chunk(path, ARRAY, 1))
    for opening in (lambda: open_batches(path), lambda: read_metadata(path),
                    lambda: open_batches(path, read=ReadOptions(trust_unchecked=True))):
        with pytest.raises(FormatError, match=r"manifest \(_lstm_data_manifest/zarr.json\) is missing, "
                                              r"but its metadata .*requires.* refused") as err:
            opening()
        assert err.value.file == str(path)
    # precompute does not take it for a store to reuse; with overwrite it replaces it
    with pytest.raises(FileExistsError, match="manifest"):
        precompute(ds, spec, path, Order(batch_size=100, seed=1), progress=False)
    precompute(ds, spec, path, Order(batch_size=100, seed=1), overwrite=True, progress=False)
    assert open_batches(path).notes == ()


def test_a_requirement_this_release_does_not_know_is_refused(store, tmp_path):
    path = shutil.copytree(store, tmp_path / "b.zarr")
    _edit_root(path, lambda attrs: attrs["lstm_data_batches"].update(requires=["manifest", "zstd-dict"]))
    write_manifest(path)  # as a newer writer would record it
    with pytest.raises(FormatError, match="requires 'zstd-dict', which this lstm_data does not know.*upgrade"):
        open_batches(path)


# -- a store without a manifest ------------------------------------------------------------------


def test_an_old_store_without_manifest_opens_with_a_warning_naming_what_is_unchecked(ds, spec, store, tmp_path):
    path = without_manifest(shutil.copytree(store, tmp_path / "old.zarr"))
    with pytest.warns(UncheckedStoreWarning, match=r"old.zarr: has no manifest .*chunks are not checked for "
                                                   r"their place .*edited metadata is not detected.*"
                                                   r"trust_unchecked=True") as record:
        stored = open_batches(path)
    assert len(record) == 1 and record[0].filename == __file__  # the user's line
    assert len(stored.notes) == 1
    _read_all(stored)
    read = ReadOptions(trust_unchecked=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = open_batches(path, read=read)
        again = pickle.loads(pickle.dumps(quiet))  # the option travels with the handle
    assert quiet.notes == stored.notes and again.read == read


def test_store_options_are_checked(store):
    with pytest.raises(OptionError, match="'dtype' does not apply to batch store"):
        open_batches(store, read=ReadOptions(dtype="float64"))
    with pytest.raises(OptionError, match="trust_unchecked must be true or false"):
        ReadOptions(trust_unchecked="yes")
    with pytest.raises(OptionError, match="'trust_unchecked' does not apply to csv data .*open_batches"):
        lstm_data.open(EXAMPLES / "numu_v3.csv.xz", trust_unchecked=True)
    assert ReadOptions.from_dict(ReadOptions(trust_unchecked=True).to_dict()).trust_unchecked is True


# -- files that cannot be a store's --------------------------------------------------------------

#: reads every batch of a batch store and every value of a dataset, in a child process (a FIFO
#: read would block it forever, /dev/zero fill its memory): prints what each read said, and the
#: child's peak memory
_CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a file read whole fails, never the machine
import lstm_data
from lstm_data.io.ours.zarr import ZarrDataset
said = {}
def attempt(name, read):
    try:
        read()
        said[name] = "read"
    except Exception as exc:
        said[name] = f"{type(exc).__name__}: {exc}"
def batches():
    stored = lstm_data.open_batches(sys.argv[1], permute=False)
    for i in range(len(stored)):
        stored[i]
attempt("batch store", batches)
attempt("dataset values", lambda: ZarrDataset(sys.argv[2]).ragged("png"))
attempt("dataset scalar", lambda: ZarrDataset(sys.argv[3]))
# this process's own peak (VmHWM): ru_maxrss keeps the parent's peak across fork and exec
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
said["peak MiB"] = int(hwm.split()[1]) // 1024
print(json.dumps(said))
"""


def _plant(kind: str, path: Path) -> None:
    """Put a file of ``kind`` at ``path`` (a chunk file's place)."""
    path.unlink()
    if kind == "/dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "sparse 3 GB":
        with open(path, "wb") as fh:
            fh.truncate(3 << 30)  # no disk space taken
    else:
        os.mkfifo(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="POSIX files")
@pytest.mark.parametrize("kind, said", [
    ("/dev/zero", r"is a character device, not a regular file: refused without reading it"),
    ("fifo", r"is a FIFO \(named pipe\), not a regular file: refused without reading it"),
    ("sparse 3 GB", r"is 3,221,225,472 bytes on disk where the manifest records [\d,]+: .*it was not read"),
])
def test_a_device_fifo_or_sparse_file_in_place_of_a_chunk_is_refused_unread(store, dataset, tmp_path, kind, said):
    batch = shutil.copytree(store, tmp_path / "b.zarr")
    values = shutil.copytree(dataset, tmp_path / "values.zarr")
    scalar = shutil.copytree(dataset, tmp_path / "scalar.zarr")
    planted = {"batch store": _chunk(batch, ARRAY, 1), "dataset values": _chunk(values, "png/values", 1),
               "dataset scalar": _chunk(scalar, "calE", 0)}
    for file in planted.values():
        _plant(kind, file)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", _CHILD, str(batch), str(values), str(scalar)], env=env,
                          capture_output=True, text=True, timeout=60)  # a hang fails here
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for reader, file in planted.items():
        assert result[reader].startswith("FormatError: "), (reader, result[reader])
        assert re.search(said, result[reader]), (reader, result[reader])
        assert str(file) in result[reader]
    assert result["peak MiB"] < 1024  # nothing read whole


def test_without_manifest_a_sparse_chunk_is_refused_by_its_size_too(ds, dataset, tmp_path):
    path = without_manifest(shutil.copytree(dataset, tmp_path / "d.zarr"))
    _plant("sparse 3 GB", _chunk(path, "png/values", 2))
    with pytest.raises(FormatError, match=r"chunk 2 of array 'png/values' is 3,221,225,472 bytes on disk, more "
                                          r"than any encoding of one chunk .* it was not read"):
        lstm_data.open(path).ragged("png")


# -- a store written anew under an open handle ---------------------------------------------------


def test_a_handle_whose_store_was_replaced_says_so(ds, spec, store, tmp_path):
    path = shutil.copytree(store, tmp_path / "b.zarr")
    stored = open_batches(path, permute=False)
    first = stored[0]
    precompute(ds, spec, path, Order(batch_size=100, seed=2), overwrite=True, progress=False)
    with pytest.raises(FormatError, match=r"the store was replaced by another store \(written anew there, "
                                          r"e.g. by lstm-data precompute --overwrite\) since this handle "
                                          r"opened it.*open the store again") as err:
        _read_all(stored)
    assert "moved" not in str(err.value) and "swapped" not in str(err.value)
    assert isinstance(err.value.__cause__, FormatError)  # what the read met, kept as the cause
    fresh = open_batches(path, permute=False)
    assert not all(np.array_equal(a, b) for a, b in zip(first[0].values(), fresh[0][0].values()))
    shutil.rmtree(path)
    with pytest.raises(FormatError, match="the store was removed since this handle opened it"):
        _read_all(fresh)
