"""Halfway and near-halfway tokens with 17-19 digit mantissas (the Eisel-Lemire path).

Exact halfway points between adjacent doubles, written with at most 19 significant
digits (they exist only for decimal exponents -4..23), their neighbours one unit away
in the last digit, and the 17, 18 and 19 digit truncations of halfway points across
the whole exponent range (zero to the smallest subnormal, the subnormal/normal
boundary, ordinary binades, the overflow edge) go through ``parse_float_lists`` and
the CSV kernel, and must be bitwise ``float(token)`` (float32: ``np.float32`` of it).
"""
from __future__ import annotations

import math
import random
import sys
from decimal import ROUND_DOWN, Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

from tests.helpers import bits

MIN_SUB = Fraction(1, 2**1074)


def _ulp_above(x: float) -> Fraction:
    return Fraction(math.nextafter(x, math.inf)) - Fraction(x) if x < sys.float_info.max \
        else Fraction(2**971)


def _truncations(h: Fraction, rng: random.Random) -> list[str]:
    """``h`` cut to 17, 18 and 19 significant digits, and one unit either side of each."""
    out = []
    exact = Decimal(h.numerator) / Decimal(h.denominator)  # dyadic: exact at this precision
    for digits in (17, 18, 19):
        with localcontext() as ctx:
            ctx.prec, ctx.rounding = digits, ROUND_DOWN
            d = +exact
        _sign, mant, exp = d.as_tuple()
        w = int("".join(map(str, mant)).ljust(digits, "0")[:digits])
        q = exp - (digits - len(mant))
        for v in (w - 1, w, w + 1):
            out.append(_spell(v, q, rng))
    return out


def _spell(w: int, q: int, rng: random.Random) -> str:
    """``w * 10**q`` as a token: scientific, or with a decimal point when it is short."""
    sign = "-" if rng.random() < 0.3 else ""
    s = str(w)
    if -len(s) <= q < 0 and rng.random() < 0.5:
        point = len(s) + q
        return f"{sign}{s[:point] or '0'}.{s[point:]}"
    return f"{sign}{s}e{q}"


def _exact_halfway(rng: random.Random) -> list[str]:
    """Decimal halfway points ``w * 10**q`` (odd part of 54 bits, ``w < 10**19``) and ±1."""
    out = []
    for q in range(-4, 24):
        p5 = 5 ** abs(q)
        lo, hi = -(-2**53 // p5), (2**54 - 1) // p5  # odd part o * 5**|q| has 54 bits
        for _ in range(12):
            o = rng.randrange(lo, hi + 1) | 1
            w = o * p5 if q < 0 else o
            while w * 2 < 10**19 and rng.random() < 0.5:
                w *= 2  # more powers of two keep the odd part
            if w < 10**19 and (q < 0 or (o * p5).bit_length() == 54):
                out += [_spell(v, q, rng) for v in (w - 1, w, w + 1) if v < 10**19]
    return out


def _binades() -> list[float]:
    """Doubles whose upper halfway point the corpus probes."""
    xs = [0.0, float(MIN_SUB), float(2 * MIN_SUB), 2.0**-1022 - float(MIN_SUB), 2.0**-1022,
          2.0**-1022 + float(MIN_SUB), 1.0, 2.0**53, 2.0**63, 2.0**64,
          sys.float_info.max, math.nextafter(sys.float_info.max, 0)]
    for e in range(-1074, 1024, 7):
        xs.append(math.ldexp(1.0, e))
        xs.append(math.nextafter(math.ldexp(1.0, e), 0))
    return xs


def corpus(seed: int = 15) -> list[str]:
    rng = random.Random(seed)
    toks = _exact_halfway(rng)
    for x in _binades():
        y = x * (1 + rng.random() / 4) if 0 < x < 2.0**1000 else x
        for z in {x, y}:
            toks += _truncations(Fraction(z) + _ulp_above(z) / 2, rng)
    return toks


TOKENS = corpus()


def _expected(tokens: list[str], dtype) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.array([float(t) for t in tokens]).astype(dtype)


def test_corpus_covers_the_cases():
    assert len(TOKENS) > 3000
    assert any(float(t) == 0.0 for t in TOKENS) and any(math.isinf(float(t)) for t in TOKENS)
    assert any(0 < abs(float(t)) < 2.0**-1022 for t in TOKENS)
    lengths = {len(t.lstrip("-").split("e")[0].replace(".", "").lstrip("0")) for t in TOKENS}
    assert {17, 18, 19} <= lengths


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_parse_float_lists_halfway(backend, dtype):
    values, _ = backend.parse_float_lists([",".join(TOKENS)], dtype=dtype)
    expected = _expected(TOKENS, dtype)
    wrong = np.flatnonzero(bits(values) != bits(expected))
    assert not len(wrong), [TOKENS[i] for i in wrong[:10]]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_csv_kernel_halfway(backend, dtype):
    """One token a row, bare (the scalar column) and in a quoted list (the ragged one)."""
    lines = [f'{t},"{t},{t}"\n' for t in TOKENS]
    parser = backend.CsvBlockParser(["a", "p.x"], ["scalar", "ragged"], {"p": [1]},
                                    dtype=dtype, first_line=1, list_sep=",")
    data = "".join(lines).encode()
    assert parser.feed(data, final=True) == len(data)
    scalars, grouped = parser.finish()
    expected = _expected(TOKENS, dtype)
    got = scalars["a"]
    wrong = np.flatnonzero(bits(got) != bits(expected))
    assert not len(wrong), [TOKENS[i] for i in wrong[:10]]
    values, offsets = grouped["p"]
    np.testing.assert_array_equal(bits(values[:, 0]), bits(np.repeat(expected, 2)))
    assert offsets.tolist() == list(range(0, 2 * len(TOKENS) + 1, 2))
