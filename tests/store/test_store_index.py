"""A batch store's index checked against its own metadata and spec at open: every forged store here
has a manifest made anew after the edit (as a forger would), so only these checks can refuse it."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr

from lstm_data import BatchSpec, FormatError, Ragged, Scalars, open_batches
from lstm_data.batching.order.options import Order
from lstm_data.io.ours.manifest import write_manifest
from lstm_data.store.write import precompute

DS_ROWS, DS_SEED = 300, 5
SPEC = BatchSpec({"png": Ragged(["png.calE", "png.len"], max_len=6)}, {"energy": Scalars(["trueE"])})


@pytest.fixture(scope="module")
def store(ds, tmp_path_factory):
    path = tmp_path_factory.mktemp("index") / "b.zarr"
    precompute(ds, SPEC, path, Order(batch_size=6, seed=1, shuffle=False), progress=False)
    return path


@pytest.fixture
def copy(store, tmp_path):
    out = tmp_path / "forged.zarr"
    shutil.copytree(store, out)
    return out


def _forge(path: Path, edit) -> None:
    """Edit the store with zarr (``edit(root)``), then record every file anew in its manifest."""
    edit(zarr.open_group(str(path), mode="r+"))
    write_manifest(path)


def test_a_batch_shape_the_stored_spec_does_not_allow_is_refused_naming_both_shapes(copy):
    assert open_batches(copy, permute=False)[0][0]["png"].shape == (6, 6, 2)

    def widen_first_batch(root):  # batch 0 recorded as (6, 8, 2), with the 24 values more it needs
        shapes, offsets, data = root["_index/png.shapes"], root["_index/png.offsets"], root["data/png"]
        shapes[0] = [6, 8, 2]
        new = offsets[:] + np.r_[0, np.full(offsets.shape[0] - 1, 24)]
        offsets[:] = new
        data.resize((int(new[-1]),))
        data[-24:] = np.zeros(24, dtype=data.dtype)

    _forge(copy, widen_first_batch)
    with pytest.raises(FormatError, match=re.escape("array '_index/png.shapes' records shape (6, 8, 2) for batch 0 "
                                                    "of output 'png', but the store's own spec fixes its shape at "
                                                    "(None, 6, 2)")) as err:
        open_batches(copy, permute=False)
    assert err.value.file == str(copy)


def test_a_batch_shape_of_two_to_the_40_is_refused_before_any_reshape(copy):
    _forge(copy, lambda root: root["_index/energy.shapes"].__setitem__(0, [2**40, 1]))
    with pytest.raises(FormatError, match=re.escape("array '_index/energy.shapes' records shape (1099511627776, 1) "
                                                    "(1099511627776 values) for batch 0 of output 'energy', but its "
                                                    "offsets hold 6 values for it")):
        open_batches(copy, permute=False)


def test_offsets_beyond_the_data_array_are_refused(copy):
    def stretch(root):
        offsets = root["_index/energy.offsets"]
        offsets[-1] = offsets[-1] + 1000
    _forge(copy, stretch)
    with pytest.raises(FormatError, match=r"array '_index/energy.offsets' of output 'energy' does not go from 0 up "
                                          r"to at most the 300 values of its data array"):
        open_batches(copy, permute=False)


#: opens the store of argv[1] under a 1.5 GB address space; prints what was raised and the peak memory
_CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
from lstm_data import open_batches
try:
    open_batches(sys.argv[1], permute=False)
    said = {"error": "none"}
except BaseException as exc:
    said = {"error": f"{type(exc).__name__}: {exc}"}
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
said["peak MiB"] = int(hwm.split()[1]) // 1024
print(json.dumps(said))
"""


def test_a_batch_count_of_a_trillion_with_an_index_to_match_is_refused_unread(copy):
    n = 10**12
    doc = json.loads((copy / "zarr.json").read_text())
    meta = doc["attributes"]["lstm_data_batches"]
    meta["n_batches"] = n
    (copy / "zarr.json").write_text(json.dumps(doc))
    for key in (meta.get("keys") or {}).values() or meta["outputs"]:
        for suffix, shape in ((".offsets", [n + 1]), (".shapes", None)):
            node = copy / "_index" / f"{key}{suffix}" / "zarr.json"
            array = json.loads(node.read_text())
            array["shape"] = shape or [n, array["shape"][1]]
            node.write_text(json.dumps(array))
    write_manifest(copy)
    out = subprocess.run([sys.executable, "-c", _CHILD, str(copy)], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).parents[2])
    said = json.loads(out.stdout.splitlines()[-1])
    assert re.match(r"FormatError: the store's metadata records n_batches = 1000000000000, whose index of 3 "
                    r"outputs takes 87.3 TiB, more than the .* this process may still allocate: the metadata is "
                    rf"damaged \(file {re.escape(str(copy))}\)", said["error"]), said
    assert said["peak MiB"] < 400, said


def test_a_batch_count_that_is_not_a_count_is_a_format_error(copy):
    doc = json.loads((copy / "zarr.json").read_text())
    doc["attributes"]["lstm_data_batches"]["n_batches"] = "many"
    (copy / "zarr.json").write_text(json.dumps(doc))
    write_manifest(copy)
    with pytest.raises(FormatError, match=r"damaged batch store metadata: n_batches is 'many', not a count"):
        open_batches(copy, permute=False)
