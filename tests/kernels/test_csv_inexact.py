"""Integers the float dtype changes (event and run numbers): the INEXACT flag and the first such
token per column, the same on both backends, however the text is cut or stitched."""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data.kernels import INEXACT

NAMES, KINDS, GROUPS = ["run", "evt", "p.x", "e"], ["scalar", "scalar", "ragged", "scalar"], {"p": [2]}

TEXT = (b"1,16777216,\"1,2\",0.5\n"             # 2**24: exact in float32
        b"2,16777217,\"3, 16777219\",1e30\n"     # 2**24 + 1 and + 3: changed in float32
        b"3, -9007199254740993 ,\"\",2\n"         # 2**53 + 1: changed in float64 too
        b"+33554435,5,\"123456789012345678901234567890123456789\",3\n"  # 39 digits
        b"4,00000000000000000000000000016777218,\"7.0\",16777217.0\n")  # exact; not an integer token


def parse(ns, dtype, data=TEXT, cuts=()):
    parser = ns.CsvBlockParser(NAMES, KINDS, GROUPS, dtype=dtype, first_line=2)
    carry, bounds = b"", [0, *sorted(cuts), len(data)]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        buf = carry + data[lo:hi]
        carry = buf[parser.feed(buf):]
    parser.feed(carry, final=True)
    return parser.column_flags().tolist(), parser.inexact_ints()


def test_flags_and_first_tokens(backend):
    flags, first = parse(backend, np.float32)
    assert [bool(f & INEXACT) for f in flags] == [True, True, True, False]
    assert first == {"run": (5, "+33554435", 9), "evt": (3, "16777217", 8),
                     "p.x": (3, "16777219", 8)}
    flags, first = parse(backend, np.float64)
    assert [bool(f & INEXACT) for f in flags] == [False, True, True, False]
    assert first == {"evt": (4, "-9007199254740993", 17),
                     "p.x": (5, "12345678901234567890123456789012", 39)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_twins_agree_at_every_cut(twins, dtype):
    compiled, python = twins
    for cut in range(1, len(TEXT)):
        assert parse(compiled, dtype, cuts=(cut,)) == parse(python, dtype, cuts=(cut,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_extend_keeps_the_earliest_and_shifts_lines(backend, dtype):
    """Pieces parsed from line 0 on worker parsers, stitched in order (the threaded reader)."""
    lines = TEXT.splitlines(keepends=True)
    dest = backend.CsvBlockParser(NAMES, KINDS, GROUPS, dtype=dtype, first_line=2)
    for k in range(0, len(lines), 2):
        piece = b"".join(lines[k:k + 2])
        worker = backend.CsvBlockParser(NAMES, KINDS, GROUPS, dtype=dtype, first_line=0)
        worker.feed(piece, final=True)
        dest.extend(worker)
        dest.line += worker.line
        assert worker.inexact_ints() == {} and not worker.column_flags().any()
    assert (dest.column_flags().tolist(), dest.inexact_ints()) == parse(backend, dtype)


def test_values_are_still_the_rounded_ones(backend):
    parser = backend.CsvBlockParser(["a"], ["scalar"], {}, dtype=np.float32)
    parser.feed(b"16777217\n", final=True)
    assert parser.finish()[0]["a"].tolist() == [16777216.0]
