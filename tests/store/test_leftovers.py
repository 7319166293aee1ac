"""Leftovers after a crash are cleaned at the next start.

* a spill directory of a process killed with ``kill -9`` (an in-RAM dataset shared
  with DataLoader workers) is removed by the next spill on the host;
* a precompute's temporary store that this very process left (a failed run whose
  stragglers wrote on after its removal) is removed by the next precompute, and
  so is a killed run's when the next precompute reuses an existing store.
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys

import numpy as np

from lstm_data import BatchSpec
from lstm_data._util.safe_output import remove_stale_temporaries, temp_path
from lstm_data.data.shared import share
from lstm_data.data.synthetic import make_dataset
from lstm_data.store.write import precompute
from tests.helpers import EXAMPLES

_KILLED_SHARE = """
import os, sys
from lstm_data.data.shared import share
from lstm_data.data.synthetic import make_dataset
ref = share(make_dataset(200, seed=1))
print(ref.directory, flush=True)
os.kill(os.getpid(), 9)
"""


def test_a_killed_process_spill_directory_is_removed_by_the_next_spill(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("LSTM_DATA_SHARE_DIR", str(tmp_path))
    done = subprocess.run([sys.executable, "-c", _KILLED_SHARE], capture_output=True, text=True,
                          env={**os.environ, "LSTM_DATA_SHARE_DIR": str(tmp_path)})
    assert done.returncode == -signal.SIGKILL, done.stderr
    left = done.stdout.strip()
    assert os.path.isdir(left) and os.listdir(left)  # survived kill -9: no atexit ran
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        ref = share(make_dataset(100, seed=2))
    assert not os.path.exists(left)
    assert any(left in r.getMessage() and "gone" in r.getMessage() for r in caplog.records)
    assert os.listdir(tmp_path) == [os.path.basename(ref.directory)]  # ours, in use, stays
    np.testing.assert_array_equal(ref.open().scalar("calE"), make_dataset(100, seed=2).scalar("calE"))


def test_a_temporary_this_process_no_longer_writes_is_removed(tmp_path):
    out = tmp_path / "b.zarr"
    active = temp_path(out)  # being written now: kept
    active.mkdir()
    left = temp_path(out)
    left.mkdir()
    (left / "zarr.json").write_text("{}")
    from lstm_data._util import safe_output

    safe_output._ACTIVE.discard(str(left))  # its writer failed and gave it up; a straggler wrote on
    removed = remove_stale_temporaries(out)
    assert [p for p, _ in removed] == [left] and active.exists()


def test_a_reused_store_still_gets_the_leftovers_of_a_killed_run_removed(tmp_path):
    spec = BatchSpec.from_toml(EXAMPLES / "numu_v3.toml")
    data = make_dataset(600, seed=3)
    out = tmp_path / "b.zarr"
    precompute(data, spec, out, progress=False)
    stale = tmp_path / f".b.zarr.tmp-{os.uname().nodename}-999999-deadbeef"
    stale.mkdir()
    (stale / "zarr.json").write_text("{}")
    summary = precompute(data, spec, out, progress=False)
    assert summary.reused
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.zarr"]
