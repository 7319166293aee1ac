"""Expressions with declared limits: any text is refused by name, or evaluated right, quickly."""
from __future__ import annotations

import ast
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lstm_data.batching.spec import expression_limits as limits
from lstm_data.batching.spec.expressions import Column, Expression
from lstm_data.errors import PrecisionWarning, SchemaError

X = np.array([0.0, -1.5, 2.0, 3.25, -0.0, 7.0])
Y = np.array([1.0, 2.0, -3.0, 0.5, 4.0, -2.0])


def cols():
    return {"x": Column(X), "y": Column(Y)}


@pytest.mark.parametrize("text, limit", [
    ("x" + " + x" * 900, "MAX_NODES"),               # too many terms for the text scan
    ("2**" * 2000 + "2", "MAX_NODES"),
    ("-" * 100_000 + "x", "MAX_LENGTH"),
    ("x" + " < x" * 100_000, "MAX_LENGTH"),
    ("x+" * 5_000_000 + "x", "MAX_LENGTH"),          # a 10 MB expression
    ("argmax(" + ", ".join(["x"] * 100_000) + ")", "MAX_LENGTH"),
    ("-" * 150 + "x", "MAX_DEPTH"),                   # unary minus nested past the depth, read on the text
    ("(" * 150 + "x" + ")" * 150, "MAX_DEPTH"),
    ("np.log(" * 120 + "x" + ")" * 120, "MAX_DEPTH"),
    ("x" + " + x" * 150, "MAX_DEPTH"),                # parsed, then measured on the tree
    ("2 ** " * 150 + "2", "MAX_DEPTH"),
    ("x" + " < x" * 40, "MAX_COMPARISONS"),
    ("argmax(" + ", ".join(["x"] * 70) + ")", "MAX_ARGUMENTS"),
    ("x" + " + (x * y)" * 340, "MAX_NODES"),          # shallow, but over a thousand nodes
])
def test_each_limit_is_a_schema_error_naming_it_the_variable_and_the_offset(text, limit):
    with pytest.raises(SchemaError, match=limit) as err:
        Expression(text, where="derived 'd'", variable="d")
    assert err.value.variable == "d" and err.value.offset is not None
    assert "derived 'd'" in str(err.value) and str(getattr(limits, limit)) in str(err.value)


def test_the_offset_is_where_the_limit_is_passed_in_the_text_as_given():
    text = "`png.calE` + " + "(" * 101 + "x" + ")" * 101
    with pytest.raises(SchemaError, match="MAX_DEPTH") as err:
        Expression(text, variable="d")
    assert err.value.offset == len("`png.calE` + ") + 100  # the 101st parenthesis, backticks counted
    with pytest.raises(SchemaError, match="MAX_COMPARISONS") as err:
        Expression("  `a b` + (" + " < ".join(["x"] * 34) + ")", variable="d")
    assert err.value.offset == len("  `a b` + (")


def test_within_the_limits_is_accepted_and_evaluated():
    text = "x" + " + x" * 98  # 99 deep
    np.testing.assert_array_equal(Expression(text).evaluate(cols(), len(X)).values, X * 99)
    chain = " < ".join(["x"] * 33)  # 32 comparisons
    np.testing.assert_array_equal(Expression(chain).evaluate(cols(), len(X)).values, np.zeros(len(X), bool))
    wide = "argmax(" + ", ".join(["y"] * 63 + ["x"]) + ")"
    assert Expression(wide).evaluate(cols(), len(X)).values.tolist() == [0, 0, 63, 63, 0, 63]


def test_a_selection_chain_of_the_largest_length_evaluates_linearly():
    values = np.arange(100_000, dtype=np.float64)
    text = "-1 < x" + " <= x" * 30 + " < 1e9"
    out = Expression(text, where="selection").evaluate({"x": Column(values)}, len(values))
    assert out.values.all()


# -- generated expressions: a SchemaError or the right value, each within the deadline ---------------
_LEAVES = st.sampled_from(["x", "y", "0", "1", "2", "7", "1.5", "0.25", "np.pi"])


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.tuples(children, st.sampled_from([" + ", " - ", " * ", " < ", " >= ", " == "]), children)
    return st.one_of(
        binary.map(lambda t: f"({t[0]}{t[1]}{t[2]})"),
        st.tuples(children, st.sampled_from(["0", "1", "2", "3"])).map(lambda t: f"({t[0]}) ** {t[1]}"),
        children.map(lambda c: f"-({c})"),
        st.tuples(children, children).map(lambda t: f"np.maximum({t[0]}, {t[1]})"),
        st.lists(children, min_size=1, max_size=5).map(lambda cs: f"argmax({', '.join(cs)})"),
    )


