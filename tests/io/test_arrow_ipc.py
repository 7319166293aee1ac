"""Arrow IPC files (Feather v2) written by pyarrow, read back bitwise; told by their magic bytes."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lstm_data
from lstm_data import FormatError, OptionError
from lstm_data.io.dispatch import detect_format
from lstm_data.io.parquet import from_arrow
from tests.helpers import assert_bitwise, assert_same_dataset

pa = pytest.importorskip("pyarrow")
ipc = pytest.importorskip("pyarrow.ipc")
feather = pytest.importorskip("pyarrow.feather")

OFFSETS = np.array([0, 2, 2, 5, 6], np.int32)
PX = np.array([0.1, -2.5, 3.25, 1e-30, 7.0, np.nan], np.float32)
PY = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], np.float32)
CALE = np.array([1.5, 0.1, np.inf, -3.0], np.float32)
TRUEE = np.array([0.1, 0.2, 1e300, -0.0])
NHIT = np.array([3, 4, 5, 2**40], np.int64)


def _table():
    """Two scalar dtypes, an integer, a group of two list columns and a string (skipped)."""
    return pa.table({
        "calE": pa.array(CALE), "trueE": pa.array(TRUEE), "nHit": pa.array(NHIT),
        "png_px": pa.ListArray.from_arrays(pa.array(OFFSETS), pa.array(PX)),
        "png_py": pa.ListArray.from_arrays(pa.array(OFFSETS), pa.array(PY)),
        "name": pa.array(np.array(["a", "b", "c", "d"])),
    })


def _write_ipc(path, table, batch_rows=3, compression=None):
    """An Arrow IPC file of several record batches, written by pyarrow.ipc."""
    options = ipc.IpcWriteOptions(compression=compression)
    with ipc.new_file(str(path), table.schema, options=options) as writer:
        for batch in table.to_batches(max_chunksize=batch_rows):
            writer.write_batch(batch)
    return path


def _check_values(ds):
    assert ds.scalar_names == ["calE", "trueE", "nHit"] and ds.groups == {"png": ["png_px", "png_py"]}
    assert_bitwise(np.asarray(ds.scalar("calE")), CALE, "calE")
    assert_bitwise(np.asarray(ds.scalar("trueE")), TRUEE, "trueE")
    assert_bitwise(np.asarray(ds.scalar("nHit")), NHIT, "nHit")
    values, offsets = ds.ragged("png", np.arange(len(ds)))
    assert_bitwise(np.diff(offsets), np.diff(OFFSETS).astype(np.int64), "lengths")
    assert_bitwise(np.ascontiguousarray(values[:, 0]), PX, "png_px")
    assert_bitwise(np.ascontiguousarray(values[:, 1]), PY, "png_py")
    assert ds.skipped == {"name": "string: not numbers"}


@pytest.mark.parametrize("compression", [None, "zstd", "lz4"])
def test_an_arrow_ipc_file_reads_back_bitwise(tmp_path, compression):
    path = _write_ipc(tmp_path / "events.arrow", _table(), compression=compression)
    assert detect_format(path) == "arrow"
    ds = lstm_data.open(path)
    _check_values(ds)
    assert_same_dataset(ds, from_arrow(_table()))  # as the table itself, in memory


def test_a_feather_file_reads_back_bitwise(tmp_path):
    path = tmp_path / "events.feather"
    feather.write_feather(_table(), str(path), chunksize=2)
    _check_values(lstm_data.open(path))


@pytest.mark.parametrize("name", ["events", "events.csv", "events.dat"])
def test_arrow_ipc_is_told_by_its_magic_bytes_whatever_its_name(tmp_path, name):
    path = _write_ipc(tmp_path / name, _table())
    assert path.read_bytes()[:6] == b"ARROW1"
    assert detect_format(path) == "arrow"
    _check_values(lstm_data.open(path))


def test_only_the_columns_asked_for_are_read(tmp_path):
    path = _write_ipc(tmp_path / "events.arrow", _table())
    ds = lstm_data.open(path, columns=["png_*"], threads=1)
    assert ds.scalar_names == [] and ds.groups == {"png": ["png_px", "png_py"]}
    ds = lstm_data.open(path, exclude=["png_py", "trueE"], dtype="float64")
    assert ds.scalar_names == ["calE", "nHit"] and ds.groups == {"png": ["png_px"]}
    assert_bitwise(np.asarray(ds.scalar("calE")), CALE.astype(np.float64), "calE")
    with pytest.raises(OptionError, match="'tree' does not apply to arrow data"):
        lstm_data.open(path, tree="Events")


def test_a_damaged_arrow_ipc_file_is_a_format_error_naming_it(tmp_path):
    whole = _write_ipc(tmp_path / "whole.arrow", _table()).read_bytes()
    cut = tmp_path / "cut.arrow"
    cut.write_bytes(whole[:len(whole) // 2])
    with pytest.raises(FormatError, match="Arrow IPC") as err:
        lstm_data.open(cut)
    assert str(cut) in str(err.value)
    named = tmp_path / "text.feather"
    named.write_bytes(b"not arrow at all\n")
    with pytest.raises(FormatError, match="Arrow IPC extension .* but no Arrow IPC signature"):
        lstm_data.open(named)


def test_reading_arrow_ipc_never_imports_pandas(tmp_path):
    path = _write_ipc(tmp_path / "events.arrow", _table(), compression="zstd")
    script = textwrap.dedent(f"""
        import sys
        import numpy as np
        import lstm_data
        ds = lstm_data.open({str(path)!r})
        values, offsets = ds.ragged("png", np.arange(len(ds)))
        print(ds.scalar("nHit").tolist(), np.diff(offsets).tolist())
        assert "pandas" not in sys.modules, "pandas imported"
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[3,", "4,", "5,", "1099511627776]", "[2,", "0,", "3,", "1]"]
