"""read_csv on real files: round trips, compression, inference, schema, errors."""
from __future__ import annotations

import bz2
import warnings
from pathlib import Path

import numpy as np
import pytest

from lstm_data.data.synthetic import write_csv
from lstm_data.errors import BrokenRowsWarning, FormatError, ParseError, SchemaError
from lstm_data.io.csv import head as csv_head
from lstm_data.io.csv.reader import read_csv
from lstm_data.io.schema import Schema
from tests.helpers import assert_same_dataset, gzip_fast, xz_fast

_COMPRESS = {".gz": gzip_fast, ".xz": xz_fast, ".bz2": bz2.compress}


def write_events(path: Path, n_rows: int, seed: int, dtype=np.float32):
    """``write_csv`` to ``path``, compressed by its extension (done here, explicitly)."""
    plain = path.with_name(path.name + ".plain.csv")
    want = write_csv(plain, n_rows, seed=seed, dtype=dtype)
    compress = _COMPRESS.get(path.suffix)
    data = plain.read_bytes()
    path.write_bytes(compress(data) if compress else data)
    plain.unlink()
    return want


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".csv.xz", ".csv.bz2"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_round_trip_compressed(tmp_path, suffix, dtype):
    path = tmp_path / f"events{suffix}"
    want = write_events(path, 700, seed=3, dtype=dtype)
    assert_same_dataset(read_csv(path, dtype=dtype, block_bytes=4096), want)


def test_compression_found_by_magic_not_extension(tmp_path):
    path = tmp_path / "events.gz"
    want = write_events(path, 50, seed=1)
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    renamed = tmp_path / "events.dat"
    path.rename(renamed)
    assert_same_dataset(read_csv(renamed), want)


@pytest.mark.parametrize("suffix", [".csv.gz", ".csv.xz"])
def test_truncated_stream_is_format_error(tmp_path, suffix):
    path = tmp_path / f"events{suffix}"
    write_events(path, 400, seed=2)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(FormatError) as info:
        read_csv(path, block_bytes=2048)
    assert info.value.file == str(path)


