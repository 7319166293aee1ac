"""Helpers shared by the test packages: bitwise comparisons, small ragged data, a strict type check.

Import them as ``from tests.helpers import ...``; fixtures live in ``tests/conftest.py``.
"""
from __future__ import annotations

import gzip
import lzma
import textwrap
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

#: the shipped sample data and specs (the README's main command uses them)
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def strict_mypy(tmp_path: Path, code: str) -> tuple[str, int]:
    """``mypy --strict`` on ``code`` as a user's script in ``tmp_path`` (lstm_data followed silently):
    its report (stdout and stderr) and exit status; the test is skipped without mypy."""
    import pytest

    api = pytest.importorskip("mypy.api")
    script = tmp_path / "user.py"
    script.write_text(textwrap.dedent(code))
    out, err, status = api.run(["--strict", "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache"),
                                str(script)])
    return out + err, status


def gzip_fast(data: bytes) -> bytes:
    """gzip at its fastest level: a test reads back what it compresses, the ratio does not matter."""
    return gzip.compress(data, compresslevel=1)


def xz_fast(data: bytes) -> bytes:
    """xz at its fastest preset (0; the default 6 takes ~15 times longer on a few MB)."""
    return lzma.compress(data, preset=0)


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


def assert_same_arrays(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray], what: str = "") -> None:
    """Two dicts of arrays: same keys in the same order, bitwise-equal arrays of the same dtype."""
    assert list(a) == list(b), (what, list(a), list(b))
    for k in a:
        assert_bitwise(np.asarray(a[k]), np.asarray(b[k]), f"{what} {k}".strip())


def assert_same_batch(a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]], what: str = "") -> None:
    """Two ``(inputs, targets, weights)`` batches are bitwise equal, part by part.

    The parts' values may be numpy arrays or CPU torch tensors (compared through ``.numpy()``);
    ``what`` names the batch in a failure's message.
    """
    assert len(a) == len(b), (what, len(a), len(b))
    for part_a, part_b in zip(a, b):
        assert_same_arrays(_as_numpy(part_a), _as_numpy(part_b), what)


def assert_same_columns(got: tuple[Mapping[str, np.ndarray], Mapping[str, tuple[np.ndarray, np.ndarray]]],
                        want: tuple[Mapping[str, np.ndarray], Mapping[str, tuple[np.ndarray, np.ndarray]]]) -> None:
    """Two ``(scalars, groups)`` as a CSV parser's ``finish()`` gives them, ``groups`` mapping each
    name to ``(values, offsets)``: same names in the same order, bitwise-equal arrays."""
    (scalars_got, groups_got), (scalars_want, groups_want) = got, want
    assert_same_arrays(scalars_got, scalars_want)
    assert list(groups_got) == list(groups_want)
    for name in groups_want:
        (values_got, offsets_got), (values_want, offsets_want) = groups_got[name], groups_want[name]
        assert_bitwise(values_got, values_want, name)
        assert_bitwise(offsets_got, offsets_want, f"{name} offsets")


def _as_numpy(part: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {k: v.numpy() if hasattr(v, "numpy") else np.asarray(v) for k, v in part.items()}


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
    every chunk was stored: drop the root attribute that records it, and the manifest
    (:func:`without_manifest`). Write it with ``checksum=False`` too for the old codec chain."""
    import zarr

    from lstm_data.io.ours.layout import EVERY_CHUNK_ATTR

    without_manifest(path)
    root = zarr.open_group(str(path), mode="r+")
    del root.attrs[EVERY_CHUNK_ATTR]
    return Path(path)


def without_manifest(path: Any) -> Path:
    """Make a zarr store written now look like one written before manifests: drop the manifest
    group and the root attribute that records it (and, in a batch store, the requirement of a
    manifest in its metadata, and in a dataset in its layout)."""
    import shutil

    import zarr

    from lstm_data.io.ours.layout import BATCH_STORE_ATTR, LAYOUT_ATTR
    from lstm_data.io.ours.manifest import MANIFEST_ATTR, MANIFEST_KEY

    shutil.rmtree(Path(path) / MANIFEST_KEY)
    root = zarr.open_group(str(path), mode="r+")
    del root.attrs[MANIFEST_ATTR]
    for attr in (BATCH_STORE_ATTR, LAYOUT_ATTR):
        meta = root.attrs.get(attr)
        if isinstance(meta, dict) and "requires" in meta:
            root.attrs[attr] = {k: v for k, v in meta.items() if k != "requires"}
    return Path(path)


def root_events(n: int = 300, seed: int = 0) -> dict[str, Any]:
    """NanoAOD-like columns for a ROOT test file: flat branches of mixed dtypes, a zipped record
    ``Muon`` (float32, float64, int32 fields; many entries with no muon) and the jagged ``Jet_e``,
    ``Jet_pt`` written without a shared counter (equal lengths)."""
    import awkward as ak

    rng = np.random.default_rng(seed)
    mu = rng.choice([0, 0, 1, 2, 3], n)
    jets = rng.integers(0, 5, n)
    return {
        "run": rng.integers(1, 9, n).astype(np.int32),
        "event": np.arange(n, dtype=np.uint64) * 7,
        "MET_pt": rng.exponential(30.0, n).astype(np.float32),
        "weight": rng.normal(1.0, 0.1, n),
        "passed": rng.random(n) < 0.5,
        "Muon": ak.unflatten(ak.zip({
            "pt": rng.exponential(20.0, mu.sum()).astype(np.float32),
            "eta": rng.normal(0.0, 1.5, mu.sum()),
            "charge": rng.choice(np.array([-1, 1], dtype=np.int32), mu.sum())}), mu),
        "Jet_e": ak.unflatten(rng.exponential(50.0, jets.sum()).astype(np.float32), jets),
        "Jet_pt": ak.unflatten(rng.exponential(40.0, jets.sum()).astype(np.float32), jets),
    }


def write_root(path: Any, trees: Mapping[str, Mapping[str, Any]], *, parts: int = 3) -> Path:
    """Write ``{tree: columns}`` with ``uproot.recreate`` as TTrees, each extended in ``parts``
    pieces (several baskets per branch)."""
    import awkward as ak
    import uproot

    with uproot.recreate(path) as fh:
        for name, columns in trees.items():
            types = {k: v.type.content if isinstance(v, ak.Array) else v.dtype for k, v in columns.items()}
            tree = fh.mktree(name, types)
            n = len(next(iter(columns.values())))
            cuts = np.linspace(0, n, parts + 1).astype(int)
            for a, b in zip(cuts[:-1], cuts[1:]):
                tree.extend({k: v[a:b] for k, v in columns.items()})
    return Path(path)