_NESTED = st.recursive(_LEAVES, _combine, max_leaves=60)
_CHAINS = st.builds(lambda op, n, leaf: leaf + (op + leaf) * n, st.sampled_from([" + ", " * ", " - ", " ** ", " < "]),
                    st.integers(0, 3000), _LEAVES)
_UNARY = st.builds(lambda n, leaf: "-" * n + leaf, st.integers(0, 20_000), _LEAVES)
_PARENS = st.builds(lambda n, leaf: "(" * n + leaf + ")" * n, st.integers(0, 3000), _LEAVES)
_WIDE = st.builds(lambda n, leaf: f"argmax({', '.join([leaf] * n)})", st.integers(1, 3000), _LEAVES)


class _Chains(ast.NodeTransformer):
    """``a < b < c`` as ``(a < b) & (b < c)``: what a chain means over arrays."""

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        self.generic_visit(node)
        lefts = [node.left, *node.comparators[:-1]]
        parts: list[ast.expr] = [ast.Compare(left=a, ops=[op], comparators=[b])
                                 for a, op, b in zip(lefts, node.ops, node.comparators)]
        out = parts[0]
        for part in parts[1:]:
            out = ast.BinOp(left=out, op=ast.BitAnd(), right=part)
        return out


_ARITHMETIC = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "floordiv", ast.Mod: "mod",
               ast.Pow: "pow", ast.USub: "neg", ast.UAdd: "pos"}


class _Booleans(ast.NodeTransformer):
    """Arithmetic as ``_arith(op, ...)``: booleans add as the integers 0 and 1, as in Python."""

    def _call(self, op: ast.AST, args: list[ast.expr]) -> ast.expr:
        return ast.Call(func=ast.Name(id="_arith", ctx=ast.Load()),
                        args=[ast.Constant(_ARITHMETIC[type(op)]), *args], keywords=[])

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        self.generic_visit(node)
        return self._call(node.op, [node.left, node.right]) if type(node.op) in _ARITHMETIC else node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        self.generic_visit(node)
        return self._call(node.op, [node.operand]) if type(node.op) in _ARITHMETIC else node


def _arith(op, *args):
    """``op`` of ``args`` with boolean arrays as int64 (unless a float array holds them exactly)."""
    floats = any(isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in args)
    args = [a.astype(np.int64) if isinstance(a, np.ndarray) and a.dtype == bool and not floats else a
            for a in args]
    func = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "floordiv": np.floor_divide, "mod": np.mod,
            "pow": np.power, "neg": np.negative, "pos": np.positive}[op]
    if not any(isinstance(a, np.ndarray) for a in args):  # constants: Python's own arithmetic
        import operator
        return {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv,
                "mod": operator.mod, "pow": operator.pow, "neg": operator.neg, "pos": operator.pos}[op](*args)
    return func(*args)


class _Numpy:
    """The ``np`` of the reference: a function of constants gives a Python number, as constants are."""

    pi = np.pi

    @staticmethod
    def maximum(a, b):
        out = np.maximum(a, b)
        return out.item() if np.ndim(out) == 0 else out


def _reference(text: str) -> np.ndarray:
    """What numpy computes for ``text`` (Python's own evaluation: run only on accepted expressions)."""
    def argmax(*args):
        return np.argmax(np.stack(np.broadcast_arrays(*args), axis=1), axis=1)

    tree = ast.fix_missing_locations(_Booleans().visit(_Chains().visit(ast.parse(text, mode="eval"))))
    code = compile(tree, "<reference>", "eval")
    names = {"x": X, "y": Y, "np": _Numpy, "argmax": argmax, "_arith": _arith}
    value = eval(code, {"__builtins__": {}}, names)  # noqa: S307
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
        value = float(value)
    return np.broadcast_to(np.asarray(value), X.shape)


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_NESTED, _CHAINS, _UNARY, _PARENS, _WIDE))
def test_any_expression_is_refused_by_a_schema_error_or_evaluated_right(text):
    try:
        expr = Expression(text, where="derived 'd'", variable="d")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrecisionWarning)
            out = expr.evaluate(cols(), len(X)).values
    except SchemaError:
        return
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            want = _reference(text)
        except OverflowError:  # Python's floats raise where IEEE (and the expression) give inf
            assert np.isinf(out).any() or not np.isfinite(out).all()
            return
    np.testing.assert_array_equal(out, want)
    assert out.dtype.kind == want.dtype.kind  # integers are computed in int64 where numpy may take int8
