"""Differential fuzz: every compiled kernel against its pure-Python twin, bitwise (issue 16).

Seeded generators make data that looks like users' files (``%g``, ``%.6f``, ``%.9g`` and
17-digit ``repr`` numbers, quoted prong lists, ragged rows) and hostile input (garbage
tokens, huge and tiny exponents, subnormals, halfway cases, NaN payloads, CRLF, missing
newlines, wrong field counts, invalid offsets, rows and arguments). Both backends are
imported directly, whatever ``LSTM_DATA_PURE_PYTHON`` says, and must agree on values
(bit patterns, NaN payloads too), shapes, dtypes, lengths, exception types and messages.

Kernels and levels: ``parse_float_lists`` (many cells per call; after an error the call is
repeated from the cell after the failing one), ``CsvBlockParser`` (the kernel ``read_csv``
feeds: documents cut into random blocks), ``pad_ragged``, ``BatchGather`` (several calls per
gather, compared after the last one, so a reused buffer would show) and a few hundred
whole-file ``read_csv`` calls (plain and compressed files, small blocks), read once here
(compiled) and once in a child process with ``LSTM_DATA_PURE_PYTHON=1``.

Reproduce: ``LSTM_DATA_FUZZ_SEED`` (default 16) seeds the run; a mismatch names the kernel,
the case and the command that replays it (:func:`replay`). Under ``LSTM_DATA_PURE_PYTHON=1``
the test is skipped: it compares both backends in every process, so the compiled pass of CI
has already run it.
"""
from __future__ import annotations

import bz2
import gzip
import itertools
import lzma
import math
import os
import pickle
import subprocess
import sys
import warnings
from decimal import Decimal, localcontext
from pathlib import Path

import numpy as np
import pytest

from lstm_data.errors import ParseError
from lstm_data.kernels import _py as PY

try:
    from lstm_data.kernels._ext import _all as EXT
except ImportError as _exc:  # the compiled core is not built
    EXT, _MISSING = None, str(_exc)

SEED = int(os.environ.get("LSTM_DATA_FUZZ_SEED", "16"))
ROOT = Path(__file__).resolve().parents[2]
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)

# -- numbers ----------------------------------------------------------------------------
_WS = " \t\r\n\v\f"
_SPECIAL = ["nan", "NaN", "-nan", "+nan", "NAN", "inf", "-inf", "+Inf", "INF", "infinity",
            "-Infinity", "+INFINITY", "iNfInItY", "nAn"]
_EDGE = ["0", "-0", "+0", "0.0", "-0.0", "00", "007", ".5", "-.5", "5.", "+5.", "1e0", "1E+05",
         "1e-0", "-1.5E-3", "4.9e-324", "5e-324", "2.4703282292062327e-324",
         "2.4703282292062328e-324", "2.2250738585072011e-308", "2.2250738585072014e-308",
         "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308",
         "3.4028235e38", "3.4028235677973366e38", "3.4028236e38", "1.4e-45", "7e-46",
         "7.1e-46", "1.1754943e-38", "9007199254740993", "18446744073709551616",
         "123456789012345678901234567890", "0.1000000000000000055511151231257827", "1e22",
         "1e23", "1e-400", "1e400", "-1e400", "1e99999999999", "1e-99999999999", "0e99999",
         "0.000000000000000000000000000001e30", "1" + "0" * 400, "0." + "0" * 400 + "1"]
#: exponents that only a very long run of zeros makes finite again
_LONG = ["0." + "0" * 100003 + "1e100005", "1" + "0" * 100003 + "e-100005",
         "0." + "0" * 100003 + "15e100004", "0." + "0" * 99999 + "1e1000000",
         "-1" + "0" * 99999 + "e-1000000"]
_GARBAGE = ["", " ", "\t", "1e", "e5", "E", "--1", "+-1", "-+1", "++1", "1..2", "1.2.3", ".",
            "-", "+", "-.", "+.e1", ".e1", "1 2", "1\t2", "0x10", "0X1p3", "1_000", "\u0661",
            "\uff11", "\u0131nf", "\u0130NF", "infinit", "infinityy", "nana", "nan1", "in f",
            "1e+", "1e-", "1e5.5", "1e5e5", "abc", "\x00", "1\x00", '"', "'1'", "1d5", "1f",
            "inf5", "nan(123)", "0b1", "\u221e", "\u22121", "\u00a01", "1\u00a0", "\ud800",
            "1\udc80", "\u00e9", "+nan+", "true", "None", "e", "1ee5", "1e--5", "- 1", "1 e5",
            ". 5", "\x85"]


