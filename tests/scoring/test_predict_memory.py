"""Scoring holds a bounded number of rows at a time, whatever the row count; the progress bar."""
from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pytest

import lstm_data
from lstm_data import PredictOptions
from lstm_data.scoring import writers
from lstm_data.scoring.chunks import WorkDir
from lstm_data.scoring.run import PIECE_ROWS

SPEC = lstm_data.BatchSpec(inputs={"x": lstm_data.Scalars(["x"])}, selection="flag > 0")


def _input(tmp_path: Path, n: int) -> str:
    """``n`` rows of which the selection keeps 5 at each end: one long run of unscored rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    flag = np.zeros(n, np.int32)
    flag[:5] = flag[-5:] = 1
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": np.arange(n, dtype=np.float32), "flag": flag}), src, row_group_size=50_000)
    return str(src)


def _model(inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    return inputs["x"][:, 0] * 2


def test_a_long_run_of_unscored_marked_rows_is_written_in_bounded_pieces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.parquet as pq

    n = 300_000
    src = _input(tmp_path, n)
    held: list[int] = []
    write, flush = writers.ColumnWriter.write, WorkDir.flush

    def counted_write(self: writers.ColumnWriter, chunk: Mapping[str, np.ndarray]) -> None:
        held.append(len(next(iter(chunk.values()))))
        write(self, chunk)

    def counted_flush(self: WorkDir, index: int, columns: Mapping[str, np.ndarray]) -> None:
        held.append(max(len(v) for v in columns.values()))
        flush(self, index, columns)

    monkeypatch.setattr(writers.ColumnWriter, "write", counted_write)
    monkeypatch.setattr(WorkDir, "flush", counted_flush)
    out = lstm_data.predict(_model, src, SPEC, tmp_path / "o", observers=["x"],
                            options=PredictOptions(batch_size=4, selected="mark", threads=1))
    assert max(held) <= PIECE_ROWS < n  # rows held at once: bounded, not the run of unscored rows
    table = pq.read_table(out[0])
    meta = pq.ParquetFile(out[0]).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [50_000] * 6
    assert np.array_equal(table.column("entry").to_numpy(), np.arange(n))
    selected = table.column("selected").to_numpy()
    assert np.array_equal(np.flatnonzero(selected), [0, 1, 2, 3, 4, *range(n - 5, n)])
    score = table.column("score_0").to_numpy()
    assert np.array_equal(score[selected], np.flatnonzero(selected).astype(np.float32) * 2)
    assert np.isnan(score[~selected]).all()
    assert table.column("x").to_numpy().tobytes() == np.arange(n, dtype=np.float32).tobytes()


def test_the_zarr_output_streams(tmp_path: Path) -> None:
    n = 400_000
    base = lstm_data.open(_input(tmp_path, n))
    tracemalloc.start()
    try:
        out = lstm_data.predict(_model, base, SPEC, tmp_path / "o", observers=["x"],
                                options=PredictOptions(batch_size=4, selected="mark", output_format="zarr",
                                                       threads=1))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the output holds 29 bytes a row (12 MB): kept whole, and concatenated, it took 60 MB
    assert peak < 40e6, peak
    got = lstm_data.open(str(out[0]))
    assert np.array_equal(got.scalar("entry"), np.arange(n))
    assert got.scalar("x").tobytes() == np.arange(n, dtype=np.float32).tobytes()


def test_the_progress_bar_counts_every_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tqdm_auto = pytest.importorskip("tqdm.auto")
    bars: list[Any] = []
    real = tqdm_auto.tqdm

    def recorded(*args: Any, **kwargs: Any) -> Any:
        bars.append(real(*args, **{**kwargs, "disable": False}))
        return bars[-1]

    monkeypatch.setattr(tqdm_auto, "tqdm", recorded)
    src = _input(tmp_path, 1000)
    lstm_data.predict(_model, src, SPEC, tmp_path / "o", options=PredictOptions(batch_size=3, progress=True))
    assert len(bars) == 1 and bars[0].total == bars[0].n == 4  # 10 rows in batches of 3
