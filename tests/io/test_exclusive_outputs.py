"""Outputs are created exclusively, and ``--overwrite`` replaces only what lstm_data wrote.

* two writers of one output: the second fails at once with a clear error, the
  first one's output is complete;
* an output that someone else creates while a writer runs is never deleted
  (without ``--overwrite``);
* ``--overwrite`` / ``overwrite=True`` onto a directory or file lstm_data did not
  write is refused, and it is left as it was.
"""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
import zarr

import lstm_data
from lstm_data.data.synthetic import make_dataset
from lstm_data.io.ours.row_blocks import dataset_blocks
from lstm_data.io.ours.write import write_hdf5, write_zarr

N_ROWS = 400


@pytest.fixture(scope="module")
def small():
    return make_dataset(N_ROWS, seed=2)


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lstm_data", *map(str, args)], capture_output=True,
                          text=True, timeout=300)


# -- --overwrite replaces only our outputs ---------------------------------------------------------


def _user_directory(path):
    path.mkdir()
    (path / "thesis.tex").write_text("years of work")
    (path / "sub").mkdir()
    (path / "sub" / "data.bin").write_bytes(b"\x00" * 100)
    return path


def _foreign_zarr(path):
    zarr.open_group(str(path), mode="w").create_array("x", data=np.arange(5))
    return path


def _foreign_h5(path):
    with h5py.File(path, "w") as fh:
        fh["x"] = np.arange(5)
    return path


def _text(path):
    path.write_text("not ours")
    return path


def _snapshot(path):
    if path.is_dir():
        return sorted((p.relative_to(path).as_posix(), p.read_bytes() if p.is_file() else b"")
                      for p in path.rglob("*"))
    return path.read_bytes()


@pytest.mark.parametrize("make, name", [(_user_directory, "out.zarr"), (_foreign_zarr, "out.zarr"),
                                        (_foreign_h5, "out.h5"), (_text, "out.h5"),
                                        (_user_directory, "out.h5")])
def test_convert_force_refuses_what_lstm_data_did_not_write(small, tmp_path, make, name):
    src = tmp_path / "in.zarr"
    small.to_zarr(src)
    out = make(tmp_path / name)
    before = _snapshot(out)
    done = _cli("convert", src, out, "--overwrite", "--quiet")
    assert done.returncode == 1
    assert "replaces only a store or file that lstm_data wrote" in done.stderr
    assert _snapshot(out) == before
    # the library refuses too
    write = write_hdf5 if name.endswith(".h5") else write_zarr
    with pytest.raises(FileExistsError, match="replaces only a store or file that lstm_data wrote"):
        write(small, out, overwrite=True)
    assert _snapshot(out) == before


def test_overwrite_replaces_our_outputs_an_empty_directory_but_not_a_link(small, tmp_path):
    ours = tmp_path / "ours.zarr"
    make_dataset(10, seed=0).to_zarr(ours)
    write_zarr(small, ours, overwrite=True)
    assert len(lstm_data.open(ours)) == N_ROWS
    h5 = tmp_path / "ours.h5"
    make_dataset(10, seed=0).to_hdf5(h5)
    write_hdf5(small, h5, overwrite=True)
    assert len(lstm_data.open(h5)) == N_ROWS
    empty = tmp_path / "empty.zarr"
    empty.mkdir()
    write_zarr(small, empty, overwrite=True)
    assert len(lstm_data.open(empty)) == N_ROWS
    link = tmp_path / "link.zarr"
    link.symlink_to(ours)
    with pytest.raises(FileExistsError, match="symbolic link"):
        write_zarr(small, link, overwrite=True)
    assert link.is_symlink()


# -- exclusive creation ----------------------------------------------------------------------


def test_an_output_created_meanwhile_is_never_deleted(small, tmp_path):
    out = tmp_path / "out.zarr"
    source = dataset_blocks(small, None, 1 << 14)
    assert source.total > 0

    def blocks():
        for k, item in enumerate(source.blocks()):
            if k == 1:  # someone else creates the output while we write it
                _user_directory(out)
            yield item

    stream = dataclasses.replace(source, blocks=blocks)
    with pytest.raises(FileExistsError, match="created by another process while this one wrote it"):
        write_zarr(stream, out)
    assert (out / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.zarr"]  # no temporary left


@pytest.mark.slow
def test_two_concurrent_converts_one_fails_clearly_the_other_completes(tmp_path):
    src = tmp_path / "in.zarr"
    make_dataset(60_000, seed=4).to_zarr(src)
    out = tmp_path / "out.h5"
    procs = [subprocess.Popen([sys.executable, "-m", "lstm_data", "convert", str(src), str(out), "--quiet"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [(p.wait(timeout=600), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 1], results
    err = next(e for code, e in results if code == 1)
    assert ("another lstm_data writer is writing" in err or "already exists: it is" in err
            or "created by another process" in err), err
    assert len(lstm_data.open(out)) == 60_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.zarr", "out.h5"]


def test_a_second_writer_fails_at_once_while_the_first_holds_the_output(small, tmp_path):
    out = tmp_path / "out.zarr"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from lstm_data._util.exclusive import output_lock\n"
        f"with output_lock({str(out)!r}):\n    print('locked', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        t0 = time.perf_counter()
        with pytest.raises(FileExistsError, match=rf"another lstm_data writer is writing .*out.zarr now "
                                                  rf"\(process {holder.pid} on host"):
            write_zarr(small, out)
        assert time.perf_counter() - t0 < 10
        assert not out.exists()
    finally:
        holder.kill()
        holder.wait()
    write_zarr(small, out)  # the lock went with its process
    assert len(lstm_data.open(out)) == N_ROWS
    assert sorted(os.listdir(tmp_path)) == ["out.zarr"]


def test_a_damaged_batch_store_is_replaced_with_overwrite_but_never_reused(tmp_path):
    from lstm_data import BatchSpec
    from lstm_data.store.write import precompute
    from tests.helpers import EXAMPLES

    spec = BatchSpec.from_toml(EXAMPLES / "numu_v3.toml")
    data = make_dataset(500, seed=5)
    out = tmp_path / "b.zarr"
    precompute(data, spec, out, progress=False)
    meta = out / "_index" / "zarr.json"
    meta.write_bytes(meta.read_bytes().replace(b'"group"', b'"gr0up"'))  # damaged metadata
    with pytest.raises(FileExistsError, match=r"it is a damaged batch store \(metadata file '_index/zarr.json'"):
        precompute(data, spec, out, progress=False)
    summary = precompute(data, spec, out, progress=False, overwrite=True)
    assert not summary.reused and len(lstm_data.open_batches(out)) == summary.n_batches
