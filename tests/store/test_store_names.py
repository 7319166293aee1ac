"""Node names read from a store's metadata stay inside the store: ``..``, absolute names and links leading out are refused."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import lstm_data
from lstm_data import BatchSpec, FormatError, open_batches
from lstm_data.batching.order.options import Order
from lstm_data.io.ours.manifest import write_manifest
from lstm_data.store.write import precompute
from tests.helpers import EXAMPLES

DS_ROWS, DS_SEED = 300, 3
OUTPUT = "input_png3d"


@pytest.fixture(scope="module")
def store(ds, tmp_path_factory):
    path = tmp_path_factory.mktemp("names") / "b.zarr"
    precompute(ds, BatchSpec.from_toml(EXAMPLES / "numu_v3.toml"), path, Order(batch_size=100, seed=1),
               progress=False)
    return path


@pytest.fixture(scope="module")
def dataset(ds, tmp_path_factory):
    path = tmp_path_factory.mktemp("names") / "d.zarr"
    ds.to_zarr(path)
    return path


def _copy(path: Path, tmp_path: Path) -> Path:
    out = tmp_path / "inside" / path.name
    shutil.copytree(path, out)
    return out


def _set_attr(path: Path, edit) -> None:
    """Edit the root attributes, the manifest written again (as by a writer that records what it is given)."""
    doc = json.loads((path / "zarr.json").read_text())
    edit(doc["attributes"])
    (path / "zarr.json").write_text(json.dumps(doc, indent=1))
    write_manifest(path)


def _link_out(path: Path, node: str, tmp_path: Path) -> None:
    """Move node ``node`` of the store outside it and leave a symbolic link to it in its place."""
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.move(path / node, outside / "node")
    (path / node).symlink_to(outside / "node", target_is_directory=True)


@pytest.mark.parametrize("name", ["../outside", "data/../../outside", "/tmp/outside"])
def test_a_batch_store_key_leaving_the_store_is_refused(store, tmp_path, name):
    path = _copy(store, tmp_path)
    _set_attr(path, lambda a: a["lstm_data_batches"]["keys"].update({OUTPUT: name}))
    with pytest.raises(FormatError, match=rf"the key 'lstm_data_batches: keys/{OUTPUT}' names") as caught:
        open_batches(path)
    assert caught.value.file == str(path)


def test_a_batch_store_node_linked_outside_the_store_is_refused(store, tmp_path):
    path = _copy(store, tmp_path)
    _link_out(path, f"data/{OUTPUT}", tmp_path)  # the same bytes, but not the store's own
    with pytest.raises(FormatError, match=r"the key 'lstm_data_batches: keys' names 'data/input_png3d', which "
                                          r"resolves to .*outside"):
        open_batches(path)


def test_a_dataset_node_linked_outside_the_store_is_refused(dataset, tmp_path):
    path = _copy(dataset, tmp_path)
    layout = json.loads((path / "zarr.json").read_text())["attributes"]["lstm_data_layout"]
    key = next(iter(layout["scalars"].values()))
    _link_out(path, key, tmp_path)
    with pytest.raises(FormatError, match=rf"the key 'lstm_data_layout' names '{key}', which resolves to"):
        lstm_data.open(path)
