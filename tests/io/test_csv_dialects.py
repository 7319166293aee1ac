"""CSV dialects from the wild: ``;``/tab/``|`` separators (detected), ``,`` lists, pandas' ``[..]`` lists."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

import lstm_data
from lstm_data.cli import main
from lstm_data.errors import FormatError
from lstm_data.io.csv.reader import read_csv

ROWS = [(1.5, [0.2, 0.334], [1.0, 2.0]), (2.5, [], []), (-3.0, [7.0], [8.0])]


def _table(sep: str, cell) -> str:
    lines = [sep.join(["calE", "png.x", "png.y"])]
    for e, xs, ys in ROWS:
        lines.append(sep.join([repr(e), cell(xs), cell(ys)]))
    return "\n".join(lines) + "\n"


def _check(ds) -> None:
    assert ds.scalar_names == ["calE"] and ds.groups == {"png": ["png.x", "png.y"]}
    np.testing.assert_array_equal(ds.scalar("calE"), np.float32([1.5, 2.5, -3.0]))
    values, offsets = ds.ragged("png")
    assert offsets.tolist() == [0, 2, 2, 3]
    np.testing.assert_array_equal(values, np.float32([[0.2, 1.0], [0.334, 2.0], [7.0, 8.0]]))


def _quoted(xs):
    return '"' + ",".join(repr(x) for x in xs) + '"'


def _pandas(xs):  # how pandas writes a list in a cell: str(list)
    return '"' + str(xs) + '"'


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"], ids=["comma", "semicolon", "tab", "pipe"])
@pytest.mark.parametrize("cell", [_quoted, _pandas], ids=["lstm_ee", "pandas"])
def test_separator_is_detected(tmp_path, sep, cell):
    path = tmp_path / "ev.csv"
    path.write_text(_table(sep, cell))
    _check(read_csv(path))
    _check(lstm_data.open(path))
    _check(read_csv(path, sep=sep))


def test_semicolon_file_bare_comma_lists_need_list_sep(tmp_path):
    """Bare ``0.2,0.334`` in a ``;`` file may be decimal commas: read as lists only when told."""
    path = tmp_path / "ev.csv"
    path.write_text(_table(";", lambda xs: ",".join(repr(x) for x in xs)))
    _check(read_csv(path, sep=";", list_sep=","))
    _check(read_csv(path, list_sep=","))
    with pytest.raises(FormatError, match=r"column 'png.x' .*decimal commas.*list_sep=','"):
        read_csv(path)


@pytest.mark.parametrize("stream", [False, True], ids=["read_csv", "convert"])
def test_decimal_commas_are_not_read_as_lists(tmp_path, stream):
    path = tmp_path / "de.csv"
    path.write_text("calE;nHit\n0,25;12\n1,5;7\n")
    with pytest.raises(FormatError, match=r"column 'calE' .*decimal commas"):
        if stream:
            from lstm_data.io.ours.convert import convert_streaming
            convert_streaming([str(path)], tmp_path / "o.zarr")
        else:
            read_csv(path)
    assert not (tmp_path / "o.zarr").exists()


def test_compressed_file_is_sniffed_too(tmp_path):
    path = tmp_path / "ev.csv.gz"
    path.write_bytes(gzip.compress(_table("\t", _pandas).encode()))
    _check(read_csv(path))


def test_pandas_to_csv_roundtrip(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"calE": [e for e, _, _ in ROWS], "png.x": [x for _, x, _ in ROWS],
                          "png.y": [y for _, _, y in ROWS]})
    for sep in (",", ";", "\t"):
        frame.to_csv(tmp_path / "p.csv", sep=sep, index=False)
        _check(read_csv(tmp_path / "p.csv"))


def test_wrong_sep_names_the_one_it_looks_like(tmp_path):
    path = tmp_path / "ev.csv"
    path.write_text(_table(";", _quoted))
    with pytest.raises(FormatError, match=r"looks ';'-separated; pass sep=';'"):
        read_csv(path, sep=",")


def test_one_column_file_reads(tmp_path):
    path = tmp_path / "one.csv"
    path.write_text("calE\n1.5\n2\n")
    assert read_csv(path).scalar("calE").tolist() == [1.5, 2.0]


def test_header_separator_inside_quotes_is_ignored(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('"a;b",c\n1,2\n')
    assert read_csv(path).scalar_names == ["a;b", "c"]


def test_cli_takes_sep_and_list_sep(tmp_path, capsys):
    path = tmp_path / "ev.txt"
    path.write_text(_table("|", lambda xs: '"' + ";".join(repr(x) for x in xs) + '"'))
    assert main(["convert", str(path), str(tmp_path / "a.zarr"), "--sep", "|", "--list-sep", ";",
                 "-q"]) == 0
    _check(lstm_data.open(tmp_path / "a.zarr"))
    capsys.readouterr()
    assert main(["inspect", str(path), "--list-sep", "semicolon", "--json", "--no-stats"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"] == 3 and "png" in doc["groups"]
    with pytest.raises(SystemExit):
        main(["inspect", str(path), "--sep", "ab"])


def test_cli_tab_spelled_out(tmp_path, capsys):
    path = tmp_path / "ev.tsv"
    path.write_text(_table("\t", _pandas))
    assert main(["inspect", str(path), "--sep", "\\t", "--json", "--no-stats"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 3
