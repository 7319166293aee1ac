"""Safe expressions: the allow-list refuses everything outside it, evaluation is columnar numpy."""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data.batching.spec.expressions import Column, Expression
from lstm_data.errors import SchemaError

RNG = np.random.default_rng(3)
LENGTHS = np.array([3, 0, 2, 5, 1, 4])
OFFSETS = np.concatenate([[0], np.cumsum(LENGTHS)]).astype(np.int64)
PX = RNG.normal(size=OFFSETS[-1]).astype(np.float32)
PY = RNG.normal(size=OFFSETS[-1]).astype(np.float32)
JET = RNG.uniform(1, 2, size=len(LENGTHS)).astype(np.float32)
TRK = RNG.normal(size=7).astype(np.float32)
TRK_OFF = np.array([0, 1, 1, 3, 3, 5, 7], dtype=np.int64)


def cols():
    return {"part_px": Column(PX, OFFSETS, "part"), "part_py": Column(PY, OFFSETS, "part"),
            "jet_pt": Column(JET), "trk_x": Column(TRK, TRK_OFF, "trk"),
            "png.calE": Column(PX, OFFSETS, "part")}


def run(text):
    return Expression(text).evaluate(cols(), len(LENGTHS))


@pytest.mark.parametrize("text, what", [
    ("__import__('os').system('true')", "__import__"),
    ("__builtins__", "__builtins__"),
    ("part_px.__class__", "part_px.__class__"),
    ("np.linalg.norm(part_px)", "np.linalg.norm"),
    ("os.system('x')", "os.system"),
    ("np.load('x')", "load"),
    ("eval('1')", "eval"),
    ("open('f')", "open"),
    ("(lambda: 1)()", "lambda"),
    ("part_px[0]", "subscript"),
    ("[x for x in part_px]", "comprehension"),
    ("part_px if jet_pt else part_py", "if"),
    ("part_px and part_py", "'and'"),
    ("not part_px", "'not'"),
    ("np.log(part_px, out=part_py)", "'out'"),
    ("'text'", "'text'"),
    ("(x := 1)", "':='"),
    ("np", "'np'"),
    ("part_px in jet_pt", "In"),
    ("getattr(np, 'load')('x')", "getattr"),
])
def test_outside_the_allow_list_is_refused_by_name(text, what):
    with pytest.raises(SchemaError, match="not allowed") as err:
        Expression(text, where="derived 'x'")
    assert what in str(err.value)
    assert "derived 'x'" in str(err.value)


def test_syntax_error_and_arity_are_schema_errors():
    with pytest.raises(SchemaError, match="not a valid expression"):
        Expression("part_px +")
    with pytest.raises(SchemaError, match="hypot.. takes 2"):
        Expression("np.hypot(part_px)")
    with pytest.raises(SchemaError, match="non-empty"):
        Expression("  ")


def test_names_in_order_of_use_prefixes_and_quoting():
    e = Expression("np.log(part_pt / jet_pt) + math.pi * ak.ones_like(part_pt) + `png.calE`")
    assert e.names == ("part_pt", "jet_pt", "png.calE")
    with pytest.raises(SchemaError, match="backticks"):
        Expression("png.calE * 2")


def test_per_row_values_broadcast_over_a_groups_prongs():
    out = run("np.log(np.hypot(part_px, part_py) / jet_pt)")
    want = np.log(np.hypot(PX, PY) / np.repeat(JET, LENGTHS))
    assert out.group == "part" and out.offsets is OFFSETS
    assert out.values.dtype == np.float32
    np.testing.assert_array_equal(out.values, want)  # bitwise: the same numpy calls, float32 kept


def test_float32_stays_float32_with_python_constants():
    out = run("(part_px - 1.7) * 0.7")
    assert out.values.dtype == np.float32
    np.testing.assert_array_equal(out.values, (PX - np.float32(1.7)) * np.float32(0.7))


def test_mixing_two_groups_is_an_error():
    e = Expression("part_px + trk_x")
    with pytest.raises(SchemaError, match="mixes prong variables of groups 'part' and 'trk'"):
        e.kind({"part_px": "part", "trk_x": "trk"})
    with pytest.raises(SchemaError, match="mixes"):
        e.evaluate(cols(), len(LENGTHS))


def test_kind_follows_the_operands():
    kinds = {"part_px": "part", "jet_pt": None}
    assert Expression("part_px / jet_pt").kind(kinds) == "part"
    assert Expression("jet_pt * 2").kind(kinds) is None
    assert Expression("num(part_px) > 1").kind(kinds) is None
    assert Expression("3.0").kind(kinds) is None
    with pytest.raises(SchemaError, match="num.. needs a prong variable"):
        Expression("num(jet_pt)").kind(kinds)


def test_comparisons_logic_and_selection_values():
    out = run("(jet_pt > 1.2) & ~(jet_pt > 1.8) | (num(part_px) == 0)")
    want = ((JET > 1.2) & ~(JET > 1.8)) | (LENGTHS == 0)
    assert out.group is None
    np.testing.assert_array_equal(out.values, want)
    np.testing.assert_array_equal(run("1.2 < jet_pt <= 1.8").values, (JET > 1.2) & (JET <= 1.8))


def test_bitwise_operators_on_floats_say_what_to_do():
    with pytest.raises(SchemaError, match="combine booleans"):
        run("part_px & part_py")


@pytest.mark.parametrize("text, ref", [
    ("np.where(part_px > 0, part_px, 0.0)", lambda: np.where(PX > 0, PX, np.float32(0))),
    ("np.clip(part_px, -0.5, 0.5)", lambda: np.clip(PX, -0.5, 0.5)),
    ("np.arctan2(part_py, part_px)", lambda: np.arctan2(PY, PX)),
    ("np.maximum(part_px, jet_pt)", lambda: np.maximum(PX, np.repeat(JET, LENGTHS))),
    ("abs(part_px) ** 2 // 1 % 3", lambda: np.abs(PX) ** 2 // 1 % 3),
    ("np.arcsinh(part_px) + np.tanh(part_py) - np.exp(-part_px)",
     lambda: np.arcsinh(PX) + np.tanh(PY) - np.exp(-PX)),
    ("ak.ones_like(part_px)", lambda: np.ones_like(PX)),
    ("np.zeros_like(jet_pt) + np.sqrt(jet_pt)", lambda: np.zeros_like(JET) + np.sqrt(JET)),
])
def test_functions_match_numpy(text, ref):
    np.testing.assert_array_equal(run(text).values, ref())


def test_argmax_of_one_hot_columns():
    a, b, c = (Column(np.array(v, dtype=np.float32)) for v in ([1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 1]))
    out = Expression("argmax(a, b, c)").evaluate({"a": a, "b": b, "c": c}, 4)
    np.testing.assert_array_equal(out.values, [0, 2, 1, 2])


def test_constant_expression_gives_one_value_per_row():
    out = Expression("2 * np.pi").evaluate({}, 4)
    np.testing.assert_array_equal(out.values, np.full(4, 2 * np.pi))
