"""A group that gains derived variables: its new block, written row tile by row tile."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from lstm_data.batching.spec import derived_group
from lstm_data.batching.spec.derived import check_derived, derive
from lstm_data.data.dataset import InMemoryDataset
from lstm_data.data.ragged import RaggedGroup
from lstm_data.errors import PrecisionWarning, SchemaError


def jets(n: int, dtype: type, seed: int = 3) -> InMemoryDataset:
    rng = np.random.default_rng(seed)
    off = np.concatenate([[0], np.cumsum(rng.integers(0, 12, n))]).astype(np.int64)
    values = rng.normal(size=(off[-1], 3)).astype(dtype)
    values[::7, 2] = np.nan
    return InMemoryDataset({"jet_pt": rng.uniform(400, 900, n).astype(np.float32),
                            "jet_n": rng.integers(0, 2 ** 20, n), "jet_w": rng.uniform(1, 2, n) * 1e300},
                           {"part": RaggedGroup(["part_px", "part_py", "part_e"], values, off)})


DERIVED = {"part_pt": "np.hypot(part_px, part_py)", "part_rel": "np.log(part_pt / jet_pt)",
           "part_one": "ak.ones_like(part_e)", "part_wide": "part_px * jet_w"}


def by_column(ds: InMemoryDataset, extra: dict[str, np.ndarray]) -> np.ndarray:
    """The group's new block as numpy's assignment writes it, column by column."""
    values, _ = ds.ragged("part")
    out = np.empty((len(values), 3 + len(extra)), np.result_type(values, *extra.values()))
    out[:, :3] = values
    for j, col in enumerate(extra.values(), start=3):
        out[:, j] = col
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_columns_are_written_by_the_compiled_interleave_once_per_block(dtype, monkeypatch):
    ds = jets(3000, dtype)
    calls = []
    real = derived_group.interleave_columns
    monkeypatch.setattr(derived_group, "interleave_columns",
                        lambda cols, out: calls.append(len(out)) or real(cols, out))
    monkeypatch.setattr(derived_group, "EVAL_ELEMENTS", 4096)
    made = derive(ds, check_derived(DERIVED, None)[0], None).dataset
    values, off = ds.ragged("part")
    px, py, e = (values[:, k] for k in range(3))
    pt = np.hypot(px, py)
    with np.errstate(all="ignore"):
        extra = {"pt": pt, "rel": np.log(pt / np.repeat(ds.scalar("jet_pt"), np.diff(off))),
                 "one": np.ones_like(e), "wide": px * np.repeat(ds.scalar("jet_w"), np.diff(off))}
    got, got_off = made.ragged("part")
    assert got.dtype == np.float64 and np.array_equal(got_off, off)  # a float64 column widens the block
    np.testing.assert_array_equal(got, by_column(ds, extra))  # NaN where NaN, bitwise elsewhere
    assert len(calls) > 3 and sum(calls) == len(values)


def test_integer_columns_are_written_as_numpy_assigns_them(monkeypatch):
    ds = jets(500, np.float32)
    monkeypatch.setattr(derived_group, "EVAL_ELEMENTS", 512)
    made = derive(ds, check_derived({"part_n": "jet_n + 0 * part_px", "part_big": "part_px > 0"}, None)[0],
                  None).dataset
    values, off = ds.ragged("part")
    counts = np.diff(off)
    extra = {"n": np.repeat(ds.scalar("jet_n"), counts) + 0 * values[:, 0], "big": values[:, 0] > 0}
    np.testing.assert_array_equal(made.ragged("part")[0], by_column(ds, extra))


def ints(n: int = 4000, seed: int = 4) -> InMemoryDataset:
    """An integer prong group of 0s and 1s (10 prongs a row) and a float one."""
    rng = np.random.default_rng(seed)
    off = np.arange(n + 1, dtype=np.int64) * 10
    return InMemoryDataset({"jet_n": np.zeros(n, np.int64)},
                           {"part": RaggedGroup(["part_k"], rng.integers(0, 2, (off[-1], 1)), off),
                            "cell": RaggedGroup(["cell_x"], rng.normal(size=(off[-1], 1)).astype(np.float32),
                                                off)})


@pytest.fixture
def blocks_on_threads(monkeypatch):
    """Blocks of 1000 prongs (100 rows), on two threads; the threads that wrote them."""
    threads: set[str] = set()
    real = derived_group.interleave_columns

    def spy(cols, out):
        threads.add(threading.current_thread().name)
        return real(cols, out)

    monkeypatch.setattr(derived_group, "EVAL_ELEMENTS", 1000)
    monkeypatch.setattr(derived_group, "available_cores", lambda: 2)
    monkeypatch.setattr(derived_group, "interleave_columns", spy)
    return threads


def test_blocks_are_computed_on_every_core_as_one_pass_would(blocks_on_threads):
    ds = jets(4000, np.float32)
    made = derive(ds, check_derived(DERIVED, None)[0], None).dataset
    values, off = ds.ragged("part")
    px, py = values[:, 0], values[:, 1]
    pt = np.hypot(px, py)
    counts = np.diff(off)
    with np.errstate(all="ignore"):
        extra = {"pt": pt, "rel": np.log(pt / np.repeat(ds.scalar("jet_pt"), counts)),
                 "one": np.ones_like(px), "wide": px * np.repeat(ds.scalar("jet_w"), counts)}
    np.testing.assert_array_equal(made.ragged("part")[0], by_column(ds, extra))
    assert "MainThread" in blocks_on_threads and len(blocks_on_threads) > 1  # the first block, then the pool


def test_warnings_of_blocks_on_threads_name_the_first_row_as_one_pass_would(blocks_on_threads):
    ds = ints()
    n = ds.scalar("jet_n")
    n[[2345, 3999]] = 2 ** 53 + 1  # changes as float64: in the 24th and the last block
    made = {"cell_w": "cell_x * jet_n"}
    with pytest.warns(PrecisionWarning) as record:
        derive(ds, check_derived(made, None)[0], None)
    assert len(record) == 1 and "row 2345" in str(record[0].message)
    assert len(blocks_on_threads) > 1


def test_an_error_of_blocks_on_threads_is_the_first_blocks_that_fails(blocks_on_threads):
    ds = ints()
    k, _ = ds.ragged("part")
    k[[23_451, 39_990], 0] = 3  # 3 * 2**62 does not fit int64: rows 2345 and 3999
    with pytest.raises(SchemaError, match="row 2345"):
        derive(ds, check_derived({"part_big": "part_k * 4611686018427387904"}, None)[0], None)


def test_a_column_repeating_one_value_through_a_zero_stride_is_written_whole():
    values = np.arange(12, dtype=np.float32).reshape(6, 2)
    cols = [np.broadcast_to(np.float32(7), (6,)), np.arange(6, dtype=np.float32) / 2]
    out = np.full((6, 4), np.nan, np.float32)
    derived_group._write_rows(out, values, cols)
    np.testing.assert_array_equal(out, np.column_stack([values, np.full(6, 7, np.float32), cols[1]]))
