"""The NOvA-like generator: reproducible, shaped like design §1, written compressed."""
from __future__ import annotations

import numpy as np
import pytest

from lstm_data.data.synthetic import PNG2D_VARS, PNG3D_VARS, make_dataset, write_csv
from tests.helpers import assert_same_dataset

MAGIC = {".gz": b"\x1f\x8b", ".xz": b"\xfd7zXZ\x00", ".bz2": b"BZh", "": b"calE,"}


def test_same_seed_same_data_and_shape():
    a, b = make_dataset(500, seed=3), make_dataset(500, seed=3)
    assert a.groups == {"png": PNG3D_VARS, "png2d": PNG2D_VARS}
    for g in a.groups:
        np.testing.assert_array_equal(a.ragged(g)[0], b.ragged(g)[0])
    lengths = np.diff(make_dataset(20_000, seed=0).ragged("png")[1])
    assert np.median(lengths) <= 5 and lengths.max() >= 20


@pytest.mark.parametrize("suffix", [".gz", ".xz", ".bz2", ""])
def test_write_csv_compresses_by_extension(tmp_path, suffix):
    path = tmp_path / f"events.csv{suffix}"
    ds = write_csv(path, 50, seed=1)
    assert path.read_bytes().startswith(MAGIC[suffix])
    assert not list(tmp_path.glob("*.tmp")), "the temporary file must be renamed"
    assert len(ds) == 50


def test_png_mean_sets_the_prong_multiplicity():
    default = make_dataset(20_000, seed=2)
    assert_same_dataset(make_dataset(20_000, seed=2, png_mean=3.0), default)
    per_event = {m: np.diff(make_dataset(20_000, seed=2, png_mean=m).ragged("png")[1]).mean()
                 for m in (2.0, 3.0)}
    assert 3.0 < per_event[2.0] < 3.4 and 4.0 < per_event[3.0] < 4.4  # about png_mean + 1.2
