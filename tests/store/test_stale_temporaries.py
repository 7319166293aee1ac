"""A killed precompute leaves its temporary store; the next precompute to the same output
removes it (issue 16, item 10)."""
from __future__ import annotations

import logging
import signal
import subprocess
import sys

from lstm_data import BatchSpec, Order, open_batches
from lstm_data.data.synthetic import make_dataset
from lstm_data.store.write import precompute
from tests.helpers import EXAMPLES

#: precomputes into argv[1] and is killed (SIGKILL) once the first batch is written
_KILLED_PRECOMPUTE = """
import os, sys
from lstm_data import BatchSpec
from lstm_data.data.synthetic import make_dataset
from lstm_data.store import write

class Dies(write.Batches):
    def batch(self, index, epoch=None):
        if index == 1:
            os.kill(os.getpid(), 9)
        return super().batch(index, epoch)

write.Batches = Dies
write.precompute(make_dataset(2000, seed=3), BatchSpec.from_toml(sys.argv[2]), sys.argv[1],
                 batch_size=256, progress=False)
"""


def test_next_precompute_removes_a_killed_ones_temporary(tmp_path, caplog):
    out = tmp_path / "b.zarr"
    spec_path = EXAMPLES / "numu_v3.toml"
    proc = subprocess.run([sys.executable, "-c", _KILLED_PRECOMPUTE, str(out), str(spec_path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    left = [p for p in tmp_path.iterdir() if p.name.startswith(".b.zarr.tmp-")]
    assert len(left) == 1 and left[0].is_dir() and not out.exists()
    with caplog.at_level(logging.INFO, logger="lstm_data"):
        precompute(make_dataset(2000, seed=3), BatchSpec.from_toml(spec_path), out, Order(batch_size=256),
                   progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.zarr"]
    assert any(str(left[0]) in r.getMessage() and "gone" in r.getMessage() for r in caplog.records)
    assert len(open_batches(out)) == 8
