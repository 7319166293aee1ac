"""What a CSV file's first MiB decides cheaply: arrays built only when needed, scalars kept exactly."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lstm_data import kernels
from lstm_data.io.csv.head import SAMPLE_SIZE, parse_sample, read_head, sample_plan
from lstm_data.io.csv.plan import declared_plan, parser_options
from lstm_data.io.csv.reader import read_csv

_REAL = kernels.CsvBlockParser


class _Counting:
    """A CSV block parser that counts the calls of ``finish`` (which builds the arrays)."""

    finishes = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        object.__setattr__(self, "_real", _REAL(*args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._real, name, value)

    def finish(self) -> Any:
        _Counting.finishes += 1
        return self._real.finish()


def _finishes_of_plan(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, Any, Any]:
    """``(finish calls, parse_sample's plan, sample_plan's plan)`` of ``path``'s first MiB."""
    head = read_head(str(path), None)
    assert not head.final
    options = parser_options(np.dtype(np.float32), head.sep, None, 1 << 20)
    general = declared_plan(head.names, None)
    _Counting.finishes = 0
    with monkeypatch.context() as patch:
        patch.setattr(kernels, "CsvBlockParser", _Counting)
        plan = parse_sample(general, head, options).plan
        finishes = _Counting.finishes
        again = sample_plan(general, head.sample, head.final, options)
    return finishes, plan, again


def _write(path: Path, ragged_row: int | None) -> int:
    """A file of 40 integer columns longer than the sample; row ``ragged_row`` lists
    two values in ``hit.x`` and ``hit.y`` and three in ``trk``. Returns the rows."""
    names = ["hit.x", "hit.y", "trk"] + [f"c{i}" for i in range(37)]
    lines = [",".join(names)]
    rows = 0
    size = 0
    while size <= SAMPLE_SIZE + 4096:
        cells = [str((rows * 7 + c) % 1000) for c in range(40)]
        if rows == ragged_row:
            cells[:3] = ['"1,2"', '"3,4"', '"5,6,7"']
        lines.append(",".join(cells))
        size += len(lines[-1]) + 1
        rows += 1
    path.write_text("\n".join(lines) + "\n")
    return rows


def test_a_sample_of_scalars_builds_no_arrays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "wide.csv"
    rows = _write(path, None)
    finishes, plan, again = _finishes_of_plan(path, monkeypatch)
    assert finishes == 0 and _Counting.finishes == 0
    assert plan.kinds == ["scalar"] * 40 and plan.groups == {} and not plan.general
    assert again.kinds == plan.kinds and again.groups == {}
    data = read_csv(str(path))
    column = data.scalar("c5")
    assert len(column) == rows and column.dtype == np.float32 and column[3] == (3 * 7 + 8) % 1000  # c5 is the file's 9th column


def test_a_ragged_column_in_the_sample_is_still_grouped_by_its_offsets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ragged.csv"
    rows = _write(path, 10)
    finishes, plan, again = _finishes_of_plan(path, monkeypatch)
    assert finishes == 1
    assert plan.kinds[:4] == ["ragged", "ragged", "ragged", "scalar"]
    assert plan.groups == {"hit": [0, 1], "trk": [2]} == again.groups
    data = read_csv(str(path))
    assert data.groups == {"hit": ["hit.x", "hit.y"], "trk": ["trk"]}
    values, offsets = data.ragged("hit")
    assert len(offsets) == rows + 1 and values[offsets[10]:offsets[11]].tolist() == [[1, 3], [2, 4]]
    values, offsets = data.ragged("trk")
    assert values[offsets[10]:offsets[11], 0].tolist() == [5, 6, 7]
    assert values[offsets[11]:offsets[12], 0].tolist() == [(11 * 7 + 2) % 1000]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_whole_small_file_keeps_its_scalars_with_and_without_gaps(tmp_path: Path, dtype: type) -> None:
    path = tmp_path / "small.csv"
    path.write_text("full,gaps,empty,hit.x\n1,2,,\"1,2\"\n3,,,5\n6,7,,\n")
    data = read_csv(str(path), dtype=dtype)
    assert data.scalar_names == ["full", "gaps", "empty"]
    for name, expected in {"full": [1, 3, 6], "gaps": [2, np.nan, 7], "empty": [np.nan] * 3}.items():
        column = data.scalar(name)
        assert column.dtype == dtype and column.flags.c_contiguous and column.flags.writeable
        np.testing.assert_array_equal(column, np.array(expected, dtype=dtype))
    values, offsets = data.ragged("hit")
    assert values[:, 0].tolist() == [1, 2, 5] and offsets.tolist() == [0, 2, 3, 3]
