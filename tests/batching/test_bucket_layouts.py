"""``Order(bucket_lengths=...)`` pads every output form to the chosen length.

Each bucketed batch is compared with the same rows built without bucketing and then
padded by numpy along the form's padded axis (``"padded"``: 1, ``"channels_first"``:
2, the mask: 1; ``"packed"`` has no padded axis and must not change). Run this module
with ``LSTM_DATA_PURE_PYTHON=1`` too: the kernel pads to the chosen width itself.
"""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Ragged, Scalars, open_batches
from lstm_data.batching.order.options import Order
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset
from lstm_data.errors import OptionError
from lstm_data.io.ours.zarr import ZarrDataset
from lstm_data.store.write import precompute
from tests.helpers import assert_same_batch

MAX_LEN = 20
SHORT = 5  # max_len of a second output of the same group
LAYOUTS = ["padded", "channels_first", "packed"]
#: name -> (Order settings, spec's pad_to_multiple_of)
SETTINGS = {
    "list": (dict(bucket_lengths=[3, 6, MAX_LEN]), None),
    "auto": (dict(bucket_lengths="auto", max_shapes=3), None),
    "budget": (dict(bucket_lengths=[2, 4, 9, MAX_LEN], max_elements=400), None),
    "multiple": (dict(bucket_lengths="auto", max_shapes=2), 3),
}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    ram = make_dataset(1500, seed=4, png_mean=3.0)
    path = tmp_path_factory.mktemp("bucket_layouts") / "d.zarr"
    ram.to_zarr(path, chunk_bytes=16 * 1024)
    return {"ram": ram, "zarr": ZarrDataset(path)}


def _spec(layout: str, padding: str = "post", multiple: int | None = None, fixed: bool = True) -> BatchSpec:
    mask = layout != "packed"
    return BatchSpec(
        inputs={"slice": Scalars(SLICE_VARS),
                "x": Ragged(PNG3D_VARS[:3], max_len=MAX_LEN, layout=layout, mask=mask, lengths=True,
                            padding=padding, fixed=fixed),
                "y": Ragged(PNG3D_VARS[3:5], max_len=SHORT, layout=layout, mask=mask, padding=padding,
                            pad_value=-1.0, fixed=fixed)},
        targets={"target": Scalars(["trueE"])}, pad_to_multiple_of=multiple)


def _pad_like(want: np.ndarray, width: int, axis: int, value, pre: bool) -> np.ndarray:
    """``want`` padded by numpy along ``axis`` to ``width`` with ``value`` (before the data if ``pre``)."""
    extra = width - want.shape[axis]
    assert extra >= 0
    pads = [(0, 0)] * want.ndim
    pads[axis] = (extra, 0) if pre else (0, extra)
    return np.pad(want, pads, constant_values=value)


