"""The NOvA bench: its pandas peers convert the file to the same numbers as read_nova, and it runs."""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data.io.nova import read_nova

from bench import formats_nova
from tests.helpers import assert_bitwise


def test_pandas_converters_give_what_read_nova_gives(tmp_path):
    path = tmp_path / "n.h5"
    formats_nova.write_nova_like(path, 400, seed=2)
    ds = read_nova(path)
    for convert in (formats_nova.pandas_groupby_convert, formats_nova.pandas_vectorised_convert):
        got = convert(path)
        assert sorted(got["scalars"]) == sorted(s for s in ds.scalar_names if "." in s)
        for name, column in got["scalars"].items():
            assert_bitwise(column, ds.scalar(name), name)
        assert list(got["groups"]) == list(ds.groups)
        for g, (values, offsets) in got["groups"].items():
            assert_bitwise(offsets, ds.offsets(g), g)
            assert_bitwise(values, ds.ragged(g)[0], g)


@pytest.mark.slow
def test_quick_run_reports_the_ratio_rows(monkeypatch):
    monkeypatch.setattr(formats_nova, "QUICK_SLICES", 300)
    report = formats_nova.run(quick=True)
    names = {r.name: r for r in report.ratios}
    assert names["NOvA HDF5 open vs pandas groupby converter"].value > 0
    assert 0 < names["NOvA open peak RSS / (1.5 x columnar + 64 MB)"].value < np.inf
