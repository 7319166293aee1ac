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
from lstm_data.io.ours.convert import convert_streaming
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


@pytest.mark.slow
def test_several_inputs_bitwise_the_one_process_store(client, inputs, tmp_path):
    small = dict(chunk_bytes=16 * 1024)  # many chunks, so that parts share some
    convert_streaming(inputs, tmp_path / "one.zarr", **small)
    convert_distributed(inputs, tmp_path / "many.zarr", client=client, **small)
    assert _digest(tmp_path / "one.zarr") == _digest(tmp_path / "many.zarr")
    assert len(lstm_data.open(tmp_path / "many.zarr")) == 700 + 850 + 1000 + 0 + 1300
    assert not list(tmp_path.glob(".*"))  # no parts, no temporaries


@pytest.mark.slow
@pytest.mark.parametrize("dst", ["s.zarr", "s.h5"])
def test_shuffled_and_hdf5_outputs_equal_the_one_process_ones(client, inputs, tmp_path, dst):
    convert_streaming(inputs, tmp_path / f"one-{dst}", shuffle_seed=7, bucket_bytes=1 << 16)
    convert_distributed(inputs, tmp_path / f"many-{dst}", client=client, shuffle_seed=7, bucket_bytes=1 << 16)
    a, b = lstm_data.open(tmp_path / f"one-{dst}"), lstm_data.open(tmp_path / f"many-{dst}")
    for s in a.scalar_names:
        np.testing.assert_array_equal(a.scalar(s), b.scalar(s))
    for g in a.groups:
        for x, y in zip(a.ragged(g), b.ragged(g)):
            np.testing.assert_array_equal(x, y)


@pytest.mark.slow
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


@pytest.mark.slow
def test_cli_scheduler_local(inputs, tmp_path, capsys):
    assert main(["convert", *inputs[:3], str(tmp_path / "one.zarr"), "-q"]) == 0
    assert main(["convert", *inputs[:3], str(tmp_path / "many.zarr"), "--scheduler", "local:2", "-q"]) == 0
    assert _digest(tmp_path / "one.zarr") == _digest(tmp_path / "many.zarr")


@pytest.mark.slow
def test_top_level_convert_with_and_without_client(client, inputs, tmp_path):
    lstm_data.convert(inputs[2:], tmp_path / "a.zarr")
    lstm_data.convert(inputs[2:], tmp_path / "b.zarr", client=client)
    assert _digest(tmp_path / "a.zarr") == _digest(tmp_path / "b.zarr")


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "big.csv"
    write_csv(path, 6000, seed=21, token_mix=True)
    return path


@pytest.mark.slow
def test_byte_ranges_of_one_csv_bitwise_the_one_process_store(client, big_csv, tmp_path):
    from lstm_data.io.csv.ranges import csv_partitions

    ranges = csv_partitions(str(big_csv), 300_000)
    assert ranges is not None and len(ranges) > 4
    convert_streaming([str(big_csv)], tmp_path / "one.zarr", chunk_bytes=32 * 1024)
    convert_distributed([str(big_csv)], tmp_path / "many.zarr", client=client, split_bytes=300_000,
                        chunk_bytes=32 * 1024)
    assert _digest(tmp_path / "one.zarr") == _digest(tmp_path / "many.zarr")


@pytest.mark.slow
def test_a_bad_row_in_a_later_range_names_the_file_line_and_row(client, big_csv, tmp_path):
    bad = tmp_path / "bad.csv"
    lines = big_csv.read_bytes().splitlines(keepends=True)
    lines[5000] = lines[5000].replace(b",", b",1e+x,", 1)
    bad.write_bytes(b"".join(lines))
    with pytest.raises(ParseError) as want:
        lstm_data.open(bad)
    with pytest.raises(ParseError) as got:
        convert_distributed([str(bad)], tmp_path / "o.zarr", client=client, split_bytes=300_000)
    assert (got.value.file, got.value.line, got.value.row) == (str(bad), want.value.line, want.value.row)
    assert got.value.line == 5001


