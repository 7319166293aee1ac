"""``convert --scheduler``: partitions parsed on Dask workers, linked into the one-process output, bitwise."""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

import lstm_data
from lstm_data.cli import main
from lstm_data.data.synthetic import make_dataset, write_csv
from lstm_data.errors import ParseError
from lstm_data.io.convert import convert_streaming
from lstm_data.scale.convert import convert_distributed


def _digest(store: Path) -> dict[str, str]:
    return {str(f.relative_to(store)): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(store.rglob("*")) if f.is_file()}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    paths = []
    for i in range(5):  # CSV (plain, gz), HDF5 and zarr inputs, one of them with no rows
        ds = make_dataset(0 if i == 3 else 700 + 150 * i, seed=10 + i)
        if i in (0, 1):
            write_csv(d / f"p{i}.csv" if i == 0 else d / f"p{i}.csv.gz", 700 + 150 * i, seed=10 + i)
            paths.append(str(d / (f"p{i}.csv" if i == 0 else f"p{i}.csv.gz")))
        elif i == 2:
            ds.to_hdf5(d / "p2.h5")
            paths.append(str(d / "p2.h5"))
        else:
            ds.to_zarr(d / f"p{i}.zarr")
            paths.append(str(d / f"p{i}.zarr"))
    return paths


def test_several_inputs_bitwise_the_one_process_store(client, inputs, tmp_path):
    small = dict(chunk_bytes=16 * 1024)  # many chunks, so that parts share some
    convert_streaming(inputs, tmp_path / "one.zarr", **small)
    convert_distributed(inputs, tmp_path / "many.zarr", client=client, **small)
    assert _digest(tmp_path / "one.zarr") == _digest(tmp_path / "many.zarr")
    assert len(lstm_data.open(tmp_path / "many.zarr")) == 700 + 850 + 1000 + 0 + 1300
    assert not list(tmp_path.glob(".*"))  # no parts, no temporaries


@pytest.mark.parametrize("dst", ["s.zarr", "s.h5"])
def test_shuffled_and_hdf5_outputs_equal_the_one_process_ones(client, inputs, tmp_path, dst):
    convert_streaming(inputs, tmp_path / f"one-{dst}", shuffle=7, bucket_bytes=1 << 16)
    convert_distributed(inputs, tmp_path / f"many-{dst}", client=client, shuffle=7, bucket_bytes=1 << 16)
    a, b = lstm_data.open(tmp_path / f"one-{dst}"), lstm_data.open(tmp_path / f"many-{dst}")
    for s in a.scalar_names:
        np.testing.assert_array_equal(a.scalar(s), b.scalar(s))
    for g in a.groups:
        for x, y in zip(a.ragged(g), b.ragged(g)):
            np.testing.assert_array_equal(x, y)


def test_a_bad_row_fails_the_convert_naming_file_line_and_column(client, inputs, tmp_path):
    bad = tmp_path / "bad.csv"
    lines = Path(inputs[0]).read_text().splitlines(keepends=True)
    lines[40] = lines[40].replace(",", ",1.2.3x,", 1)
    bad.write_text("".join(lines))
    with pytest.raises(ParseError) as err:
        convert_distributed(inputs[1:3] + [str(bad)] + inputs[3:], tmp_path / "out.zarr", client=client)
    assert err.value.file == str(bad) and err.value.line == 41
    assert not (tmp_path / "out.zarr").exists()
    assert not list(tmp_path.glob(".out.zarr*"))


def test_cli_scheduler_local(inputs, tmp_path, capsys):
    assert main(["convert", *inputs[:3], str(tmp_path / "one.zarr"), "-q"]) == 0
    assert main(["convert", *inputs[:3], str(tmp_path / "many.zarr"), "--scheduler", "local:2", "-q"]) == 0
    assert _digest(tmp_path / "one.zarr") == _digest(tmp_path / "many.zarr")


def test_top_level_convert_with_and_without_client(client, inputs, tmp_path):
    lstm_data.convert(inputs[2:], tmp_path / "a.zarr")
    lstm_data.convert(inputs[2:], tmp_path / "b.zarr", client=client)
    assert _digest(tmp_path / "a.zarr") == _digest(tmp_path / "b.zarr")
