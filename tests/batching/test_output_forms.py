"""Output forms and standardisation through BatchSpec and Batches: channels-first, wrap, mask,
packed (cu_seqlens, max_seqlen), per-variable Standardize; in RAM, over parts and on disk."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars, Standardize
from lstm_data.data.concat import ConcatDataset
from lstm_data.errors import SchemaError
from tests.helpers import assert_bitwise

PNG = ["png.calE", "png.energy", "png.nhit"]
ORDER = Order(batch_size=64, shuffle=True, seed=2)


def _spec(**ragged):
    ragged.setdefault("pad_value", 0.0)
    return BatchSpec(inputs={"x": Ragged(PNG, **ragged), "s": Scalars(["calE", "nHit"])},
                     targets={"t": Scalars(["trueE"])})


def _batch(ds, spec, i=1):
    return Batches(ds, spec, ORDER)[i]


def test_defaults_unchanged_and_no_new_outputs(ds):
    plain = _batch(ds, _spec(max_len=6))
    spelled = _batch(ds, _spec(max_len=6, layout="padded", pad_mode="constant", mask=False, standardize={}))
    assert set(plain[0]) == {"x", "s"}
    assert_bitwise(plain[0]["x"], spelled[0]["x"])


def test_channels_first_is_the_transposed_batch(ds):
    padded = _batch(ds, _spec(max_len=7, sort_by="png.calE"))[0]["x"]
    cf = _batch(ds, _spec(max_len=7, sort_by="png.calE", layout="channels_first"))[0]["x"]
    assert cf.shape == (64, 3, 7)
    assert_bitwise(cf, np.ascontiguousarray(padded.transpose(0, 2, 1)))


def test_mask_marks_the_real_slots(ds):
    for padding in ("post", "pre"):
        inputs = _batch(ds, _spec(max_len=5, mask=True, lengths=True, padding=padding, pad_value=-99.0))[0]
        mask, lengths = inputs["x_mask"], inputs["x_lengths"]
        assert mask.dtype == np.bool_ and mask.shape == (64, 5)
        assert_bitwise(mask.sum(axis=1), lengths)
        assert np.all(inputs["x"][~mask] == -99.0) and not np.any(inputs["x"][mask] == -99.0)


def test_wrap_fills_with_each_rows_elements(ds):
    base = _batch(ds, _spec(max_len=9, lengths=True))[0]
    wrap = _batch(ds, _spec(max_len=9, lengths=True, pad_mode="wrap", mask=True))[0]
    for b, n in enumerate(base["x_lengths"]):
        if n:
            assert_bitwise(wrap["x"][b], base["x"][b][np.arange(9) % n])
        else:
            assert np.all(wrap["x"][b] == 0.0)
    assert_bitwise(wrap["x_mask"].sum(axis=1), base["x_lengths"])


def test_packed_equals_padded_real_elements(ds):
    spec = _spec(max_len=4, layout="packed", truncating="pre", sort_by="png.energy")
    padded = _batch(ds, _spec(max_len=4, truncating="pre", sort_by="png.energy", lengths=True))[0]
    packed = _batch(ds, spec)[0]
    lengths = padded["x_lengths"]
    cu = packed["x_cu_seqlens"]
    assert cu.dtype == np.int32 and cu.shape == (65,) and cu[0] == 0
    assert_bitwise(cu[1:].astype(np.int64), np.cumsum(lengths))
    assert packed["x_max_seqlen"].shape == () and packed["x_max_seqlen"].dtype == np.int32
    assert int(packed["x_max_seqlen"]) == lengths.max()
    want = np.concatenate([padded["x"][b, :n] for b, n in enumerate(lengths)])
    assert_bitwise(packed["x"], want)
    sig = spec.signature()
    assert sig["x"].shape == (None, 3) and sig["x_cu_seqlens"].dtype == np.int32
    assert sig["x_max_seqlen"].shape == () and "x_cu_seqlens" in spec.input_names


def test_standardize_ragged_and_scalars(ds):
    std = {"png.calE": Standardize(center=0.5, scale=2.0, clip_min=-1.0, clip_max=3.0),
           "png.nhit": Standardize(scale=0.1, pad_value=-5.0)}
    spec = BatchSpec(inputs={"x": Ragged(PNG, max_len=6, lengths=True, standardize=std),
                             "s": Scalars(["calE", "nHit"], standardize={"nHit": Standardize(10, 0.25)})},
                     targets={"t": Scalars(["trueE"])})
    plain = _batch(ds, _spec(max_len=6, lengths=True))[0]
    got = _batch(ds, spec)[0]
    f32 = np.float32
    real = np.arange(6)[None, :] < plain["x_lengths"][:, None]
    x = plain["x"]
    want = x.copy()
    want[..., 0] = np.clip((x[..., 0] - f32(0.5)) * f32(2.0), f32(-1.0), f32(3.0))
    want[..., 2] = (x[..., 2] - f32(0.0)) * f32(0.1)
    want[..., 2][~real] = -5.0
    want[..., 0][~real] = 0.0
    assert_bitwise(got["x"], want)
    s = plain["s"].copy()
    s[:, 1] = (s[:, 1] - f32(10)) * f32(0.25)
    assert_bitwise(got["s"], s)


def test_unresolved_auto_is_a_schema_error(ds):
    spec = _spec(max_len=4, standardize={"png.energy": Standardize(center="auto", scale="auto")})
    with pytest.raises(SchemaError, match=r"png.energy.*'lstm-data fit SPEC.toml --data PATH'.*spec.fit\(dataset\)") as err:
        _batch(ds, spec)
    assert "fit_standardize" not in str(err.value)  # the public command and method, not the internal function


def test_forms_over_parts_and_on_disk_equal_one_part(ds, tmp_path):
    spec = _spec(max_len=5, layout="channels_first", pad_mode="wrap", mask=True,
                 standardize={"png.energy": Standardize(1.0, 0.5, -2.0, 2.0)})
    packed = _spec(max_len=5, layout="packed", standardize={"png.energy": Standardize(1.0, 0.5)})
    parts = ConcatDataset([ds.take(np.arange(0, 1000)), ds.take(np.arange(1000, len(ds)))])
    ds.to_zarr(tmp_path / "d.zarr")
    import lstm_data
    on_disk = lstm_data.open(tmp_path / "d.zarr")
    for sp in (spec, packed):
        one = _batch(ds, sp)
        for other in (parts, on_disk):
            got = _batch(other, sp)
            for name in one[0]:
                assert_bitwise(got[0][name], one[0][name], name)


def test_spec_toml_round_trip(tmp_path):
    spec = _spec(max_len=5, layout="packed", lengths=True,
                 standardize={"png.calE": Standardize(center=1.5, scale="auto", clip_max=4.0,
                                                      pad_value=math.nan)})
    path = tmp_path / "spec.toml"
    path.write_text(spec.to_toml())
    back = BatchSpec.from_toml(path)
    assert back.inputs["x"] == spec.inputs["x"]
    assert back.signature() == spec.signature()
    assert "layout" not in _spec(max_len=5).inputs["x"].to_dict()  # defaults stay out of old files


def test_torch_nested_round_trip(ds):
    torch = pytest.importorskip("torch")
    padded = _batch(ds, _spec(max_len=6, lengths=True))[0]
    packed = _batch(ds, _spec(max_len=6, layout="packed"))[0]
    nested = torch.nested.nested_tensor_from_jagged(
        torch.from_numpy(packed["x"]), offsets=torch.from_numpy(packed["x_cu_seqlens"].astype(np.int64)))
    back = torch.nested.to_padded_tensor(nested, 0.0, output_size=(64, 6, 3)).numpy()
    assert_bitwise(back, padded["x"])
    for b, n in enumerate(padded["x_lengths"]):
        assert_bitwise(nested[b].numpy(), padded["x"][b, :n])


def test_precomputed_store_gives_the_same_forms(ds, tmp_path):
    import lstm_data
    spec = BatchSpec(inputs={"cf": Ragged(PNG, max_len=6, layout="channels_first", mask=True, pad_mode="wrap",
                                          standardize={"png.calE": Standardize(1.0, 2.0)}),
                             "p": Ragged(PNG[:2], layout="packed", max_len=7, lengths=True)},
                     targets={"t": Scalars(["trueE"])})
    order = Order(batch_size=100, seed=0)
    lstm_data.precompute(ds.take(np.arange(500)), spec, tmp_path / "s.zarr", order, progress=False)
    store = lstm_data.open_batches(tmp_path / "s.zarr")
    want = Batches(ds.take(np.arange(500)), spec, order)
    for i in (0, 3):
        for name, arr in want[i][0].items():
            assert_bitwise(store[i][0][name], arr, name)


@pytest.mark.parametrize("bad", [dict(pad_mode="edge"), dict(layout="nested"), dict(pad_mode="wrap", padding="pre"),
                                 dict(layout="packed", pad_mode="wrap"), dict(layout="packed", mask=True),
                                 dict(standardize={"png.nhitx": Standardize()}),
                                 dict(standardize={"png.calE": {"centre": 1.0}}),
                                 dict(standardize={"png.calE": {"scale": "nan"}}),
                                 dict(standardize={"png.calE": {"clip_min": 2.0, "clip_max": 1.0}})])
def test_bad_options_are_schema_errors(bad):
    with pytest.raises(SchemaError):
        Ragged(PNG, **bad)


def test_nan_to_reaches_standardized_nan_and_own_pad_values(ds):
    std = {"png.calE": Standardize(scale=2.0, pad_value=math.nan)}
    spec = BatchSpec(inputs={"x": Ragged(PNG, max_len=9, mask=True, pad_value=-1.0, standardize=std)},
                     nan_to=-7.0)
    inputs = _batch(ds, spec)[0]
    x, mask = inputs["x"], inputs["x_mask"]
    assert not np.isnan(x).any()
    assert np.all(x[..., 0][~mask] == -7.0) and np.all(x[..., 1][~mask] == -1.0)
