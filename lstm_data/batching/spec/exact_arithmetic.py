"""Arithmetic of derived expressions that never changes a number silently.

- **Constants** (the parts of an expression without a column) are computed as Python
  computes them: integers exactly, at any size up to 2**:data:`MAX_INT_BITS` (past
  it no dtype holds the number); ``2 ** -1`` is ``0.5``; an operation with a float is
  IEEE float64 (``1 / 0`` is ``inf``); an integer ``//`` or ``%`` by zero is an error.
- **A constant meets a column** by the integer rule of the readers: with float values
  an integer constant becomes a float of their dtype (numpy's weak typing: float32
  stays float32), with a :class:`~lstm_data.errors.PrecisionWarning` when that
  changes it (beyond 2**24 for float32, 2**53 for float64); with integer values it
  must fit their integer dtype (an error otherwise: write it as a float, ``1e19``,
  to compute in floats); comparisons take any integer.
- **Integer values** are computed in int64 (narrower integers are widened first;
  uint64 stays uint64) and an operation whose result does not fit (``+ - * **``,
  unary ``-``, ``abs``, ``square``), an integer ``//`` or ``%`` by zero, or an
  integer raised to a negative integer column, is an error naming the first row.
  An integer to a negative *constant* power is a float (as ``2 ** -1`` is).
- **Integers that become floats** (an int64 column meeting a float, or true
  division) give a ``PrecisionWarning`` naming the first row whose value changes.
- **Booleans are the integers 0 and 1 in arithmetic**, as in Python and numpy's
  ``sum`` (``True + True == 2``): a boolean meeting ``+ - * // % **``, unary ``-``
  or ``+``, ``abs``, ``square``, ``power``, ``mod`` or ``fmod`` is an int64 (a
  folded boolean constant a Python int) unless it meets float values, which hold
  0 and 1 exactly in their own dtype. ``& | ^ ~`` and comparisons keep booleans.
- Float values follow IEEE as numpy computes them: overflow is ``inf``, ``0 / 0`` NaN.
"""
from __future__ import annotations

import ast
import math
import operator
from typing import Any, Callable

import numpy as np

from lstm_data.io.columns.exact_ints import first_changed

__all__ = ["MAX_INT_BITS", "ValueProblem", "fold_binary", "fold_unary", "fold_compare", "as_array_value",
           "operand", "computed", "widen", "CHECKED"]

#: integer constants are held exactly below 2 ** MAX_INT_BITS (beyond it: beyond float64's range too)
MAX_INT_BITS = 1024
_INT64 = np.iinfo(np.int64)
_UINT64 = np.iinfo(np.uint64)
#: arithmetic operations, by key: booleans become integers and integer results are checked
#: (``pos`` and the remainders are never beyond their operands)
CHECKED = frozenset({"add", "sub", "mul", "floordiv", "mod", "pow", "neg", "pos", "abs", "square", "fmod"})


class ValueProblem(Exception):
    """A value that has no right result: ``message`` about element ``index`` of the
    operation's values (``None`` for constants); ``fatal=False`` is a precision warning."""

    def __init__(self, message: str, index: int | None = None, fatal: bool = True) -> None:
        super().__init__(message)
        self.message, self.index, self.fatal = message, index, fatal


# -- constants ------------------------------------------------------------------------------------
def _bounded(value: int) -> int:
    if value.bit_length() > MAX_INT_BITS:
        raise ValueProblem(f"the integer result has {value.bit_length()} bits: beyond float64's range, "
                           "no dtype holds it")
    return value


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.copysign(math.inf, value)


def _ieee(func: Callable[..., Any], *values: Any) -> float:
    with np.errstate(all="ignore"):
        return float(func(*[np.float64(_as_float(v)) for v in values]))


