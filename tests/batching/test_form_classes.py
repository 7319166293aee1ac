"""Output forms are classes of one registry: a form registered from outside the package (here a
time-major ``(P, B, V)`` one) gets its outputs, shapes, mask, padded fill and ``nan_to`` from
its class alone; the compiled core's layout codes are generated from the kernels' table."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from lstm_data import Batches, BatchSpec, Order, Ragged, Scalars
from lstm_data.batching.spec.forms import FORMS, Form, form_of, register_form
from lstm_data.errors import SchemaError
from lstm_data.kernels import KERNEL_LAYOUTS
from tests.helpers import assert_bitwise

PNG = ["png.calE", "png.energy", "png.nhit"]
ORDER = Order(batch_size=32, shuffle=True, seed=4)


class TimeMajor(Form):
    """``(P, B, V)``: gathered padded, then transposed."""

    name = "time_major_test"
    axes = "PBV"
    kernel_layout = "padded"

    def finish(self, batch: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(batch.transpose(1, 0, 2))


@pytest.fixture
def time_major():
    form = register_form(TimeMajor())
    try:
        yield form
    finally:
        del FORMS[form.name]


def _spec(layout: str, **opts) -> BatchSpec:
    return BatchSpec(inputs={"x": Ragged(PNG, layout=layout, **opts), "s": Scalars(["calE"])},
                     targets={"t": Scalars(["trueE"])})


@pytest.mark.parametrize("opts", [dict(max_len=6, mask=True, lengths=True),
                                  dict(max_len=None, padding="pre", mask=True),
                                  dict(max_len=5, pad_value=-1.0, empty="one_step", mask=True),
                                  dict(max_len=7, pad_mode="wrap")])
def test_a_registered_form_is_served_from_its_class_alone(ds, time_major, opts):
    padded = Batches(ds, _spec("padded", **opts), ORDER)
    moved = Batches(ds, _spec(time_major.name, **opts), ORDER)
    for i in (0, 3, len(padded) - 1):
        want, got = padded[i][0], moved[i][0]
        assert_bitwise(got["x"], np.ascontiguousarray(want["x"].transpose(1, 0, 2)))
        for extra in ("x_mask", "x_lengths"):
            if extra in want:
                assert_bitwise(got[extra], want[extra])
    sig = moved.spec.signature()
    width = opts["max_len"]
    assert sig["x"].shape == (width, None, 3)
    assert set(sig) == set(padded.spec.signature())


def test_nan_to_and_the_fill_follow_the_forms_axes(ds, time_major):
    opts = dict(max_len=6, pad_value=math.nan, lengths=True)
    spec = BatchSpec(inputs={"x": Ragged(PNG, layout=time_major.name, **opts)}, nan_to=-7.0)
    ref = BatchSpec(inputs={"x": Ragged(PNG, **opts)}, nan_to=-7.0)
    got, want = Batches(ds, spec, ORDER)[1][0], Batches(ds, ref, ORDER)[1][0]
    assert not np.isnan(got["x"]).any()
    assert_bitwise(got["x"], np.ascontiguousarray(want["x"].transpose(1, 0, 2)))
    assert form_of(time_major.name).fill(spec.inputs["x"], -7.0) == [-7.0] * 3


def test_an_unknown_layout_names_the_registered_forms(time_major):
    with pytest.raises(SchemaError, match="layout must be one of .*'packed', 'time_major_test'.*got 'nope'"):
        Ragged(PNG, layout="nope")


def test_built_in_forms_own_their_shapes():
    ragged = Ragged(PNG, max_len=4, mask=True)
    assert form_of("channels_first").dims(ragged, 4, None) == (None, 3, 4)
    assert not form_of("packed").has_slots and form_of("padded").has_slots
    assert form_of("packed").kernel_code == KERNEL_LAYOUTS.index("packed")


def test_the_compiled_layout_codes_are_generated_from_the_kernels_table():
    ext = Path(__import__("lstm_data").kernels.__file__).parent / "_ext"
    from Cython import Tempita

    text = Tempita.sub((ext / "layouts.pxi.in").read_text(), dtypes=(), layouts=KERNEL_LAYOUTS)
    for code, name in enumerate(KERNEL_LAYOUTS):
        assert f"LAYOUT_{name.upper()} = {code}" in text
    assert "LAYOUT_" not in (ext / "formrows.pxd").read_text().split("include")[0]
