"""What an expression means: booleans add as the integers 0 and 1, and a name is the column of
exactly that name; generated expressions over bool, int and float columns equal Python's own
arithmetic, row by row."""
from __future__ import annotations

import ast
import operator
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lstm_data
from lstm_data import BatchSpec, Batches, Order, Scalars
from lstm_data.batching.spec.expressions import Column, Expression
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.errors import PrecisionWarning, SchemaError

B = np.array([True, False, True, True, False, False])
I = np.array([3, -2, 0, 7, -1000, 1], dtype=np.int64)
J = np.array([1, 0, -5, 2, 30, -3], dtype=np.int32)
F = np.array([0.5, -1.5, 0.0, -0.0, 3.25, 1e300])
X = np.array([-1.0, 0.5, 1.5, 2.5, 3.0, 1.0])


def cols():
    return {"b": Column(B), "i": Column(I), "j": Column(J), "f": Column(F), "x": Column(X)}


def run(text):
    return Expression(text).evaluate(cols(), len(B)).values


# -- booleans in arithmetic -------------------------------------------------------------------------
@pytest.mark.parametrize("text, want", [
    ("b + b", B.astype(np.int64) * 2),
    ("b - b", np.zeros(6, np.int64)),
    ("-b", -B.astype(np.int64)),
    ("+b", B.astype(np.int64)),
    ("b * 3 + b", B.astype(np.int64) * 4),
    ("b + True", B.astype(np.int64) + 1),
    ("abs(b) + square(b)", B.astype(np.int64) * 2),
    ("np.negative(b)", -B.astype(np.int64)),
    ("(x > 0) + (x > 1) + (x > 2)", np.array([0, 1, 2, 3, 3, 1])),
    ("True + True + x * 0", np.full(6, 2.0)),
])
def test_booleans_are_the_integers_0_and_1_in_arithmetic(text, want):
    out = run(text)
    np.testing.assert_array_equal(out, want)
    assert out.dtype == want.dtype


def test_logical_operators_and_comparisons_keep_booleans_and_floats_keep_their_dtype():
    assert run("b & (x > 1)").dtype == bool and run("~b").dtype == bool and run("b == b").dtype == bool
    f32 = Expression("b * y").evaluate({"b": Column(B), "y": Column(X.astype(np.float32))}, 6).values
    assert f32.dtype == np.float32 and f32.tolist() == (B * X.astype(np.float32)).tolist()


def _events():
    return InMemoryDataset({"x": X.astype(np.float32), "k": np.arange(6, dtype=np.int64)}, {})


@pytest.mark.parametrize("where", ["ram", "disk"])
def test_a_selection_counting_comparisons_keeps_the_rows_it_holds_for(where, tmp_path):
    data = _events()
    if where == "disk":
        data.to_hdf5(tmp_path / "events.h5")
        data = lstm_data.open(tmp_path / "events.h5")
    text = "((x > 0) + (x > 1) + (x > 2)) >= 2"
    assert Expression(text).evaluate({"x": Column(np.array([0.5]))}, 1).values.tolist() == [False]
    assert Expression("((1 > 0) + (2 > 1) + (0 > 2)) >= 2").evaluate({}, 1).values.tolist() == [True]
    spec = BatchSpec(inputs={"k": Scalars(["k"], dtype="int64", squeeze=True)}, selection=text)
    b = Batches(data, spec, Order(batch_size=6, shuffle=False))
    assert b[0][0]["k"].tolist() == [2, 3, 4]  # x = 1.5, 2.5 and 3.0


def test_a_derived_count_of_booleans_is_an_integer_column():
    spec = BatchSpec(inputs={"n": Scalars(["n"], dtype="int64", squeeze=True)},
                     derived={"n": "(x > 0) + (x > 1) + (x > 2)"})
    b = Batches(_events(), spec, Order(batch_size=6, shuffle=False))
    assert b[0][0]["n"].tolist() == [0, 1, 2, 3, 3, 1]


# -- names mean exactly the column of that name -----------------------------------------------------
def test_a_name_is_the_column_of_exactly_that_name_not_its_nfkc_form():
    both = {"x": Column(np.array([1.0, 2.0])), "\uff58": Column(np.array([10.0, 20.0]))}
    expr = Expression("\uff58 * 1")  # fullwidth x
    assert expr.names == ("\uff58",)
    assert expr.evaluate(both, 2).values.tolist() == [10.0, 20.0]
    assert Expression("x * 1").evaluate(both, 2).values.tolist() == [1.0, 2.0]
    assert Expression("\uff58 + (\n x)").names == ("\uff58", "x")


