"""Helpers shared by the test packages: bitwise comparisons and small ragged data.

Import them as ``from tests.helpers import ...``; fixtures live in ``tests/conftest.py``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

#: the shipped sample data and specs (the README's main command uses them)
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def bits(a: np.ndarray) -> np.ndarray:
    """A float array's bit patterns (uint32/uint64), so NaNs and signed zeros compare exactly."""
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


def assert_bitwise(a: np.ndarray, b: np.ndarray, what: str = "") -> None:
    """Same dtype, same shape, same bytes."""
    assert a.dtype == b.dtype, (what, a.dtype, b.dtype)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    assert a.tobytes() == b.tobytes(), what


def assert_same_dataset(got: Any, want: Any, *, dtypes: bool = True) -> None:
    """Two datasets hold the same names, groups, rows and bitwise-equal numbers.

    With ``dtypes=False`` the float columns may differ in dtype when their bytes agree
    after casting ``got`` to ``want``'s dtype (a float32 source written as float64).
    """
    assert got.scalar_names == want.scalar_names
    assert got.groups == want.groups
    assert len(got) == len(want)
    for name in want.scalar_names:
        x, y = got.scalar(name), want.scalar(name)
        assert_bitwise(x if dtypes else x.astype(y.dtype), y, name)
    for group in want.groups:
        (gv, go), (wv, wo) = got.ragged(group), want.ragged(group)
        assert_bitwise(go, wo, f"{group} offsets")
        assert_bitwise(gv if dtypes else gv.astype(wv.dtype), wv, group)


def assert_same_by_name(got: Any, want: Any) -> None:
    """Every variable of ``want`` has the same float32 numbers in ``got``; column order may differ."""
    assert sorted(got.scalar_names) == sorted(want.scalar_names)
    assert ({g: sorted(v) for g, v in got.groups.items()}
            == {g: sorted(v) for g, v in want.groups.items()})
    for s in want.scalar_names:
        assert_bitwise(got.scalar(s).astype(np.float32), want.scalar(s).astype(np.float32), s)
    for g, names in want.groups.items():
        (vg, og), (vw, ow) = got.ragged(g), want.ragged(g)
        np.testing.assert_array_equal(og, ow, err_msg=g)
        where = [got.groups[g].index(n) for n in names]
        assert_bitwise(vg[:, where].astype(np.float32), vw.astype(np.float32), g)


def assert_same_arrays(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]) -> None:
    """Two dicts of arrays: same keys in the same order, bitwise-equal arrays of the same dtype."""
    assert list(a) == list(b)
    for k in a:
        assert_bitwise(np.asarray(a[k]), np.asarray(b[k]), k)


def assert_same_batch(a: Sequence[Mapping[str, np.ndarray]], b: Sequence[Mapping[str, np.ndarray]]) -> None:
    """Two ``(inputs, targets, weights)`` batches are bitwise equal, part by part."""
    assert len(a) == len(b)
    for part_a, part_b in zip(a, b):
        assert_same_arrays(part_a, part_b)


def ragged(lengths: Sequence[int], n_vars: int = 3, dtype: Any = np.float32,
           seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random ``(values (total, n_vars), offsets)`` whose rows have ``lengths`` prongs."""
    rng = np.random.default_rng(seed)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = rng.normal(size=(int(offsets[-1]), n_vars)).astype(dtype)
    return values, offsets


def as_old_zarr_store(path: Any) -> Path:
    """Make a zarr store (dataset or batch store) written now look like one written before
    every chunk was stored: drop the root attribute that records it. Write it with
    ``checksum=False`` too for the old codec chain."""
    import zarr

    from lstm_data.io.layout import EVERY_CHUNK_ATTR

    root = zarr.open_group(str(path), mode="r+")
    del root.attrs[EVERY_CHUNK_ATTR]
    return Path(path)
