"""The bench's realistic token mix (``write_csv(..., token_mix=True)``) read back exactly.

Columns of ``%g``, ``%.6f``, ``%.9g`` and 17-digit ``repr`` numbers (the long ones take
the Eisel-Lemire path of the compiled parser) must come back bitwise equal to the
dataset ``write_csv`` returns, which is ``float(token)`` cast to the dtype.
"""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data.data.synthetic import TOKEN_FORMATS, write_csv
from lstm_data.io.csv.reader import read_csv
from tests.helpers import bits


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_token_mix_reads_back_bitwise(tmp_path, dtype):
    path = tmp_path / "mix.csv"
    want = write_csv(path, 400, seed=4, dtype=dtype, token_mix=True)
    got = read_csv(path, dtype=dtype)
    for s in want.scalar_names:
        np.testing.assert_array_equal(bits(got.scalar(s)), bits(want.scalar(s)), err_msg=s)
    for g in want.groups:
        (wv, wo), (gv, go) = want.ragged(g), got.ragged(g)
        np.testing.assert_array_equal(go, wo)
        np.testing.assert_array_equal(bits(gv), bits(wv), err_msg=g)


def test_token_mix_has_every_format(tmp_path):
    path = tmp_path / "mix.csv"
    write_csv(path, 200, seed=1, token_mix=True)
    _header, first = path.read_text().splitlines()[:2]
    tokens = [t for t in first.replace('"', "").split(",") if t]
    assert len(TOKEN_FORMATS) == 4
    assert any(len(t.lstrip("-").replace(".", "").lstrip("0")) >= 16 for t in tokens)  # repr
    assert any(t.endswith("000") and len(t.split(".")[-1]) == 6 for t in tokens)  # %.6f
    default = tmp_path / "plain.csv"
    write_csv(default, 200, seed=1)
    assert default.read_text() != path.read_text()