def _float(rng) -> float:
    """A double that looks like data, or an awkward one."""
    u = rng.random()
    if u < .4:
        return float(rng.normal() * 10.0 ** int(rng.integers(-12, 13)))
    if u < .5:
        return float(np.float32(rng.normal() * 10.0 ** int(rng.integers(-40, 38))))
    if u < .6:
        return float(np.array([rng.integers(0, 2**63)], np.int64).view(np.float64)[0]) * (
            -1 if rng.random() < .5 else 1)
    if u < .67:  # float64 subnormal
        return float(np.array([rng.integers(1, 2**52)], np.int64).view(np.float64)[0])
    if u < .74:  # any float32, subnormals included
        return float(np.array([rng.integers(0, 2**32)], np.int64).astype(np.uint32)
                     .view(np.float32)[0])
    if u < .86:
        return float(rng.integers(-1000, 1000))
    return float(rng.normal() * 10.0 ** int(rng.integers(-320, 308)))


def _halfway(x: float, rng) -> str:
    """The exact decimal midpoint between ``x`` and its float64 (or float32) successor,
    or a hair above or below it: the hardest tokens to round."""
    if rng.random() < .5:
        with np.errstate(over="ignore"):
            a, b = float(np.float32(x)), float(np.nextafter(np.float32(x), np.float32(np.inf)))
    else:
        a, b = x, math.nextafter(x, math.inf)
    if not (math.isfinite(a) and math.isfinite(b)):
        return repr(x)
    with localcontext() as ctx:
        ctx.prec = 1200
        mid = (Decimal(a) + Decimal(b)) / 2
        if rng.random() < .5:
            mid += Decimal(10) ** (mid.adjusted() - 60) * (1 if rng.random() < .5 else -1)
        return str(mid)


def number(rng) -> str:
    """One number token in a format users' files hold (or an edge case)."""
    u = rng.random()
    if u < .0005:
        return str(rng.choice(_LONG))
    if u < .04:
        return str(rng.choice(_SPECIAL))
    if u < .1:
        return str(rng.choice(_EDGE))
    x = _float(rng)
    if not math.isfinite(x):
        return repr(x)
    if u < .14:
        return _halfway(x, rng)
    style = int(rng.integers(0, 10))
    if style == 8 and abs(x) < 1e30:
        text = str(int(x))
    else:
        fmt = ["%g", "%.6f", "%.9g", "%r", "%.17g", "%.17e", "%E", "%.3f", "%.20g", "%.1e"][style]
        text = fmt % x if abs(x) < 1e30 or "f" not in fmt else repr(x)
    v = rng.random()
    if v < .05 and text[0] not in "+-":
        text = "+" + text
    elif v < .1:
        text = text.replace("e", "E").replace("E-", "E-00").replace("E+", "E+0")
    elif v < .13 and text.startswith("0."):
        text = text[1:]
    return text


def token(rng, garbage: float, ws: str = _WS) -> str:
    """A number, maybe inside whitespace, or (with probability ``garbage``) a bad token."""
    if rng.random() < garbage:
        return str(rng.choice(_GARBAGE))
    text = number(rng)
    if ws and rng.random() < .1:
        text = "".join(rng.choice(list(ws), size=2)[:int(rng.integers(0, 3))]) + text
        text += "".join(rng.choice(list(ws), size=int(rng.integers(0, 2))))
    return text


def floats(rng, shape, dtype) -> np.ndarray:
    """Values with ties, NaN payloads (quiet, signalling, negative), infinities, signed
    zeros, subnormals and (for float64) numbers too large for float32."""
    n = int(np.prod(shape))
    out = rng.normal(size=n) * 10.0 ** rng.integers(-3, 4, size=n)
    ties = rng.random(n) < .3
    out[ties] = rng.integers(-2, 3, size=int(ties.sum()))
    out = out.astype(dtype)
    bits = out.view(np.uint64 if dtype == F64 else np.uint32)
    special = (np.array([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000000123,
                         0x7FF0000000000001, 0x7FF0000000000000, 0xFFF0000000000000,
                         0x8000000000000000, 0x0000000000000001, 0x7E37E43C8800759C],
                        dtype=np.uint64) if dtype == F64 else
               np.array([0x7FC00000, 0xFFC00000, 0x7FC00123, 0x7F800001, 0x7F800000,
                         0xFF800000, 0x80000000, 0x00000001, 0x007FFFFF], dtype=np.uint32))
    pick = rng.random(n) < .25
    bits[pick] = rng.choice(special, size=int(pick.sum()))
    return out.reshape(shape)


# -- outcomes and their comparison ---------------------------------------------------------
def outcome(fn, *args, **kwargs):
    """``("ok", result)`` or ``("raised", type, message, cell)`` (``cell`` of a ParseError)."""
    try:
        return ("ok", fn(*args, **kwargs))
    except Exception as exc:  # noqa: BLE001 - the exception itself is what is compared
        return ("raised", type(exc), str(exc), getattr(exc, "cell", None))


