"""Large blocks reused once no array refers to them; never while one does; a bounded amount kept."""
from __future__ import annotations

import gc

import numpy as np
import pytest

from lstm_data._util import reuse
from lstm_data._util.reuse import REUSE_BYTES, reusable_empty


@pytest.fixture(autouse=True)
def _own_blocks(monkeypatch):
    monkeypatch.setattr(reuse, "_blocks", [])


def rows(dtype=np.float32, width: int = 4, scale: float = 1.0) -> tuple[int, int]:
    return int(REUSE_BYTES * scale) // np.dtype(dtype).itemsize // width + 1, width


def test_a_freed_block_is_reused_and_a_live_one_is_not():
    a = reusable_empty(rows(), np.float32)
    assert a.flags.c_contiguous and a.flags.writeable and a.shape == rows()
    view = a[5:, 1:]
    del a
    b = reusable_empty(rows(), np.float32)
    assert not np.shares_memory(b, view)  # a view keeps its block in use
    address = b.ctypes.data
    del view, b
    gc.collect()
    c = reusable_empty(rows(np.float64, 2), np.float64)  # the same bytes, another dtype
    assert c.dtype == np.float64 and c.ctypes.data in {r.ctypes.data for r in reuse._blocks}
    d = reusable_empty(rows(), np.float32)
    assert not np.shares_memory(c, d)
    assert address in {c.ctypes.data, d.ctypes.data}


def test_a_much_smaller_request_takes_a_new_block_and_a_small_one_comes_from_numpy():
    big = reusable_empty(rows(scale=4), np.float32)
    del big
    small = reusable_empty(rows(), np.float32)
    assert len(reuse._blocks) == 2 and small.nbytes < reuse._blocks[0].nbytes * 0.75
    tiny = reusable_empty((10, 3), np.float32)
    assert tiny.flags.owndata and len(reuse._blocks) == 2


def test_at_most_retain_bytes_are_kept(monkeypatch):
    monkeypatch.setattr(reuse, "RETAIN_BYTES", 3 * REUSE_BYTES)
    kept = [reusable_empty(rows(scale=1.2), np.float32) for _ in range(3)]
    assert len(reuse._blocks) == 2  # the third did not fit beside two in use
    del kept
    again = reusable_empty(rows(scale=2.5), np.float32)  # the idle ones make room
    assert len(reuse._blocks) == 1 and reuse._blocks[0].nbytes == again.nbytes
