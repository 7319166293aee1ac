"""Output buffers when consumers keep batches: huge pages only where they pay, foreign threads.

The compiled core recycles padded outputs through a buffer pool and backs the
pool's own buffers with transparent huge pages. Batches a consumer keeps beyond
what the pool would keep (a deep queue, a list of an epoch) must be plain memory:
a fresh huge page costs several times its small pages to fault in. Linux shows
the advice in ``/proc/self/smaps`` (``VmFlags: ... hg``).
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars, kernels
from lstm_data.data.synthetic import PNG2D_VARS, PNG3D_VARS, SLICE_VARS, make_dataset
from tests.helpers import assert_same_batch

POOL_BYTES = 64 << 20  # bufpool.pxd POOL_MAX_BYTES: what the pool keeps (and may advise)
SMAPS = "/proc/self/smaps"

SPEC = BatchSpec(inputs={"input_slice": Scalars(SLICE_VARS),
                         "input_png3d": Ragged(PNG3D_VARS, max_len=20),  # 1024 x 20 x 33: 2.6 MiB
                         "input_png2d": Ragged(PNG2D_VARS, max_len=10, fixed=False)},
                 targets={"target_total": Scalars(["trueE"])})


@pytest.fixture(scope="module")
def batches():
    return Batches(make_dataset(20_000, seed=6), SPEC.replace(nan_to=0.0), Order(batch_size=1024, seed=2))


def _advised_huge(address: int) -> bool:
    """Whether the mapping holding ``address`` is advised for huge pages (``hg``)."""
    inside = False
    with open(SMAPS) as fh:
        for line in fh:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                return "hg" in line.split()[1:]
    raise AssertionError(f"address {address:#x} is in no mapping")


needs_smaps = pytest.mark.skipif(not os.path.exists(SMAPS), reason="no /proc/self/smaps")


@needs_smaps
def test_batches_kept_beyond_the_pool_are_not_advised_for_huge_pages(batches):
    kept = [batches.batch(i, epoch=e) for e in range(3) for i in range(len(batches))]
    png3d = [b[0]["input_png3d"] for b in kept]
    assert sum(a.nbytes for a in png3d) > 2 * POOL_BYTES
    advised = sum(a.nbytes for a in png3d if _advised_huge(a.ctypes.data))
    assert advised <= POOL_BYTES, f"{advised / 2**20:.0f} MiB of kept outputs advised for huge pages"


@needs_smaps
def test_the_pool_keeps_advising_the_buffers_it_reuses(batches):
    if kernels.BACKEND != "cython" or not os.path.exists("/sys/kernel/mm/transparent_hugepage"):
        pytest.skip("huge pages are advised by the compiled core's buffer pool on Linux")
    for i in range(6):  # batches dropped one after the other: the pool's buffer, over again
        x = batches[i][0]["input_png3d"]
        assert _advised_huge(x.ctypes.data)


RETAIN_SCRIPT = """
import json
from lstm_data import Batches, Order
from lstm_data.data.synthetic import make_dataset
from tests.batching.test_buffer_reuse import SPEC, rss_mib

batches = Batches(make_dataset(20_000, seed=6), SPEC.replace(nan_to=0.0), Order(batch_size=1024, seed=2))
def collect():
    return [batches.batch(i, epoch=e) for e in range(3) for i in range(len(batches))]
kept = collect()
size = sum(a.nbytes for b in kept for part in b[:2] for a in part.values()) / 2**20
del kept  # an epoch's worth of batches back at once
held = rss_mib()
kept = collect()
grown = rss_mib() - held
del kept
for i in range(3 * 256):  # a consumer that drops each batch: the kept memory decays
    batches[i % len(batches)]
print(json.dumps(dict(size=size, grown=grown, decayed=held - rss_mib())))
"""


def rss_mib() -> float:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:")) / 1024


@needs_smaps
def test_memory_a_consumer_gave_back_serves_its_next_pass_then_decays():
    if kernels.BACKEND != "cython":
        pytest.skip("the compiled core's buffer pool keeps buffers; NumPy's arrays are the allocator's")
    # a fresh process: what this one's earlier tests left in the pool must not count
    done = subprocess.run([sys.executable, "-c", RETAIN_SCRIPT], capture_output=True, text=True,
                          check=True, cwd=Path(__file__).parents[2])
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["grown"] < 0.05 * got["size"], f"the second pass took {got['grown']:.0f} MiB more"
    assert got["decayed"] > 0.5 * got["size"], f"only {got['decayed']:.0f} MiB went back"


@pytest.mark.parametrize("keep", [1, 12])
def test_two_foreign_threads_build_the_same_batches(batches, keep):
    # two threads of the user's pool call Batches[i] while the consumer keeps the last
    # `keep` batches: buffers come back from the consumer's thread, are dropped by the
    # pool when it is full, and are taken by the builders, all at once
    want = [batches.batch(i, epoch=1) for i in range(len(batches))]
    held: collections.deque = collections.deque(maxlen=keep)
    with ThreadPoolExecutor(2) as pool:
        for _ in range(3):
            for i, got in enumerate(pool.map(lambda k: batches.batch(k, epoch=1), range(len(batches)))):
                assert_same_batch(got, want[i])
                held.append(got)


def test_more_buffers_back_at_once_than_the_pool_keeps():
    # hundreds of small batches given back together: the pool keeps some, frees the rest,
    # and never hands out a buffer that a live batch still uses
    small = Batches(make_dataset(4000, seed=8), SPEC.replace(nan_to=0.0), Order(batch_size=8, seed=1))
    kept = [small.batch(i, epoch=0) for i in range(len(small))]
    copies = [tuple({k: v.copy() for k, v in part.items()} for part in b) for b in kept]
    del kept[::2]  # every other batch back to the pool
    fresh = [small.batch(i, epoch=1) for i in range(len(small))]
    for got, want in zip(kept, copies[1::2]):
        assert_same_batch(got, want)
    assert_same_batch(fresh[3], small.batch(3, epoch=1))