def _check_batch(got: dict, plain: dict, fields: dict, layout: str, padding: str) -> dict[str, int]:
    """Every output of ``got`` equals ``plain`` padded by numpy; returns each ragged output's width."""
    pre = padding == "pre"
    widths = {}
    assert set(got) == set(plain)
    for name, want in plain.items():
        field = fields.get(name)
        if isinstance(field, Ragged) and layout == "packed":
            assert got[name].shape == want.shape
        elif isinstance(field, Ragged):
            axis = 2 if layout == "channels_first" else 1
            widths[name] = got[name].shape[axis]
            want = _pad_like(want, widths[name], axis, field.pad_value, pre)
        elif name.endswith("_mask"):
            want = _pad_like(want, got[name].shape[1], 1, False, pre)
            assert got[name].shape[1] == widths[name[:-len("_mask")]]
        np.testing.assert_array_equal(got[name], want, err_msg=name)
    return widths


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("source,shuffle", [("ram", True), ("zarr", True), ("zarr", "block")])
def test_every_layout_pads_to_the_chosen_length(data, setting, layout, source, shuffle):
    settings, multiple = SETTINGS[setting]
    padding = "pre" if setting == "list" else "post"
    spec = _spec(layout, padding, multiple)
    ds = data[source]
    order = Order(batch_size=64, seed=3, shuffle=shuffle, bucket_by="x", **settings)
    kw = dict(block_rows=100, window_rows=400) if shuffle == "block" else {}
    b = Batches(ds, spec, order.replace(**kw))
    unbucketed = _spec(layout, padding, multiple, fixed=False)  # each batch as wide as its longest row
    plain = Batches(ds, unbucketed, Order(batch_size=64, shuffle=False)).builder
    lens = plain.row_lengths("png")
    fields = {**spec.inputs, **spec.targets}
    seen = set()
    for i in range(0, len(b), 3):
        rows = b.rows_of(i)
        got = b[i]
        want_in, want_t = plain.build(rows)
        widths = _check_batch(got[0], want_in, fields, layout, padding)
        _check_batch(got[1], want_t, fields, layout, padding)
        if layout == "packed":
            continue
        longest = int(lens[rows].max())
        for name, cap in (("x", MAX_LEN), ("y", SHORT)):
            f = next(f for f in b.fields if f.name == name)
            assert widths[name] == b.padded_width(f, longest) <= cap, name
        seen.add(widths["x"])
    if layout != "packed":
        assert len(seen) <= len(settings["bucket_lengths"]) if setting in ("list", "budget") else 3
        if setting in ("list", "budget"):
            assert seen <= set(settings["bucket_lengths"])


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("layout", LAYOUTS)
def test_precompute_stores_the_live_batches(data, tmp_path, setting, layout):
    settings, multiple = SETTINGS[setting]
    spec = _spec(layout, "post", multiple)
    order = Order(batch_size=64, seed=5, shuffle=True, bucket_by="x", **settings)
    out = tmp_path / "b.zarr"
    precompute(data["ram"], spec, out, order, progress=False)
    stored = open_batches(out, order=order, permute=False)
    live = Batches(data["ram"], spec, order)
    assert len(stored) == len(live)
    for i in range(len(live)):
        assert_same_batch(stored[i], live[i])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_numu_example_keeps_its_variables(numu, numu_zarr, layout, tmp_path):
    ds = numu
    order = Order(batch_size=4, seed=2, shuffle=False, bucket_by="x", bucket_lengths=[3, 5, 8])
    spec = BatchSpec(inputs={"x": Ragged(["png.calE", "png.nhit"], max_len=8, layout=layout,
                                         mask=layout != "packed")},
                     targets={"t": Scalars(["trueE"])})
    b = Batches(ds, spec, order)
    got = b[0][0]
    lens = np.minimum(np.diff(ds.ragged("png")[1])[b.rows_of(0)], 8)
    width = 3 if lens.max() <= 3 else 5 if lens.max() <= 5 else 8
    want = {"padded": (4, width, 2), "channels_first": (4, 2, width), "packed": (int(lens.sum()), 2)}
    assert got["x"].shape == want[layout]
    if layout != "packed":
        assert got["x_mask"].shape == (4, width)
        np.testing.assert_array_equal(got["x_mask"].sum(axis=1), lens)
    # lstm-data precompute with the order in the spec file's [order] table: the store holds the live batches
    from lstm_data.cli import main

    order = order.replace(batch_size=128)
    (tmp_path / "s.toml").write_text(spec.to_toml() + "\n" + order.to_toml())
    out = tmp_path / "b.zarr"
    assert main(["precompute", "--data", str(numu_zarr), "--spec", str(tmp_path / "s.toml"),
                 "--out", str(out), "-q"]) == 0
    live = Batches(ds, spec, order)
    stored = open_batches(out, order=order, permute=False)
    assert len(stored) == len(live)
    for i in range(len(live)):
        assert_same_batch(stored[i], live[i])


def test_lengths_above_max_len_are_refused():
    ds = make_dataset(300, seed=1, png_mean=6.0)
    spec = BatchSpec(inputs={"x": Ragged(PNG3D_VARS[:2], max_len=10)})
    with pytest.raises(OptionError, match=r"20 is above max_len 10 of output 'x'.*\[4, 8, 10\]"):
        Batches(ds, spec, Order(batch_size=16, bucket_by="x", bucket_lengths=[4, 8, 20]))
    b = Batches(ds, spec, Order(batch_size=16, bucket_by="x", bucket_lengths=[4, 8, 10]))
    assert {b[i][0]["x"].shape[1] for i in range(len(b))} <= {4, 8, 10}