def diff(a, b, where: str = "") -> str | None:
    """Where ``a`` and ``b`` differ (arrays: dtype, shape, bit patterns), or ``None``."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return f"{where}: {type(a).__name__} vs {type(b).__name__}"
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        if a.dtype.kind == "f":
            a, b = (np.ascontiguousarray(x).view(f"u{x.itemsize}") for x in (a, b))
        bad = np.flatnonzero((a != b).reshape(-1))
        return f"{where}[flat {bad[0]}]: {a.reshape(-1)[bad[0]]!r} vs {b.reshape(-1)[bad[0]]!r}" \
            if len(bad) else None
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{where}: length {len(a)} vs {len(b)}"
        return next((d for i, (x, y) in enumerate(zip(a, b)) if (d := diff(x, y, f"{where}[{i}]"))),
                    None)
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{where}: keys {list(a)} vs {list(b)}"
        return next((d for k in a if (d := diff(a[k], b[k], f"{where}[{k!r}]"))), None)
    return None if a == b else f"{where}: {a!r} vs {b!r}"


def _short(x, limit: int = 3000) -> str:
    text = repr(x)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


# -- parse_float_lists ---------------------------------------------------------------------
def _cell(rng, sep: str, garbage: float):
    u = rng.random()
    if u < .03:
        return None
    if u < .05:
        return [float("nan"), np.float32("nan"), np.float64("-nan")][int(rng.integers(0, 3))]
    if u < .08:
        return "".join(rng.choice(list(_WS), size=int(rng.integers(0, 4))))
    tokens = [token(rng, garbage) for _ in range(int(rng.geometric(.3)))]
    text = sep.join(tokens)
    if rng.random() < garbage / 4:
        text = [sep + text, text + sep, text.replace(sep, sep + sep, 1)][int(rng.integers(0, 3))]
    form = rng.random()
    if form < .8:
        return text
    raw = text.encode("utf-8", "surrogatepass")
    if form < .9:
        return raw
    if form < .93:
        return np.str_(text)
    if form < .96:
        return bytearray(raw)
    if form < .99:
        return memoryview(raw)
    return [1, 1.5, ["1"], object()][int(rng.integers(0, 4))] if rng.random() < garbage else text


def parse_case(rng):
    garbage = float(rng.choice([0.0, .003, .03, .3]))
    sep = str(rng.choice([",", ",", ",", ";", "|", ":"])) if rng.random() > .01 else \
        str(rng.choice(["", " ", ".", "ab", "-", "\u00e9"]))
    cells = [_cell(rng, sep, garbage) for _ in range(int(rng.integers(0, 60)))]
    dtype = [np.float32, np.float64, F32, "float64", "f4", None, np.float16, np.int64][
        int(rng.choice(8, p=[.4, .4, .05, .05, .04, .02, .02, .02]))]
    kind = str(rng.choice(["list", "tuple", "object", "array", "generator", "2-D"],
                          p=[.6, .1, .15, .1, .04, .01]))
    return cells, dtype, sep, kind


def _container(cells: list, kind: str):
    if kind == "tuple":
        return tuple(cells)
    if kind in ("object", "2-D"):
        arr = np.empty(len(cells), dtype=object)
        arr[:] = cells
        return arr.reshape(1, -1) if kind == "2-D" else arr
    if kind == "array" and cells and all(type(c) is str for c in cells):
        return np.array(cells)
    if kind == "array" and cells and all(type(c) is bytes for c in cells):
        return np.array(cells, dtype=bytes)
    if kind == "generator":
        return (c for c in cells)
    return list(cells)


def parse_run(ns, case):
    """One call per cell batch; after a ParseError, again from the cell after it."""
    cells, dtype, sep, kind = case
    results, start = [], 0
    while True:
        got = outcome(ns.parse_float_lists, _container(cells[start:], kind), dtype=dtype, sep=sep)
        results.append(got)
        if got[0] == "ok" or got[1] is not ParseError:
            return results, len(cells)
        start += got[3] + 1


# -- CsvBlockParser ------------------------------------------------------------------------
def big_integer(rng) -> str:
    """An integer token near or beyond 2**24 and 2**53, sometimes over 19 digits."""
    u = rng.random()
    if u < .4:
        value = int(rng.choice([2**24, 2**53])) + int(rng.integers(-3, 4))
    elif u < .8:
        value = int(rng.integers(2**23, 2**63, dtype=np.uint64))
    else:
        value = int(rng.integers(1, 10**6)) * 10**int(rng.integers(13, 25)) + int(rng.integers(0, 99))
    sign = str(rng.choice(["", "-", "+"], p=[.8, .15, .05]))
    return sign + "0" * int(rng.choice([0, 0, 0, 2])) + str(value)


def csv_layout(rng):
    n = int(rng.integers(1, 8))
    kinds = [str(k) for k in rng.choice(["scalar", "ragged", "skip"], p=[.45, .4, .15], size=n)]
    ragged = [c for c, k in enumerate(kinds) if k == "ragged"]
    groups: dict = {}
    for c, g in zip(ragged, rng.integers(0, int(rng.integers(1, 3)), size=len(ragged))):
        groups.setdefault(f"g{g}", []).append(c)
    for g in groups:  # a group's values columns need not be in file order
        if rng.random() < .2:
            groups[g] = [int(c) for c in rng.permutation(groups[g])]
    names = [f"c{c}" for c in range(n)]
    for g, members in groups.items():
        for c in members:
            names[c] = f"{g}.v{c}"
    return names, kinds, groups


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _csv_cell(rng, kind: str, n: int, sep: str, lsep: str, garbage: float) -> str:
    ws = " \t"
    if kind == "skip":
        return str(rng.choice(["x", "", "1.5", '"a' + sep + '""b""\nc"', '"q"', "n/a", "'s'"]))
    if kind == "scalar":
        u = rng.random()
        if u < .1:
            return str(rng.choice(["", "  ", '""', '" "']))
        if u < .15:
            return _quote(token(rng, garbage, ws))
        if rng.random() < garbage / 3:  # a list in a scalar column
            return _quote(lsep.join(number(rng) for _ in range(2)))
        if rng.random() < .05:  # an id the float dtype may change
            return big_integer(rng)
        return token(rng, garbage, ws)
    if rng.random() < garbage / 3:
        n = max(0, n + int(rng.choice([-1, 1])))
    tokens = [token(rng, garbage / 2, ws) for _ in range(n)]
    if n == 0:
        return str(rng.choice(['""', "", '" "', '"\r\n"', '"[]"', "[]", '"[ ]"']))
    u = rng.random()
    if n == 1 and u < .2:
        return tokens[0]
    if u > .92:  # pandas' bracketed list, sometimes broken
        if rng.random() < .3:
            tokens = [big_integer(rng) for _ in tokens]
        inner = "[" + (lsep + str(rng.choice(["", " "]))).join(tokens)
        inner += str(rng.choice(["]", "] ", " ]", ""] if garbage else ["]", "] ", " ]"]))
        return inner if lsep != sep and rng.random() < .5 else _quote(inner)
    if lsep != sep and u < .4:
        return lsep.join(tokens)
    if rng.random() < .1:
        tokens[0] = "\n" + tokens[0]  # a newline inside quotes is whitespace
    cell = _quote(lsep.join(tokens))
    if rng.random() < .03:
        cell += str(rng.choice([" ", "\t\r"]))
    elif rng.random() < garbage / 3:
        cell += str(rng.choice(["x", '"', "\u00e9", "1"]))
    return cell


def csv_text(rng, layout, sep: str, lsep: str, garbage: float, header: bool = False) -> bytes:
    names, kinds, groups = layout
    group_of = {c: g for g, members in groups.items() for c in members}
    lines = [sep.join(names)] if header else []
    for _ in range(int(rng.integers(0, 9))):
        lengths = {g: int(rng.choice([0, 1, 2, 3, 4, 7, 20], p=[.2, .25, .2, .15, .1, .07, .03]))
                   for g in groups}
        cells = [_csv_cell(rng, k, lengths.get(group_of.get(c), 0), sep, lsep, garbage)
                 for c, k in enumerate(kinds)]
        if rng.random() < garbage / 4:
            cells = cells[:-1] if rng.random() < .5 else cells + ["1"]
        lines.append(sep.join(cells))
        if rng.random() < .05:
            lines.append(str(rng.choice(["", "\r", " "])))
    newline = "\r\n" if rng.random() < .3 else "\n"
    ends = [newline if rng.random() >= garbage else str(rng.choice(["\n", "\r\n", "\r\r\n"]))
            for _ in lines]
    text = "".join(line + end for line, end in zip(lines, ends))
    text = text[:-len(ends[-1])] + str(rng.choice([ends[-1], "", "\r", newline + newline])) \
        if lines else text
    return text.encode("utf-8", "surrogatepass")


def csv_case(rng):
    garbage = float(rng.choice([0.0, .01, .05, .3]))
    layout = csv_layout(rng)
    sep, lsep = ",", ","
    if rng.random() < .2:
        sep, lsep = [(";", ","), ("\t", ","), (",", "|"), (";", ";"), ("|", ":")][
            int(rng.integers(0, 5))]
    options = dict(dtype=np.float32 if rng.random() < .5 else np.float64, sep=sep,
                   list_sep=lsep, first_line=int(rng.integers(1, 5)))
    if rng.random() < .01:
        key = str(rng.choice(["sep", "list_sep", "dtype"]))
        options[key] = [np.int32, "float16"][int(rng.integers(0, 2))] if key == "dtype" else \
            ['"', "\n", "a", "..", "", ".", "\u00e9"][int(rng.integers(0, 7))]
    data = csv_text(rng, layout, sep, lsep, garbage)
    cuts = sorted(int(c) for c in rng.integers(0, len(data) + 1, size=int(rng.integers(0, 4))))
    again = csv_text(rng, layout, sep, lsep, garbage) if rng.random() < .1 else None
    return layout, options, data, cuts, again


def _feed(parser, data: bytes, cuts) -> list:
    """Feed ``data`` cut at ``cuts`` as the reader does; the bytes each call consumed."""
    used, carry, bounds = [], b"", [0, *cuts, len(data)]
    for lo, hi in itertools.pairwise(bounds):
        buf = carry + data[lo:hi]
        used.append(parser.feed(memoryview(buf) if len(used) % 2 else buf))
        carry = buf[used[-1]:]
    used.append(parser.feed(carry, final=True))
    return used


def csv_run(ns, case):
    (names, kinds, groups), options, data, cuts, again = case
    made = outcome(ns.CsvBlockParser, names, kinds, groups, **options)
    if made[0] != "ok":
        return made, 1
    parser = made[1]
    results = []
    for text, where in ((data, cuts), (again, [])):
        if text is None:
            break
        fed = outcome(_feed, parser, text, where)
        results.append((fed, parser.rows, parser.line, parser.column_flags(), parser.inexact_ints()))
        if fed[0] != "ok":
            break
        results.append(parser.finish())
    return results, 1


# -- pad_ragged and BatchGather ------------------------------------------------------------
def ragged_data(rng, n_rows: int, garbage: float):
    """``(values, offsets)`` of ``n_rows`` rows in a random layout; sometimes broken."""
    lengths = rng.choice([0, 1, 2, 3, 5, 8], size=n_rows, p=[.2, .25, .2, .15, .12, .08])
    if n_rows and rng.random() < .05:
        lengths[rng.integers(0, n_rows)] = rng.integers(33, 80)  # long rows take the merge sort
    flat = rng.random() < .25
    n_vars = 1 if flat else int(rng.choice([0, 1, 2, 3, 4], p=[.03, .2, .3, .3, .17]))
    dtype = F32 if rng.random() < .5 else F64
    total = int(lengths.sum())
    shape = (total,) if flat else (total, n_vars)
    values = floats(rng, shape, dtype)
    layout = rng.random()
    if layout < .1:
        values = np.asfortranarray(values)
    elif layout < .2:
        values = np.repeat(values, 2, axis=0)[::2]
    elif layout < .3:
        values = values[::-1].copy()[::-1]
    elif layout < .35 and not flat:
        values = np.repeat(values, 2, axis=1)[:, ::2]
    elif layout < .4:
        values.setflags(write=False)
    offsets = np.zeros(n_rows + 1, dtype=np.int64 if rng.random() < .6 else np.int32)
    np.cumsum(lengths, out=offsets[1:])
    if rng.random() < garbage:
        i, u = int(rng.integers(0, n_rows + 1)), rng.random()
        if u < .5:
            offsets[i] = rng.integers(-3, total + 4)
        elif u < .6:
            offsets = offsets.astype(str(rng.choice(["float64", "uint64", "int16", ">i8"])))
        elif u < .7:
            offsets = offsets.reshape(1, -1) if rng.random() < .5 else offsets[:0]
        elif u < .8:
            with np.errstate(over="ignore", invalid="ignore"):
                values = values.astype(str(rng.choice(["float16", "int32", ">f8"])))
        elif u < .9:
            values = values.reshape(1, *values.shape) if values.ndim == 2 else values.tolist()
        else:
            offsets = offsets.tolist()
    return values, offsets, n_vars, flat


def rows_for(rng, n_rows: int, garbage: float, allow_none: bool = True):
    u = rng.random()
    if allow_none and u < .15:
        return None
    size = int(rng.choice([0, 1, 2, 5, 8, 16], p=[.05, .15, .2, .3, .2, .1]))
    rows = rng.integers(0, max(n_rows, 1), size=size)
    if not n_rows and size:
        rows[:] = rng.integers(-2, 3, size=size)
    if rng.random() < garbage:
        v = rng.random()
        if v < .6 and size:
            rows[rng.integers(0, size, size=int(rng.integers(1, 3)))] = rng.choice(
                [-1, -2, n_rows, n_rows + 1, n_rows + 7])
        elif v < .7:
            return rows.astype(np.float64)
        elif v < .8:
            return rows.reshape(1, -1) if rng.random() < .5 else rows.astype(bool)
        elif v < .9:
            return np.array([2**63 + 5, 0], dtype=np.uint64)
        else:
            return [] if rng.random() < .5 else np.int64(0)
    dtype = str(rng.choice(["int64", "int32", "intp", "uint64", "uint8", "int16", "list"],
                           p=[.4, .15, .15, .1, .1, .05, .05]))
    if dtype == "list":
        return rows.tolist()
    if dtype[0] == "u" and ((rows < 0).any() or rows.max(initial=0) > np.iinfo(dtype).max):
        dtype = "int64"
    return rows.astype(dtype)


_PADS = [np.nan, -np.nan, 0.0, -0.0, np.inf, -np.inf, -1.0, 1e300, 5e-324, 7, True,
         float(np.array([0x7FF8000000000123], np.uint64).view(np.float64)[0]),
         float(np.array([0x7FF0000000000001], np.uint64).view(np.float64)[0]),
         np.float32(np.array([0x7FC00123], np.uint32).view(np.float32)[0]), np.float64(2.5)]
_BAD_PADS = [None, "nan", "x", 10**400, 1j]


def pad_options(rng, n_vars: int, flat: bool, garbage: float) -> dict:
    """Keyword arguments of pad_ragged (also the keys of a BatchGather job)."""
    bad = rng.random() < garbage
    opts = {}
    if rng.random() < .6:
        opts["max_len"] = int(rng.choice([0, 1, 2, 3, 5, 9])) if not bad or rng.random() < .7 \
            else [-1, True, 2.0, np.int32(3), "3"][int(rng.integers(0, 5))]
    if rng.random() < .6:
        opts["pad_value"] = _PADS[int(rng.integers(0, len(_PADS)))] \
            if not bad or rng.random() < .8 else _BAD_PADS[int(rng.integers(0, len(_BAD_PADS)))]
    if (not flat or bad) and rng.random() < .4:
        cols = rng.integers(0, max(n_vars, 1), size=int(rng.integers(0, n_vars + 2)))
        if bad and rng.random() < .5:
            cols = np.append(cols, rng.choice([-1, n_vars, 99]))
        opts["columns"] = cols.tolist() if rng.random() < .3 else cols.astype(
            str(rng.choice(["int64", "int32", "intp"]))) if not (bad and rng.random() < .2) \
            else cols.astype(np.float64)
    if rng.random() < .4:
        opts["sort_by"] = int(rng.integers(0, max(n_vars, 1))) if not bad or rng.random() < .5 \
            else [n_vars, -1, True, 1.0, np.int64(0)][int(rng.integers(0, 5))]
    if rng.random() < .5:
        opts["descending"] = bool(rng.random() < .5)
    for key in ("padding", "truncating"):
        if rng.random() < .5:
            opts[key] = str(rng.choice(["post", "pre"])) if not bad or rng.random() < .7 \
                else ["Post", "", None][int(rng.integers(0, 3))]
    if rng.random() < .6:
        opts["dtype"] = [np.float32, np.float64, "float32", F64, None][int(rng.integers(0, 5))] \
            if not bad or rng.random() < .5 else [np.int32, "float16"][int(rng.integers(0, 2))]
    return opts


def pad_case(rng):
    garbage = float(rng.choice([0.0, .05, .3]))
    n_rows = int(rng.integers(0, 10))
    values, offsets, n_vars, flat = ragged_data(rng, n_rows, garbage)
    rows = rows_for(rng, n_rows, garbage)
    opts = pad_options(rng, n_vars, flat, garbage)
    out = None
    if rng.random() < .15:  # a buffer of (usually) the right shape and dtype
        try:
            b, _ = PY.pad_ragged(values, offsets, rows, **opts)
            out = (b.shape, b.dtype, str(rng.choice(["exact"] * 6 + ["shape", "dtype", "strided",
                                                                        "readonly", "list"])))
        except Exception:  # noqa: BLE001 - the case fails anyway; no buffer
            pass
    return values, offsets, rows, opts, out


def _out(recipe):
    if recipe is None:
        return None
    shape, dtype, kind = recipe
    if kind == "list":
        return np.zeros(shape, dtype).tolist()
    if kind == "shape":
        shape = (shape[0] + 1, *shape[1:])
    if kind == "dtype":
        dtype = F64 if dtype == F32 else F32
    out = np.full(shape, 1234.5, dtype)
    if kind == "strided":
        out = np.full((*shape[:-1], 2 * shape[-1]), 1234.5, dtype)[..., ::2]
    if kind == "readonly":
        out.setflags(write=False)
    return out


def pad_run(ns, case):
    values, offsets, rows, opts, recipe = case
    out = _out(recipe)
    got = outcome(ns.pad_ragged, values, offsets, rows, out=out, **opts)
    if got[0] == "ok" and out is not None:
        got = ("ok", got[1], got[1][0] is out)
    return got, 1


def gather_case(rng):
    garbage = float(rng.choice([0.0, .05, .3]))
    n_rows = int(rng.integers(0, 10))
    jobs = []
    for _ in range(int(rng.choice([0, 1, 2, 3], p=[.05, .45, .35, .15]))):
        n = n_rows if rng.random() < .85 else int(rng.integers(0, 10))
        values, offsets, n_vars, flat = ragged_data(rng, n, garbage)
        job = dict(values=values, offsets=offsets, **pad_options(rng, n_vars, flat, garbage))
        if rng.random() < .5:
            job["fixed"] = bool(rng.random() < .5)
        if rng.random() < garbage / 5:
            job.pop("offsets") if rng.random() < .5 else job.update(unknown=1)
        jobs.append(job)
    tables = []
    for _ in range(int(rng.choice([0, 1, 2], p=[.3, .5, .2]))):
        n = n_rows if rng.random() < .85 else int(rng.integers(0, 10))
        dtype = F32 if rng.random() < .5 else F64
        table = floats(rng, (n, int(rng.choice([0, 1, 2, 3]))), dtype)
        if rng.random() < .15:
            table = np.asfortranarray(table)
        if rng.random() < garbage / 3:
            with np.errstate(invalid="ignore"):
                table = table.astype(np.int32) if rng.random() < .5 else table.reshape(-1)
        tables.append(table)
    calls = [rows_for(rng, n_rows, garbage, allow_none=False)
             for _ in range(int(rng.integers(1, 5)))]
    return jobs, tables, calls


def gather_run(ns, case):
    """Every call's outputs, compared only after the last call (reused buffers would show)."""
    jobs, tables, calls = case
    made = outcome(ns.BatchGather, jobs, tables)
    if made[0] != "ok":
        return made, 1
    return [outcome(made[1], rows) for rows in calls], len(calls)


