"""Column, group and output names that look like paths never become paths in a store.

A scalar named ``zarr.json`` used to break the zarr output (its array would be the
root's metadata file), ``_scalar1`` next to ``a/b`` collided with the generated
key, and a name of 300 characters was too long for the file system. Names are
kept exactly (in the layout attribute); unusable ones are stored under
generated keys. A layout whose key points outside the store is refused.
"""
from __future__ import annotations

import shutil

import numpy as np
import pytest
import zarr

import lstm_data
from lstm_data import BatchSpec, FormatError, Ragged, Scalars
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.store.write import precompute
from tests.helpers import without_manifest

N = 20
NAMES = [
    ["zarr.json", "b"], ["ZARR.JSON", "x"], ["a/b", "c"], ["..", "."], [".zattrs", ".zarray"],
    ["_lstm_data_manifest", "z"], ["_scalar1", "a/b"], ["a/b", "_scalar0"], ["A", "a"],
    ["x" * 300, "y"], ["/abs", "c/0"], ["", " "],
]


def _dataset(scalars, group="png"):
    cols = {nm: np.arange(N, dtype=np.float64) * (i + 1) for i, nm in enumerate(scalars)}
    values = np.arange(2 * N, dtype=np.float32).reshape(N, 2)
    return InMemoryDataset(cols, {group: RaggedGroup([f"{group}.u", f"{group}.v"], values,
                                                     np.arange(N + 1, dtype=np.int64))})


@pytest.mark.parametrize("fmt", ["zarr", "h5"])
@pytest.mark.parametrize("names", NAMES, ids=lambda n: "|".join(x[:12] for x in n))
def test_path_like_scalar_names_round_trip(tmp_path, fmt, names):
    ds = _dataset(names)
    out = tmp_path / f"d.{fmt}"
    ds.to_zarr(out) if fmt == "zarr" else ds.to_hdf5(out)
    back = lstm_data.open(out)
    assert back.scalar_names == names
    for nm in names:
        np.testing.assert_array_equal(back.scalar(nm), ds.scalar(nm))
    np.testing.assert_array_equal(back.ragged(back_group := next(iter(back.groups)))[0],
                                  ds.ragged(back_group)[0])
    if fmt == "zarr":  # every array lies inside the store, one level below its group
        assert all(p.resolve().is_relative_to(out.resolve()) for p in out.rglob("*"))


@pytest.mark.parametrize("group", ["zarr.json", "a/b", "..", "_lstm_data_manifest"])
def test_path_like_group_names_round_trip(tmp_path, group):
    ds = _dataset(["s"], group=group)
    ds.to_zarr(tmp_path / "d.zarr")
    back = lstm_data.open(tmp_path / "d.zarr")
    assert list(back.groups) == [group]
    np.testing.assert_array_equal(back.ragged(group)[0], ds.ragged(group)[0])


def test_path_like_output_names_of_a_batch_store(tmp_path):
    ds = _dataset(["calE", "trueE"])
    spec = BatchSpec(inputs={"a/b": Scalars(["calE"]), "zarr.json": Ragged(["png.u", "png.v"], max_len=3)},
                     targets={"../t": Scalars(["trueE"])})
    precompute(ds, spec, tmp_path / "b.zarr", progress=False)
    stored = lstm_data.open_batches(tmp_path / "b.zarr", permute=False)
    inputs, targets, weights = stored[0]
    assert set(inputs) == {"a/b", "zarr.json"} and set(targets) == {"../t"}
    assert inputs["zarr.json"].shape[1:] == (3, 2)
    rows = np.sort(np.concatenate([stored[i][0]["a/b"][:, 0] for i in range(len(stored))]))
    np.testing.assert_array_equal(rows, np.sort(ds.scalar("calE").astype(np.float32)))
    assert not (tmp_path / "t").exists() and not (tmp_path / "b.zarr" / "data" / "a").exists()


def test_a_layout_key_outside_the_store_is_a_format_error(tmp_path):
    path = tmp_path / "d.zarr"
    _dataset(["s"]).to_zarr(path)
    without_manifest(path)  # an older store, or one whose manifest was removed with the edit
    root = zarr.open_group(str(path), mode="r+")
    layout = dict(root.attrs["lstm_data_layout"])
    layout["scalars"] = {"s": "../elsewhere"}
    root.attrs["lstm_data_layout"] = layout
    shutil.copytree(path / "s", tmp_path / "elsewhere")
    with pytest.raises(FormatError, match=r"node key '\.\./elsewhere' is not one plain name"):
        lstm_data.open(path)
