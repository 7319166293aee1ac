"""A killed write leaves its temporary; the next write to the same output removes it
(issue 16, item 10). The writers are real processes killed with SIGKILL mid-write."""
from __future__ import annotations

import logging
import signal
import subprocess
import sys

import pytest

import lstm_data
from tests.helpers import assert_same_dataset

DS_ROWS, DS_SEED = 3000, 2  # the ``ds`` fixture (tests/conftest.py)

#: writes argv[1] to argv[2] and kills itself (SIGKILL) after the first row block
_KILLED_WRITER = """
import os, sys
import lstm_data
from lstm_data.io.ours.write import write_hdf5, write_zarr

ds = lstm_data.open(sys.argv[1])
write = write_hdf5 if sys.argv[2].endswith(".h5") else write_zarr

def die(done, total):
    os.kill(os.getpid(), 9)

write(ds, sys.argv[2], block_bytes=50_000, progress=die)
"""


@pytest.fixture(scope="module")
def source(ds, tmp_path_factory):
    path = tmp_path_factory.mktemp("src") / "src.zarr"
    ds.to_zarr(path)
    return path


def killed_write(source, out):
    """Run a writer of ``out`` that is killed mid-write; return its PID and what it left."""
    proc = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(source), str(out)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    left = [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.tmp-")]
    assert len(left) == 1 and not out.exists()
    return left[0]


@pytest.mark.parametrize("name", ["out.h5", "out.zarr"])
def test_next_write_removes_a_killed_writers_temporary(ds, source, tmp_path, caplog, name):
    out = tmp_path / name
    left = killed_write(source, out)
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        (ds.to_hdf5 if name.endswith(".h5") else ds.to_zarr)(out)
    assert not left.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    assert any(str(left) in r.getMessage() and "MiB" in r.getMessage() and "gone" in r.getMessage()
               for r in caplog.records)
    assert_same_dataset(lstm_data.open(out), ds)


def test_a_live_writers_temporary_is_kept(ds, tmp_path):
    from lstm_data._util.safe_output import temp_path

    out = tmp_path / "out.h5"
    mine = temp_path(out)  # this process is alive: e.g. another thread writing it
    mine.write_bytes(b"partial")
    ds.to_hdf5(out)
    assert mine.exists() and out.exists()