# -- whole files through read_csv ----------------------------------------------------------
_COMPRESS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}


def read_case(rng, index: int, directory: Path):
    """Files (one or two, plain or compressed) and ``read_csv`` options for one case."""
    garbage = float(rng.choice([0.0, 0.0, .01, .05]))
    names, kinds, groups = csv_layout(rng)
    options = {}
    if rng.random() < .3:
        declared = {g: [names[c] for c in members] for g, members in groups.items()}
        scalars = [n for n, k in zip(names, kinds) if k == "scalar"]
        options["schema"] = {"groups": declared, "scalars": scalars} if rng.random() < .5 \
            else declared
    if not isinstance(options.get("schema"), dict) or "scalars" not in options["schema"]:
        kinds = ["scalar" if k == "skip" else k for k in kinds]
    sep, lsep = [(",", ","), (",", ","), (";", ";"), (",", "|")][int(rng.integers(0, 4))]
    if sep != ",":
        options["sep"] = sep
    if lsep != sep:
        options["list_sep"] = lsep
    if rng.random() < .5:
        options["dtype"] = np.float32 if rng.random() < .5 else np.float64
    if rng.random() < .7:
        options["block_bytes"] = int(rng.choice([7, 64, 1000]))
    paths = []
    for part in range(1 if rng.random() < .8 else 2):
        data = csv_text(rng, (names, kinds, groups), sep, lsep, garbage, header=True)
        ext = str(rng.choice(["", "", "", ".gz", ".bz2", ".xz"]))
        path = directory / f"read{index}_{part}.csv{ext}"
        path.write_bytes(_COMPRESS[ext](data) if ext else data)
        paths.append(str(path))
    return (paths[0] if len(paths) == 1 else paths), options


