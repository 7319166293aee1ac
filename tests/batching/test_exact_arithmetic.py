"""Derived values never change a number silently: exact constants, integers that never wrap, IEEE floats."""
from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

import lstm_data
from lstm_data import BatchSpec, Batches, Order, Scalars
from lstm_data.batching.spec.expressions import Column, Expression
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.errors import PrecisionWarning, SchemaError

N = np.array([1, 2, 50, -7], dtype=np.int64)
X = np.array([0.5, -1.0, 3.0, 2.0], dtype=np.float64)
X32 = X.astype(np.float32)
Z = np.array([3, 1, 0, 2], dtype=np.int64)
with np.errstate(all="ignore"):
    X_BY_ZERO, X_BEYOND = X / 0, X * 1e308 * 10


def run(text, rows=None):
    columns = {"n": Column(N), "x": Column(X), "x32": Column(X32), "z": Column(Z),
               "n32": Column(N.astype(np.int32)), "u": Column(np.array([1, 2, 3, 2**63], dtype=np.uint64))}
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrecisionWarning)
        return Expression(text, where="derived 'd'", variable="d").evaluate(columns, len(N), rows).values


@pytest.mark.parametrize("text, want", [
    ("2**63", np.full(4, 2.0**63)),                       # exact, then float64 (it holds 2**63 exactly)
    ("2**63 - 1", np.full(4, 2**63 - 1, dtype=np.int64)),  # fits int64: stays an integer
    ("-2**63", np.full(4, -2**63, dtype=np.int64)),
    ("2**64 + x", 2.0**64 + X),
    ("x * 10**20", X * 1e20),
    ("2 ** -1", np.full(4, 0.5)),
    ("n ** -1", 1.0 / N),
    ("np.power(2, 64) - 2**64", np.zeros(4, dtype=np.int64)),
    ("n < 2**63", np.ones(4, dtype=bool)),                  # comparisons take any integer
    ("n * 3 + 1", N * 3 + 1),
    ("n32 * 2**40", N * 2**40),                             # narrower integers are widened to int64
    ("x / 0", X_BY_ZERO),                                   # floats stay IEEE
    ("0.0 / 0 + x", np.full(4, np.nan)),
    ("x * 1e308 * 10", X_BEYOND),
    ("u + 1", np.array([2, 3, 4, 2**63 + 1], dtype=np.uint64)),
])
def test_right_values(text, want):
    with np.errstate(all="ignore"):
        got = run(text)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


@pytest.mark.parametrize("text, message, row", [
    ("n ** 64", "does not fit int64", 1),         # 1 ** 64 fits; 2 ** 64 does not
    ("n * 10**18", "does not fit int64", 2),      # 50e18
    ("n // 0", "divides the integer 1 by zero", 0),
    ("n % 0", "divides the integer 1 by zero", 0),
    ("n // z", "divides the integer 50 by zero", 2),
    ("np.mod(n, z)", "by zero", 2),
    ("-(n - n - 2**62 - 2**62)", "does not fit int64", 0),
    ("np.square(n * 2**31)", "does not fit int64", 1),
    ("2 ** (z * 30)", "does not fit int64", 0),
    ("u * 2", "does not fit uint64", 3),
    ("z ** (n - 2)", "negative integer power", 0),
])
def test_integer_values_that_have_no_right_result_name_the_expression_and_the_first_row(text, message, row):
    with pytest.raises(SchemaError, match=message) as err:
        run(text, rows=np.array([10, 11, 12, 13]))
    assert err.value.variable == "d" and err.value.row == 10 + row
    assert "derived 'd'" in str(err.value)


@pytest.mark.parametrize("text, message", [
    ("n * 10**19", "10000000000000000000 does not fit int64"),
    ("n + 9223372036854775808", "9223372036854775808 does not fit int64"),
    ("2**64 + n", "does not fit int64"),
    ("1 // 0", "by zero"),
    ("2**2**40", "beyond float64's range"),
    ("n + 10**400", "beyond float64's range"),
    ("x < 1" + "0" * 400, "an integer of 1329 bits"),
    ("x < 0x" + "f" * 5000, "an integer of 20000 bits"),
])
def test_constants_that_no_value_holds_are_refused_by_name(text, message):
    start = time.perf_counter()
    with pytest.raises(SchemaError, match=message) as err:
        run(text)
    assert time.perf_counter() - start < 5  # not computed: refused on the size of the result
    assert err.value.variable == "d" and "derived 'd'" in str(err.value)


def test_integers_that_become_inexact_floats_warn_once_naming_the_row():
    expr = Expression("x32 * 16777217 + n * 0.5", where="derived 'd'", variable="d")
    big = np.array([1, 2**53 + 1, 3, 4], dtype=np.int64)
    cols = {"x32": Column(X32), "n": Column(big)}
    with pytest.warns(PrecisionWarning, match="16777217 becomes 16777216.0 as float32"):
        expr.evaluate(cols, 4)
    expr = Expression("n * 0.5", where="derived 'd'", variable="d")
    with pytest.warns(PrecisionWarning, match=r"'n \* 0.5' at row 1: the integer 9007199254740993 becomes"):
        expr.evaluate(cols, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expr.evaluate(cols, 4)  # once per expression


def test_float32_columns_stay_float32_with_folded_constants():
    for text in ("x32 * -1.7", "x32 * (2.0 * 3)", "x32 + np.pi / 2"):
        assert run(text).dtype == np.float32
    np.testing.assert_array_equal(run("x32 * -1.7"), X32 * np.float32(-1.7))


def _events(n=8):
    ids = np.array([3, 0, 5, 2, 0, 4, 1, 6][:n], dtype=np.int64)
    counts = np.arange(n) % 3
    off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return InMemoryDataset({"id": ids, "e": np.arange(n, dtype=np.float32)},
                           {"p": RaggedGroup(["p_x"], np.ones((int(off[-1]), 1), np.float32), off)})


@pytest.fixture(scope="module")
def on_disk(tmp_path_factory):
    path = tmp_path_factory.mktemp("exact") / "events.h5"
    _events().to_hdf5(path)
    return lstm_data.open(path)


@pytest.mark.parametrize("where", ["ram", "disk"])
def test_a_division_by_zero_names_the_datas_row_through_a_selection(where, on_disk):
    data = _events() if where == "ram" else on_disk
    spec = BatchSpec(inputs={"s": Scalars(["q"])}, derived={"q": "100 // id"}, selection="e != 1")
    with pytest.raises(SchemaError, match=r"'100 // id': divides the integer 100 by zero") as err:
        b = Batches(data, spec, Order(batch_size=4, shuffle=False))
        for i in range(len(b)):
            b[i]
    assert err.value.row == 4 and err.value.variable == "q"  # row 1 (also id 0) is not selected