def fold_binary(op: ast.operator, a: Any, b: Any) -> Any:
    """``a op b`` of two constants (bool, int or float), exactly where both are integers."""
    kind = type(op)
    if kind in (ast.BitAnd, ast.BitOr, ast.BitXor):
        if isinstance(a, float) or isinstance(b, float):
            raise ValueProblem("& | ^ combine booleans (comparisons) or integers, not floats")
        return {ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}[kind](a, b)
    numpy_op = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.true_divide,
                ast.FloorDiv: np.floor_divide, ast.Mod: np.mod, ast.Pow: np.power}[kind]
    if isinstance(a, float) or isinstance(b, float) or kind is ast.Div:
        if kind is ast.Div and not isinstance(a, float) and not isinstance(b, float) and b != 0:
            try:
                return int(a) / int(b)  # correctly rounded, whatever the integers' size
            except OverflowError:
                return math.copysign(math.inf, a) * (1 if b > 0 else -1)
        return _ieee(numpy_op, a, b)
    a, b = int(a), int(b)
    if kind in (ast.FloorDiv, ast.Mod) and b == 0:
        raise ValueProblem(f"divides the integer {a} by zero")
    if kind is ast.Pow:
        if b < 0:
            return _ieee(np.power, a, b)  # as Python's 2 ** -1 == 0.5
        if abs(a) > 1 and (abs(a).bit_length() - 1) * b >= MAX_INT_BITS:
            raise ValueProblem(f"{a} ** {b} is beyond float64's range: no dtype holds it")
        return _bounded(a ** b)
    exact = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
             ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}[kind]
    return _bounded(exact(a, b))


def fold_unary(op: ast.unaryop, a: Any) -> Any:
    """``op a`` of a constant (``~`` of a boolean is its negation, as numpy's)."""
    if isinstance(op, ast.Invert):
        if isinstance(a, float):
            raise ValueProblem("~ applies to booleans (comparisons) or integers, not floats")
        return (not a) if isinstance(a, bool) else ~a
    if isinstance(op, ast.USub):
        return -a
    return +a


def fold_compare(op: ast.cmpop, a: Any, b: Any) -> bool:
    """``a op b`` of two constants: exact between integers and floats (as Python compares)."""
    return bool({ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
                 ast.Eq: operator.eq, ast.NotEq: operator.ne}[type(op)](a, b))


def as_array_value(value: Any, warn: Callable[[ValueProblem], None]) -> Any:
    """A constant result as numpy holds it: an integer in int64, else in float64 (warning when changed)."""
    if isinstance(value, bool) or not isinstance(value, int) or _INT64.min <= value <= _INT64.max:
        return value
    as_float = _as_float(value)
    if as_float != value:
        warn(ValueProblem(f"the integer {value} does not fit int64 and becomes {as_float!r} as float64",
                          fatal=False))
    return as_float


# -- a constant meeting values ----------------------------------------------------------------------
def operand(value: Any, arrays: list[np.ndarray], compare: bool, warn: Callable[[ValueProblem], None]) -> Any:
    """A constant as it meets ``arrays``: by the integer rule (see the module's text).

    Raises
    ------
    ValueProblem
        An integer constant that the integer values' dtype does not hold (not in a comparison).
    """
    if isinstance(value, bool) or not isinstance(value, int):
        return value
    floats = [a.dtype for a in arrays if a.dtype.kind in "fc"]
    if floats:
        dtype = np.result_type(*floats)
        with np.errstate(over="ignore"):
            converted = dtype.type(_as_float(value))
        if not np.isfinite(converted) or int(converted) != value:
            warn(ValueProblem(f"the integer {value} becomes {float(converted)!r} as {dtype}", fatal=False))
        return _as_float(value)
    if compare:
        return value
    unsigned = bool(arrays) and all(a.dtype.kind in "ub" for a in arrays) and \
        any(a.dtype == np.uint64 for a in arrays)
    info = _UINT64 if unsigned else _INT64
    if not info.min <= value <= info.max:
        raise ValueProblem(f"the integer {value} does not fit {info.dtype}, in which integer values are "
                           f"computed; write it as a float ({_as_float(value)!r}) to compute in floats")
    return value


def widen(values: list[Any]) -> list[Any]:
    """The operands of an arithmetic operation (a key of :data:`CHECKED`): integer arrays narrower
    than 64 bits as int64 (their sums and products then fit as they would), boolean arrays as int64
    too unless a float array is among them (``True + True`` is 2, as in Python), boolean constants
    as Python ints."""
    floats = any(isinstance(v, np.ndarray) and v.dtype.kind in "fc" for v in values)
    out: list[Any] = []
    for v in values:
        if isinstance(v, np.ndarray) and ((v.dtype.kind in "iu" and v.dtype.itemsize < 8)
                                          or (v.dtype.kind == "b" and not floats)):
            v = v.astype(np.int64)
        elif isinstance(v, (bool, np.bool_)):
            v = int(v)
        out.append(v)
    return out