def read_outcome(paths, options):
    """``read_csv``'s dataset as plain arrays (or its error), and its warnings."""
    from lstm_data.io.csv import read_csv
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = outcome(read_csv, paths, **options)
    if got[0] == "ok":
        ds = got[1]
        got = ("ok", len(ds), list(ds.scalar_names), {g: list(v) for g, v in ds.groups.items()},
               {n: ds.scalar(n) for n in ds.scalar_names},
               {g: list(ds.ragged(g)) for g in ds.groups})
    return got, [f"{w.category.__name__}: {w.message}" for w in caught]


def read_all(manifest: str, result: str) -> None:
    """Child process entry: read every case of ``manifest`` with this process's backend."""
    from lstm_data import kernels
    cases = pickle.loads(Path(manifest).read_bytes())
    Path(result).write_bytes(pickle.dumps((kernels.BACKEND, [read_outcome(*c) for c in cases])))


def read_files(directory: Path, units: int, seed: int, mismatches: list) -> int:
    """Read ``units`` generated file sets here (compiled) and in a child on the twins."""
    from lstm_data import kernels
    cases = [read_case(rng_for("read", i, seed), i, directory) for i in range(units)]
    manifest, result = directory / "cases.pkl", directory / "twin.pkl"
    manifest.write_bytes(pickle.dumps(cases))
    env = dict(os.environ, LSTM_DATA_PURE_PYTHON="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    code = ("import sys; from tests.kernels.test_differential_fuzz import read_all; "
            "read_all(sys.argv[1], sys.argv[2])")
    proc = subprocess.run([sys.executable, "-c", code, str(manifest), str(result)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    backend, twin = pickle.loads(result.read_bytes())
    assert (kernels.BACKEND, backend) == ("cython", "python")
    for i, (case, b) in enumerate(zip(cases, twin)):
        a = read_outcome(*case)
        if (where := diff(a, b)) is not None:
            mismatches.append(f"read_csv case {i} (LSTM_DATA_FUZZ_SEED={seed}): compiled and twin "
                              f"differ at {where}\n  compiled: {_short(a)}\n  twin:     "
                              f"{_short(b)}\n  read_csv{_short(case)} (files kept by pytest)")
    return len(cases)


# -- the fuzz ------------------------------------------------------------------------------
KERNELS = {"parse": (parse_case, parse_run), "csv": (csv_case, csv_run),
           "pad": (pad_case, pad_run), "gather": (gather_case, gather_run)}
_IDS = {"parse": 1, "csv": 2, "pad": 3, "gather": 4, "read": 5}
#: generated units per kernel (a parse unit holds ~30 cells, a gather unit ~2.5 calls)
UNITS = {"parse": 2500, "csv": 15000, "pad": 25000, "gather": 7000, "read": 300}
MIN_CASES = 100_000


def rng_for(kernel: str, index: int, seed: int = SEED) -> np.random.Generator:
    """The generator of one case: each case can be replayed on its own."""
    return np.random.default_rng([seed, _IDS[kernel], index])


def compare(kernel: str, index: int, seed: int = SEED) -> tuple[int, str | None]:
    """Run one generated case on both backends: ``(cases compared, mismatch report or None)``."""
    make, run = KERNELS[kernel]
    case = make(rng_for(kernel, index, seed))
    (a, n), (b, _) = run(EXT, case), run(PY, case)
    where = diff(a, b)
    if where is None:
        return n, None
    return n, (f"{kernel} case {index} (LSTM_DATA_FUZZ_SEED={seed}): compiled and twin differ "
               f"at {where}\n  compiled: {_short(a)}\n  twin:     {_short(b)}\n  case:     "
               f"{_short(case)}\n  replay:   python -c \"from tests.kernels.test_differential_fuzz"
               f" import replay; replay('{kernel}', {index}, {seed})\"")


def replay(kernel: str, index: int, seed: int = SEED) -> None:
    """Print what one case gives on both backends (run from the repository root)."""
    n, report = compare(kernel, index, seed)
    print(report or f"{kernel} case {index}: {n} cases, compiled == twin")


def _skip_reason() -> str | None:
    if os.environ.get("LSTM_DATA_PURE_PYTHON", "") not in ("", "0"):
        return ("LSTM_DATA_PURE_PYTHON=1: the fuzz imports both backends in every process, "
                "so the compiled pass has already compared them")
    if EXT is None:
        if os.environ.get("LSTM_DATA_REQUIRE_EXTENSION", "") not in ("", "0"):
            pytest.fail("LSTM_DATA_REQUIRE_EXTENSION=1 but the compiled core is missing: "
                        f"{_MISSING}")
        return f"compiled core not built ({_MISSING})"
    return None


@pytest.mark.slow
def test_compiled_kernels_equal_their_twins(tmp_path):
    if (reason := _skip_reason()) is not None:
        pytest.skip(reason)
    print(f"differential fuzz: LSTM_DATA_FUZZ_SEED={SEED}")
    counts, mismatches = dict.fromkeys(UNITS, 0), []
    for kernel in KERNELS:
        for index in range(UNITS[kernel]):
            n, report = compare(kernel, index)
            counts[kernel] += n
            if report is not None:
                mismatches.append(report)
    counts["read"] = read_files(tmp_path, UNITS["read"], SEED, mismatches)
    print(f"cases compared: {counts} (total {sum(counts.values())})")
    per_kernel = {k: [m for m in mismatches if m.startswith(k)] for k in ("parse", "csv", "pad",
                                                                          "gather", "read_csv")}
    assert not mismatches, (
        f"{len(mismatches)} mismatches ({ {k: len(v) for k, v in per_kernel.items()} }); the "
        "first ones of each kernel:\n\n"
        + "\n\n".join(m for v in per_kernel.values() for m in v[:2]))
    assert sum(counts.values()) >= MIN_CASES, counts
