"""A saved state is bound to every value of its data: one value edited in the middle of a file refuses it.

Each test writes real files (CSV, HDF5 via h5py, zarr in our layout), saves a state after
a few batches, edits one value far from the first and last rows (keeping the file's size for CSV),
reopens and loads the state.
"""
from __future__ import annotations

import os
import re

import h5py
import numpy as np
import pytest
import zarr

import lstm_data
from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.batching.epochs.data_digest import SETTLE_SECONDS, file_digest
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset
from lstm_data.errors import OptionError
from tests.helpers import assert_same_batch

N_ROWS = 600
MIDDLE = N_ROWS // 2
CSV_SPEC = BatchSpec(inputs={"input_slice": Scalars(["calE", "nHit"]),
                             "input_png": Ragged(["png.calE", "png.energy"], max_len=4, pad_value=0.0)},
                     targets={"target": Scalars(["trueE"])})
SPEC = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS[:4]),
                         "input_png3d": Ragged(PNG3D_VARS[:3], max_len=6, pad_value=0.0)},
                 targets={"target_total": Scalars(["trueE"])})
ORDER = Order(batch_size=32, seed=3)


def _write_csv(path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    lines = ["calE,nHit,trueE,png.calE,png.energy"]
    for _ in range(N_ROWS):
        n = int(rng.integers(1, 4))
        cal = ",".join(f"{v:.3f}" for v in rng.uniform(1, 9, n))
        energy = ",".join(f"{v:.3f}" for v in rng.uniform(1, 9, n))
        lines.append(f"{rng.uniform(1, 9):.3f},{int(rng.integers(10, 99))},{rng.uniform(1, 9):.3f},"
                     f"\"{cal}\",\"{energy}\"")
    path.write_text("\n".join(lines) + "\n")


def _edit_csv(path) -> None:
    """Change one digit of the middle row's first value: the file keeps its size."""
    lines = path.read_text().split("\n")
    row = lines[1 + MIDDLE]
    digit = "1" if row[0] != "1" else "2"
    lines[1 + MIDDLE] = digit + row[1:]
    size = path.stat().st_size
    path.write_text("\n".join(lines))
    assert path.stat().st_size == size


def _saved_state(dataset, spec):
    batches = Batches(dataset, spec, ORDER)
    it = iter(batches)
    for _ in range(3):
        next(it)
    return batches.state_dict()


def test_a_csv_edited_in_the_middle_refuses_the_state(tmp_path):
    path = tmp_path / "events.csv"
    _write_csv(path, 1)
    state = _saved_state(lstm_data.open(path), CSV_SPEC)
    resumed = Batches(lstm_data.open(path), CSV_SPEC, ORDER)
    resumed.load_state_dict(state)  # the same file resumes
    fresh = Batches(lstm_data.open(path), CSV_SPEC, ORDER)
    assert_same_batch(next(iter(resumed)), fresh[3])

    _edit_csv(path)
    with pytest.raises(OptionError, match=re.escape(f"the data of {path} (file part 1 of 1) differ")):
        Batches(lstm_data.open(path), CSV_SPEC, ORDER).load_state_dict(state)


def test_several_csv_files_name_the_one_edited(tmp_path):
    paths = [tmp_path / f"{name}.csv" for name in "abc"]
    for i, path in enumerate(paths):
        _write_csv(path, 10 + i)
    state = _saved_state(lstm_data.open(paths), CSV_SPEC)
    _edit_csv(paths[1])
    with pytest.raises(OptionError, match=re.escape(f"the data of {paths[1]} (file part 2 of 3) differ")) as info:
        Batches(lstm_data.open(paths), CSV_SPEC, ORDER).load_state_dict(state)
    assert str(paths[0]) not in str(info.value) and str(paths[2]) not in str(info.value)


def _edit_hdf5(path) -> None:
    """Add 1 to the middle row's first prong value (its chunk is compressed again: the size may change)."""
    with h5py.File(path, "r+") as f:
        offsets = f["png/offsets"][:]
        f["png/values"][int(offsets[MIDDLE]), 0] += 1.0


@pytest.mark.parametrize("n_files", [1, 3])
def test_hdf5_read_on_demand_edited_in_the_middle_refuses_the_state(tmp_path, n_files):
    paths = [str(tmp_path / f"part{i}.h5") for i in range(n_files)]
    for i, path in enumerate(paths):
        make_dataset(N_ROWS, seed=20 + i).to_hdf5(path)
    where = paths if n_files > 1 else paths[0]
    opened = lstm_data.open(where)
    assert not opened.in_ram
    state = _saved_state(opened, SPEC)
    again = lstm_data.open(where)
    Batches(again, SPEC, ORDER).load_state_dict(state)
    opened.close()  # h5py opens a file once for writing: the readers let it go
    again.close()

    edited = paths[n_files // 2]
    _edit_hdf5(edited)
    with pytest.raises(OptionError, match=re.escape(f"the data of {edited} (file part {n_files // 2 + 1} of "
                                                    f"{n_files}) differ")) as info:
        Batches(lstm_data.open(where), SPEC, ORDER).load_state_dict(state)
    assert all(p not in str(info.value) for p in paths if p != edited)


def test_a_zarr_store_edited_in_a_middle_chunk_refuses_the_state(tmp_path):
    path = str(tmp_path / "events.zarr")
    make_dataset(N_ROWS, seed=4).to_zarr(path, chunk_bytes=2048)  # many chunks: the middle one is not read
    state = _saved_state(lstm_data.open(path), SPEC)
    group = zarr.open_group(path, mode="r+")
    offsets = group["png/offsets"][:]
    values = group["png/values"]
    record = values[int(offsets[MIDDLE])]
    record[0] += 1.0
    values[int(offsets[MIDDLE])] = record
    with pytest.raises(OptionError, match=re.escape(f"the data of {path} (file part 1 of 1) differ")):
        Batches(lstm_data.open(path), SPEC, ORDER).load_state_dict(state)


def test_a_shard_state_names_the_edited_file(tmp_path):
    paths = [tmp_path / f"{name}.csv" for name in "ab"]
    for i, path in enumerate(paths):
        _write_csv(path, 30 + i)
    state = Batches(lstm_data.open(paths), CSV_SPEC, ORDER).shard(1, 2).state_dict()
    _edit_csv(paths[0])
    with pytest.raises(OptionError, match=re.escape(f"the data of {paths[0]} (file part 1 of 2) differ")):
        Batches(lstm_data.open(paths), CSV_SPEC, ORDER).shard(0, 2).load_state_dict(state)


def test_a_file_digest_is_kept_by_path_size_mtime_and_inode(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(b"0123456789" * 1000)
    old = os.stat(path).st_mtime_ns - int(10 * SETTLE_SECONDS * 1e9)
    os.utime(path, ns=(old, old))
    first = file_digest(str(path))
    with open(path, "r+b") as f:  # same inode, same size, the mtime set back: the digest kept is given
        f.seek(5000)
        f.write(b"x")
    os.utime(path, ns=(old, old))
    assert file_digest(str(path)) == first
    os.utime(path, ns=(old + 1, old + 1))  # another mtime: read again
    assert file_digest(str(path)) != first


def test_a_file_changed_just_now_is_read_again_each_time(tmp_path):
    path = tmp_path / "data.bin"
    path.write_bytes(b"0123456789" * 1000)
    first = file_digest(str(path))
    stat = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(5000)
        f.write(b"x")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # a write within the mtime's resolution
    assert file_digest(str(path)) != first


def test_a_digest_is_the_same_however_its_bytes_are_fed(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from lstm_data.batching.epochs import data_digest

    monkeypatch.setattr(data_digest, "_PIECE", 64)  # many pieces of a small stream
    values = np.random.default_rng(0).random(1000)
    whole = data_digest._Hasher()
    whole.update(values)
    with ThreadPoolExecutor(2) as pool:
        threaded = data_digest._Hasher(pool, 2)
        for lo in range(0, len(values), 37):  # runs of rows, as a reader on demand gives them
            threaded.update(values[lo:lo + 37])
        digest = threaded.hexdigest()
    assert digest == whole.hexdigest()
    edited = values.copy()
    edited[500] += 1.0
    other = data_digest._Hasher()
    other.update(edited)
    assert other.hexdigest() != digest


def test_a_per_file_value_changed_for_the_middle_file_names_it(tmp_path):
    paths = [tmp_path / f"{name}.csv" for name in "abc"]
    for i, path in enumerate(paths):
        _write_csv(path, 40 + i)
    spec = CSV_SPEC.replace(targets={"target": Scalars(["trueE"]), "kind": Scalars(["kind"])})

    def opened(middle: float):
        return lstm_data.open(paths, file_values={"kind": {"*a.csv": 0.0, "*b.csv": middle, "*c.csv": 2.0}})

    state = _saved_state(opened(1.0), spec)
    Batches(opened(1.0), spec, ORDER).load_state_dict(state)
    with pytest.raises(OptionError, match=re.escape(f"the data of {paths[1]} (file part 2 of 3) differ")):
        Batches(opened(5.0), spec, ORDER).load_state_dict(state)