def test_a_ligature_name_reads_its_column_and_a_folded_function_name_is_refused():
    data = InMemoryDataset({"\ufb01t": np.array([1.0, 2.0, 3.0])}, {})  # the ligature of "fi"
    spec = BatchSpec(inputs={"d": Scalars(["d"], squeeze=True)}, derived={"d": "\ufb01t * 2"})
    assert Batches(data, spec, Order(batch_size=3, shuffle=False))[0][0]["d"].tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(SchemaError, match="'\uff4c\uff4f\uff47' is not allowed"):
        Expression("\uff4c\uff4f\uff47(x)")  # a fullwidth log is no function of the allow-list
    with pytest.raises(SchemaError, match="not allowed"):
        Expression("np.\uff50\uff49 + x")
    assert Expression("np . log(x)").names == ("x",)


def test_an_unknown_name_is_named_as_written():
    data = InMemoryDataset({"fit": np.array([1.0])}, {})
    spec = BatchSpec(inputs={"d": Scalars(["d"], squeeze=True)}, derived={"d": "\ufb01t * 2"})
    with pytest.raises(SchemaError, match="unknown variable '\ufb01t'") as err:
        Batches(data, spec, Order(batch_size=1, shuffle=False))[0]
    assert err.value.variable == "\ufb01t"


# -- generated expressions against Python's arithmetic, row by row ----------------------------------
_INT64 = (-(2**63), 2**63 - 1)
_LEAVES = st.sampled_from(["b", "i", "j", "f", "x", "0", "1", "2", "True", "False", "1.5"])
_PY_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Lt: operator.lt,
           ast.GtE: operator.ge, ast.Eq: operator.eq, ast.BitAnd: operator.and_}


def _combine(children):
    binary = st.tuples(children, st.sampled_from([" + ", " - ", " * "]), children)
    compare = st.tuples(children, st.sampled_from([" < ", " >= ", " == "]), children).map(
        lambda t: f"({t[0]}{t[1]}{t[2]})")
    return st.one_of(
        binary.map(lambda t: f"({t[0]}{t[1]}{t[2]})"),
        compare,
        st.tuples(compare, compare).map(lambda t: f"({t[0]} & {t[1]})"),
        children.map(lambda c: f"-({c})"),
        children.map(lambda c: f"abs({c})"),
    )


class _Overflow(Exception):
    pass


def _python(node, row):
    """``node`` in Python's arithmetic on row ``row`` (bool, int and float as Python has them);
    an integer result beyond int64 is an :class:`_Overflow`."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return cols()[node.id].values[row].item()
    if isinstance(node, ast.BinOp):
        out = _PY_OPS[type(node.op)](_python(node.left, row), _python(node.right, row))
    elif isinstance(node, ast.UnaryOp):
        out = -_python(node.operand, row)
    elif isinstance(node, ast.Compare):
        out = _PY_OPS[type(node.ops[0])](_python(node.left, row), _python(node.comparators[0], row))
    else:
        out = abs(_python(node.args[0], row))
    if type(out) is int and not _INT64[0] <= out <= _INT64[1]:
        raise _Overflow
    return out


def _same(got, want):
    """Equal as Python values, of the same kind, floats bitwise (NaN as NaN)."""
    if isinstance(want, bool):
        return isinstance(got, bool) and got == want
    if isinstance(want, int):
        return type(got) is int and got == want
    return isinstance(got, float) and (np.float64(got).view(np.int64) == np.float64(want).view(np.int64)
                                       or (np.isnan(got) and np.isnan(want)))


@settings(max_examples=200, deadline=None)
@given(st.recursive(_LEAVES, _combine, max_leaves=12))
def test_generated_expressions_over_bool_int_and_float_columns_equal_pythons_arithmetic(text):
    tree = ast.parse(text, mode="eval").body
    try:
        want = [_python(tree, r) for r in range(len(B))]
    except _Overflow:
        with pytest.raises(SchemaError, match="does not fit"):
            run(text)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrecisionWarning)
        got = run(text).tolist()
    assert len(got) == len(want)
    for r, (g, w) in enumerate(zip(got, want)):
        assert _same(g, w), (text, r, g, w)