def test_a_quoted_newline_at_a_boundary_is_refused(tmp_path):
    from lstm_data.errors import FormatError
    from lstm_data.io.csv.ranges import csv_partitions

    path = tmp_path / "q.csv"
    with open(path, "w") as fh:
        fh.write("a,b.x\n")
        for i in range(20000):
            fh.write(f'{i},"{i}.5,\n{i}.25"\n')  # every record spans two lines
    assert csv_partitions(str(path), 1 << 30) is None  # one partition: nothing to check
    with pytest.raises(FormatError, match="newline inside a quoted cell") as err:
        csv_partitions(str(path), 50_000)  # half the newlines are inside quotes
    assert err.value.file == str(path)


@pytest.mark.slow
def test_a_late_plan_change_in_a_range_falls_back_to_whole_files(client, tmp_path):
    path = tmp_path / "late.csv"
    with open(path, "w") as fh:
        fh.write("a,b.x\n")
        for i in range(60_000):
            fh.write(f"{i},{i * 0.5}\n" if i < 59_990 else f'{i},"{i * 0.5},{i * 0.25}"\n')
    convert_streaming([str(path)], tmp_path / "one.zarr")
    convert_distributed([str(path)], tmp_path / "many.zarr", client=client, split_bytes=200_000)
    assert _digest(tmp_path / "one.zarr") == _digest(tmp_path / "many.zarr")
    assert "b" in lstm_data.open(tmp_path / "many.zarr").groups


@pytest.mark.slow
def test_a_worker_killed_during_the_convert_changes_no_byte(client, tmp_path):
    import os
    import threading
    import time

    paths = []
    for i in range(8):
        write_csv(tmp_path / f"in{i}.csv.gz", 3000, seed=40 + i)
        paths.append(str(tmp_path / f"in{i}.csv.gz"))
    convert_streaming(paths, tmp_path / "one.zarr", chunk_bytes=64 * 1024)
    done = {}

    def run():
        try:
            convert_distributed(paths, tmp_path / "many.zarr", client=client, chunk_bytes=64 * 1024)
            done["ok"] = True
        except BaseException as exc:  # noqa: BLE001 - reported below
            done["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.time() + 60
    while time.time() < deadline and not list(tmp_path.glob(".many.zarr.parts*/part-*.zarr")):
        time.sleep(0.01)  # the first part is being written: the workers are busy
    during = thread.is_alive()
    victim = sorted(client.scheduler_info()["workers"])[0]
    try:  # the worker process dies (so the call cannot answer); its nanny starts another
        client.run(os._exit, 1, workers=[victim])
    except OSError:  # distributed's CommClosedError
        pass
    thread.join(timeout=300)
    assert during  # the worker died while the convert ran
    assert done.get("ok"), done.get("error")
    assert _digest(tmp_path / "one.zarr") == _digest(tmp_path / "many.zarr")


def test_only_plain_csv_files_are_cut_into_byte_ranges(tmp_path):
    from lstm_data.scale.convert import plan_partitions

    csv, h5 = tmp_path / "a.csv", tmp_path / "a.h5"
    write_csv(csv, 400, seed=2)
    convert_streaming([str(csv)], str(h5))
    parts = plan_partitions([str(csv), str(h5)], split_bytes=4096)  # both files are larger
    assert [p.path for p in parts].count(str(h5)) == 1 and [p.start for p in parts if p.path == str(h5)] == [None]
    assert sum(p.path == str(csv) for p in parts) > 1
    uproot = pytest.importorskip("uproot")
    pytest.importorskip("awkward")
    root = tmp_path / "a.root"
    with uproot.recreate(root) as fh:
        fh["Events"] = {"x": np.arange(10.0)}
        fh["Runs"] = {"r": np.arange(2.0)}
    parts = plan_partitions([f"{root}:Events"], split_bytes=1)
    assert [(p.path, p.start) for p in parts] == [(f"{root}:Events", None)]