# -- values -----------------------------------------------------------------------------------------
def computed(key: str | None, func: Callable[..., Any], values: list[Any],
             warn: Callable[[ValueProblem], None]) -> np.ndarray:
    """``func(*values)`` with integer results checked (``key`` in :data:`CHECKED`) and integers
    that become floats reported to ``warn``.

    Raises
    ------
    ValueProblem
        An integer result that does not fit, a division by zero or a negative integer exponent,
        at the first element concerned.
    """
    ints = [v for v in values if isinstance(v, np.ndarray) and v.dtype.kind in "iu"]
    if key == "pow" and ints and len(values) == 2 and _integer(values[0]) and _integer(values[1]):
        values = _negative_powers(values)
    if key in ("floordiv", "mod", "fmod") and len(values) == 2 and _integer(values[0]) and _integer(values[1]):
        _check_divisor(values)
    result = np.asarray(func(*values))
    if result.dtype.kind in "iu" and key in CHECKED:
        bad = _overflows(key, values, result)
        if bad is not None:
            shown = " and ".join(str(np.broadcast_to(np.asarray(v), result.shape).reshape(-1)[bad]) for v in values)
            raise ValueProblem(f"the result does not fit {result.dtype} (of {shown}); integer values are "
                               "computed exactly: use a float constant (e.g. 1e19) to compute in floats", bad)
    elif result.dtype.kind == "f":
        for v in ints:
            k = first_changed(v, result.dtype) if v.dtype.itemsize == 8 else None
            if k is not None:
                value = v.reshape(-1)[k]
                warn(ValueProblem(f"the integer {value} becomes {float(result.dtype.type(value))!r} as "
                                  f"{result.dtype}", k, fatal=False))
                break
    return result


def _integer(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "iub"
    return isinstance(value, int)


def _negative_powers(values: list[Any]) -> list[Any]:
    """Integer bases to a negative constant power as floats; a negative integer exponent column refused."""
    base, exp = values
    if isinstance(exp, np.ndarray):
        neg = np.flatnonzero(np.broadcast_to(exp, np.broadcast_shapes(np.shape(base), exp.shape)) < 0)
        if len(neg):
            raise ValueProblem("raises an integer to a negative integer power (write the base as a float, "
                               "e.g. 1.0 * n, to compute in floats)", int(neg[0]))
        return values
    if exp < 0:
        return [np.asarray(base, dtype=np.float64), exp]
    return values


def _check_divisor(values: list[Any]) -> None:
    a, b = values
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    zero = np.flatnonzero(np.broadcast_to(np.asarray(b) == 0, shape))
    if len(zero):
        k = int(zero[0])
        raise ValueProblem(f"divides the integer {np.broadcast_to(np.asarray(a), shape).reshape(-1)[k]} "
                           "by zero", k)


def _overflows(key: str, values: list[Any], result: np.ndarray) -> int | None:
    """The first element whose integer ``result`` is not the exact one, or ``None``."""
    dt = result.dtype
    args = [np.broadcast_to(np.asarray(v).astype(dt, copy=False), result.shape) for v in values]
    signed = dt.kind == "i"
    low = np.iinfo(dt).min
    with np.errstate(all="ignore"):
        if key == "add":
            a, b = args
            bad = ((a ^ result) & (b ^ result)) < 0 if signed else result < a
        elif key == "sub":
            a, b = args
            bad = ((a ^ b) & (a ^ result)) < 0 if signed else a < b
        elif key in ("mul", "square"):
            a, b = (args[0], args[0]) if key == "square" else args
            bad = (a != 0) & (result // np.where(a == 0, 1, a) != b)
            if signed:
                bad |= ((a == -1) & (b == low)) | ((b == -1) & (a == low))
        elif key in ("neg", "abs"):
            bad = args[0] == low if signed else (args[0] != 0 if key == "neg" else np.zeros(result.shape, bool))
        elif key == "floordiv":
            bad = (args[0] == low) & (args[1] == -1) if signed else np.zeros(result.shape, bool)
        elif key == "pow":
            return _power_overflow(args[0], args[1], dt)
        else:  # mod, fmod: never beyond their divisor
            return None
    hits = np.flatnonzero(bad)
    return int(hits[0]) if len(hits) else None


def _power_overflow(base: np.ndarray, exp: np.ndarray, dt: np.dtype) -> int | None:
    """The first ``base ** exp`` beyond ``dt``: estimated in float64, the close calls checked exactly."""
    info = np.iinfo(dt)
    with np.errstate(all="ignore"):
        estimate = np.power(np.abs(base.astype(np.float64)), exp.astype(np.float64)).reshape(-1)
    for k in np.flatnonzero(estimate >= 2.0 ** 62):
        b, e = int(base.reshape(-1)[k]), int(exp.reshape(-1)[k])
        if estimate[k] >= 2.0 ** 66 or not info.min <= b ** e <= info.max:
            return int(k)
    return None