def test_multi_file_and_progress(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv.gz"
    da, db = write_events(a, 120, seed=4), write_events(b, 80, seed=5)
    calls = []
    ds = read_csv([a, b], progress=lambda done, total: calls.append((done, total)),
                  block_bytes=1024)
    assert len(ds) == 200
    np.testing.assert_array_equal(ds.scalar("calE"),
                                  np.concatenate([da.scalar("calE"), db.scalar("calE")]))
    values, offsets = ds.ragged("png", rows=np.arange(120, 200))
    np.testing.assert_array_equal(values, db.ragged("png")[0])
    total = a.stat().st_size + b.stat().st_size
    assert calls[-1] == (total, total)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_header_mismatch_across_files(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("x,y\n1,2\n")
    b.write_text("x,z\n1,2\n")
    with pytest.raises(SchemaError) as info:
        read_csv([a, b])
    assert info.value.file == str(b)


def test_bom_crlf_blank_lines_no_final_newline(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b'\xef\xbb\xbfe,"p.a",p.b\r\n1,"1,2","3,4"\r\n\r\n,"",""\r\n2.5,7,8')
    ds = read_csv(path, dtype=np.float64)
    assert ds.scalar_names == ["e"] and ds.groups == {"p": ["p.a", "p.b"]}
    e = ds.scalar("e")
    assert e[0] == 1 and np.isnan(e[1]) and e[2] == 2.5
    values, offsets = ds.ragged("p")
    assert offsets.tolist() == [0, 2, 2, 3]
    assert values.tolist() == [[1, 3], [2, 4], [7, 8]]


def test_inference_rule(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('s,one.a,one.b,multi,n.a,n.b\n'
                    '1,"",  "" ,"1,2","1","1"\n'
                    ',"5","6",3,"1,2",""\n')
    # one.b has a leading space before its quote: unquoted, so that line is invalid
    with pytest.raises(ParseError):
        read_csv(path)
    path.write_text('s,one.a,one.b,multi,n.a,n.b\n'
                    '1,"","","1,2","1","1"\n'
                    ',"5","6",3,"1,2",""\n')
    with pytest.warns(BrokenRowsWarning, match="prefix 'n'"):  # n.* differ in 1 row of 2
        ds = read_csv(path)
    assert ds.scalar_names == ["s"]
    # one.* are quoted, so ragged although no cell holds two numbers; n.* split by length
    assert ds.groups == {"one": ["one.a", "one.b"], "multi": ["multi"], "n": ["n.a"],
                         "n_2": ["n.b"]}
    assert ds.ragged("multi")[1].tolist() == [0, 2, 3]
    assert ds.ragged("n_2")[1].tolist() == [0, 1, 1]


def test_surprise_after_sample_reparses(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_head, "SAMPLE_SIZE", 64)
    rows = ["t,p.a,p.b"] + [f"{i},{i},{i}" for i in range(200)] + ['7,"1,2","3"', '8,"4",5']
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.warns(BrokenRowsWarning, match="only 1 of 202 rows, first at row 200"):
        ds = read_csv(path, block_bytes=256)
    # p.a and p.b became ragged only at the end, with different lengths: two groups
    assert ds.scalar_names == ["t"] and ds.groups == {"p": ["p.a"], "p_2": ["p.b"]}
    assert ds.ragged("p")[1][-3:].tolist() == [200, 202, 203]
    rows[-2] = '7,"1,2","3,4"'
    path.write_text("\n".join(rows) + "\n")
    ds = read_csv(path, block_bytes=256)
    assert ds.groups == {"p": ["p.a", "p.b"]}
    assert ds.ragged("p")[0][-3:].tolist() == [[1, 3], [2, 4], [4, 5]]


def test_declared_group_mismatch_names_file_row_variables(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('e,p.a,p.b\n1,"1,2","3,4"\n2,"1,2","3"\n')
    with pytest.raises(SchemaError) as info:
        read_csv(path, schema={"p": ["p.a", "p.b"]})
    err = info.value
    assert (err.file, err.line, err.row, err.variable) == (str(path), 3, 1, "p.b")
    assert "p.a" in str(err)
    # undeclared, the same file splits the prefix into two groups instead, with a warning
    with pytest.warns(BrokenRowsWarning, match="differ in prong count in only 1 of 2 rows"):
        assert read_csv(path).groups == {"p": ["p.a"], "p_2": ["p.b"]}


def _prefix_csv(path: Path, lengths_b) -> Path:
    rows = ["e,p.a,p.b"]
    for r, nb in enumerate(lengths_b):
        cell = lambda n: '"' + ",".join(str(r + k) for k in range(n)) + '"'  # noqa: E731
        rows.append(f"{r},{cell(2)},{cell(nb)}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_prefix_split_by_a_few_rows_warns_naming_the_first(tmp_path):
    lengths = [2] * 400
    lengths[123] = lengths[321] = 3  # two broken rows: 0.5% of the file
    path = _prefix_csv(tmp_path / "t.csv", lengths)
    with pytest.warns(BrokenRowsWarning) as record:
        ds = read_csv(path)
    assert ds.groups == {"p": ["p.a"], "p_2": ["p.b"]}
    message = str(record[0].message)
    assert str(path) in message and "only 2 of 400 rows, first at row 123" in message
    assert "'p.a' has 2 values, 'p.b' has 3" in message and "groups 'p' and 'p_2'" in message
    assert "Rows (0-based): 123, 321." in message
    assert record[0].filename == __file__  # points at the user's call, not into the library


def test_the_warning_points_at_the_users_line_through_open(tmp_path):
    import lstm_data

    lengths = [2] * 400
    lengths[7] = 3
    path = _prefix_csv(tmp_path / "t.csv", lengths)
    with pytest.warns(BrokenRowsWarning) as record:
        lstm_data.open(path)  # deeper in the library than read_csv
    assert record[0].filename == __file__


def test_a_prefix_of_two_multiplicities_splits_without_a_warning(tmp_path):
    path = _prefix_csv(tmp_path / "t.csv", [r % 5 for r in range(400)])  # per-hit, not per-prong
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_csv(path).groups == {"p": ["p.a"], "p_2": ["p.b"]}


def test_schema_toml_patterns_and_skipped_columns(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('run,e,p.a,p.b,other\nabc,1,"1,2","3,4",x\n"d,""e",2,"","",y\n')
    toml = tmp_path / "schema.toml"
    toml.write_text('dtype = "float64"\nscalars = ["e"]\n[groups]\npts = "p.*"\n')
    ds = read_csv(path, schema=str(toml))
    assert ds.scalar_names == ["e"] and ds.groups == {"pts": ["p.a", "p.b"]}
    assert ds.scalar("e").dtype == np.float64
    schema = Schema.from_toml(toml)
    assert Schema.from_dict(schema.to_dict()) == schema
    with pytest.raises(SchemaError, match="p.c"):
        read_csv(path, schema={"groups": {"p": ["p.a", "p.c"]}, "scalars": ["e"]})


@pytest.mark.parametrize("text, error, where", [
    ("a,b\n1,2\n3,x7\n", ParseError, dict(line=3, column=2, variable="b", token="x7")),
    ("a,b\n1,2\n3\n", ParseError, dict(line=3, row=1)),
    ("a,b\n1,2\n3,4,5\n", ParseError, dict(line=3, column=3)),
    ('a,b\n1,2\n3,"4\n', ParseError, dict(line=3, column=2)),
])
def test_errors_name_file_line_column_token(tmp_path, text, error, where):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(error) as info:
        read_csv(path)
    assert info.value.file == str(path)
    for key, value in where.items():
        assert getattr(info.value, key) == value


@pytest.mark.parametrize("text, message", [
    (b"a,b\r1,2\r3,4\r", r"bare carriage return \(old Mac style\).*tr '\\r' '\\n'"),
    (b'a,"b\n', r"header line is not valid CSV \(unexpected end of data\)"),
])
def test_an_unreadable_header_is_a_located_format_error(tmp_path, text, message):
    path = tmp_path / "h.csv"
    path.write_bytes(text)
    with pytest.raises(FormatError, match=message) as info:
        read_csv(path)
    assert info.value.file == str(path) and info.value.line == 1


def test_empty_and_header_only(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    with pytest.raises(FormatError):
        read_csv(empty)
    header = tmp_path / "header.csv"
    header.write_text("a,b")
    ds = read_csv(header)
    assert len(ds) == 0 and ds.scalar_names == ["a", "b"]


def test_large_blocks_compressed_equal_plain(tmp_path):
    plain = tmp_path / "e.csv"
    want = write_csv(plain, 1000, seed=9)  # 1 MB: 16 blocks of 64 KiB
    xz = tmp_path / "e.csv.xz"
    xz.write_bytes(xz_fast(plain.read_bytes()))
    gz = tmp_path / "e.csv.gz"
    gz.write_bytes(gzip_fast(plain.read_bytes()) + gzip_fast(b""))  # two members
    for path in (plain, xz, gz):
        assert_same_dataset(read_csv(path, block_bytes=1 << 16), want)
