"""CsvBlockParser.extend: rows parsed by another parser, appended as if fed here (both backends)."""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data.kernels import BARE
from tests.helpers import assert_bitwise, assert_same_columns

NAMES = ["e", "p.a", "p.b", "note"]
KINDS = ["scalar", "ragged", "ragged", "skip"]
GROUPS = {"p": [1, 2]}
ROWS = [b'1.5,"1,2","3,4",x\n', b'2,"","",y\n', b',"5","6","a\nb"\n', b'-0.0,"7,8,9","1,2,3",\n']


def _parser(backend, **kw):
    return backend.CsvBlockParser(NAMES, KINDS, GROUPS, **kw)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_extend_equals_feeding_everything(backend, dtype):
    whole = _parser(backend, dtype=dtype)
    whole.feed(b"".join(ROWS), final=True)
    dest, block = _parser(backend, dtype=dtype), _parser(backend, dtype=dtype)
    for cut in ([ROWS[0]], [], ROWS[1:3], [ROWS[3]]):  # an empty block too
        block.feed(b"".join(cut))
        dest.extend(block)
        assert block.rows == 0
    assert dest.rows == whole.rows == 4
    assert_bitwise(dest.column_flags(), whole.column_flags())
    assert_same_columns(dest.finish(), whole.finish())


def test_an_incomplete_record_leaves_no_flags_behind(backend):
    dest, block = _parser(backend), _parser(backend)
    assert block.feed(b'1,2,3,x\n4,"5,6","7,8",y') == 8  # the second record is incomplete
    dest.extend(block)
    block.feed(b"9,1,2,z\n")
    dest.extend(block)
    assert dest.column_flags().tolist() == [BARE, BARE, BARE, 0]


def test_extend_checks_its_argument(backend):
    dest = _parser(backend)
    with pytest.raises(ValueError, match="cannot extend itself"):
        dest.extend(dest)
    for other in (_parser(backend, dtype=np.float64), _parser(backend, list_sep=";"),
                  backend.CsvBlockParser(NAMES, ["scalar"] * 4, {})):
        with pytest.raises(ValueError, match="same names, kinds, groups, dtype and separators"):
            dest.extend(other)
    with pytest.raises(TypeError, match="expects a CsvBlockParser, got int"):
        dest.extend(3)
