"""The ``csv_shapes`` bench stage's dumps: what the reader reads is what the peers read."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bench import csv_shapes
from bench.data import BenchData
from bench.suite import STAGES
from lstm_data.io.csv.reader import read_csv


@pytest.mark.parametrize("shape", csv_shapes.SHAPES, ids=lambda s: s.name)
def test_a_shape_and_its_peer_form_hold_the_same_numbers(tmp_path, shape):
    shape = replace(shape, megabytes=0.1)
    ours, plain = csv_shapes.files(shape, BenchData(n_rows=10, root=tmp_path), quick=False)
    ds = read_csv(ours, dtype=np.float64)
    got = [ds.scalar(s) for s in ds.scalar_names]
    values, _ = ds.ragged("prong") if shape.lists else (np.zeros((0, 0)), None)
    # the peers' cells, in the dump's order: every number of ours, the empty cells left out
    text = plain.read_bytes()
    assert (b"\r\n" in text) == shape.crlf
    tokens = [t for line in text.splitlines()[1:] for t in line.split(b",") if t]
    n_scalars = sum(int(np.isfinite(c).sum()) for c in got)
    assert len(tokens) == n_scalars + values.size
    assert len(ds.scalar_names) == shape.scalars
    assert sorted(float(t) for t in tokens) == sorted(
        [float(x) for c in got for x in c[np.isfinite(c)]] + values.ravel().tolist())


def test_shapes_cover_the_dumps_and_are_a_suite_stage():
    spellings = {t for s in csv_shapes.SHAPES for t in s.tokens}
    assert set(csv_shapes.FORMATS) <= spellings
    assert any(s.crlf for s in csv_shapes.SHAPES) and any(s.empty for s in csv_shapes.SHAPES)
    assert any(s.prongs[0] >= 100 for s in csv_shapes.SHAPES)
    assert any(s.scalars + s.lists >= 200 for s in csv_shapes.SHAPES)
    assert any(s.scalars + s.lists <= 3 for s in csv_shapes.SHAPES)
    assert STAGES["csv_shapes"] == "csv_shapes"
