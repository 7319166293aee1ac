"""Quoting is not a type: what csv, pandas and lstm_ee write reads back as written.

Every file here is checked against an oracle that reads it with Python's own
``csv`` module and ``float(token)`` (``numpy.float32(float(token))`` for float32):
the kinds, the groups and every number bitwise. The inference rule itself is
documented in :mod:`lstm_data.io.csv.plan`.
"""
from __future__ import annotations

import csv
import random
import struct
from decimal import Decimal, localcontext
from pathlib import Path

import numpy as np
import pytest

from lstm_data import PrecisionWarning
from lstm_data.io.csv import head as csv_head
from lstm_data.io.csv.reader import read_csv
from tests.helpers import assert_bitwise, assert_same_dataset

QUOTINGS = {"all": csv.QUOTE_ALL, "nonnumeric": csv.QUOTE_NONNUMERIC,
            "minimal": csv.QUOTE_MINIMAL}
PRONGS = {"png": ["png.a", "png.b"], "png2d": ["png2d.c"]}


# -- data, writers and the oracle ---------------------------------------------------------
def _number(rng: random.Random) -> float:
    """A float that is hard to parse: random bits, float32 values, subnormals, integers."""
    kind = rng.randrange(4)
    if kind == 0:
        while True:
            x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            if np.isfinite(x):
                return x
    if kind == 1:
        return float(np.float32(rng.uniform(-100, 100)))
    if kind == 2:
        return rng.choice([0.0, -0.0, 5e-324, 2.2250738585072011e-308, 1e22, 3.4028235e38])
    return float(rng.randint(-10**6, 10**6))


def _events(n_rows: int, seed: int) -> list[dict]:
    """Rows of a float scalar ``e`` (missing: None), an int ``n`` and prong lists."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n_rows):
        k, m = rng.randrange(4), rng.randrange(3)
        rows.append({"e": None if rng.random() < 0.1 else _number(rng), "n": rng.randrange(100),
                     "png.a": [_number(rng) for _ in range(k)],
                     "png.b": [_number(rng) for _ in range(k)],
                     "png2d.c": [_number(rng) for _ in range(m)]})
    return rows


def _list_text(values: list[float]) -> str:
    return ",".join(repr(v) for v in values)


def write_events(path: Path, rows: list[dict], quoting: str, writer: str, prongs: bool) -> Path:
    """Write ``rows`` the way ``writer`` ("csv" or "pandas") does with ``quoting``.

    Scalars are numbers (missing: None / NaN), prong lists are text, as users hold them.
    """
    names = ["e", "n"] + ([c for cols in PRONGS.values() for c in cols] if prongs else [])
    table = [{c: _list_text(r[c]) if isinstance(r[c], list) else r[c] for c in names}
             for r in rows]
    if writer == "pandas":
        pd = pytest.importorskip("pandas")
        frame = pd.DataFrame(table, columns=names)
        frame["e"] = frame["e"].astype(float)
        frame.to_csv(path, index=False, quoting=QUOTINGS[quoting])
    else:
        with open(path, "w", newline="") as fh:
            out = csv.writer(fh, quoting=QUOTINGS[quoting])
            out.writerow(names)
            out.writerows([t[c] for c in names] for t in table)
    return path


def oracle(paths, scalars: list[str], groups: dict[str, list[str]], dtype=np.float32):
    """``(scalars, groups)`` of ``paths`` as csv.reader and float(token) read them."""
    cells: dict[str, list[str]] = {}
    for path in [paths] if isinstance(paths, Path) else paths:
        with open(path, newline="") as fh:
            records = list(csv.reader(fh))
        for j, name in enumerate(records[0]):
            cells.setdefault(name, []).extend(r[j] for r in records[1:] if r)

    def cast(numbers: list[float]) -> np.ndarray:
        with np.errstate(over="ignore"):
            return np.array(numbers, dtype=np.float64).astype(dtype)

    want_scalars = {s: cast([float(c) if c.strip() else np.nan for c in cells[s]])
                    for s in scalars}
    want_groups = {}
    for g, names in groups.items():
        lists = [[[float(t) for t in c.split(",")] if c.strip() else [] for c in cells[name]]
                 for name in names]
        lengths = [len(x) for x in lists[0]]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        values = np.stack([cast([v for x in column for v in x]) for column in lists], axis=1)
        want_groups[g] = (values.reshape(len(values), len(names)), offsets)
    return want_scalars, want_groups


def assert_reads_as(ds, want, scalars: list[str], groups: dict[str, list[str]]) -> None:
    """``ds`` has exactly these scalars and groups, bitwise equal to the oracle's ``want``."""
    assert ds.scalar_names == scalars
    assert ds.groups == groups
    want_scalars, want_groups = want
    for s in scalars:
        assert_bitwise(ds.scalar(s), want_scalars[s], s)
    for g in groups:
        values, offsets = ds.ragged(g)
        assert_bitwise(offsets, want_groups[g][1], f"{g} offsets")
        assert_bitwise(values, want_groups[g][0], g)


# -- what writers write ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("prongs", [False, True], ids=["scalars", "prongs"])
@pytest.mark.parametrize("quoting", list(QUOTINGS))
@pytest.mark.parametrize("writer", ["csv", "pandas"])
def test_writer_output_reads_as_written(tmp_path, writer, quoting, prongs, dtype):
    path = write_events(tmp_path / "t.csv", _events(300, seed=1), quoting, writer, prongs)
    groups = PRONGS if prongs else {}
    ds = read_csv(path, dtype=dtype, block_bytes=700)
    assert_reads_as(ds, oracle(path, ["e", "n"], groups, dtype), ["e", "n"], groups)


@pytest.mark.parametrize("quoting", list(QUOTINGS))
@pytest.mark.parametrize("writer", ["csv", "pandas"])
def test_one_column_with_missing_values_is_scalar(tmp_path, writer, quoting):
    # every writer quotes a lone empty field (""), or the row would be a blank line
    rows = [{"e": v} for v in (1.25, None, 3.0, None, -0.5)]
    path = tmp_path / "t.csv"
    if writer == "pandas":
        pd = pytest.importorskip("pandas")
        pd.DataFrame(rows, dtype=float).to_csv(path, index=False, quoting=QUOTINGS[quoting])
    else:
        with open(path, "w", newline="") as fh:
            csv.writer(fh, quoting=QUOTINGS[quoting]).writerows([["e"]] + [[r["e"]] for r in rows])
    assert b'""' in path.read_bytes()
    assert_reads_as(read_csv(path), oracle(path, ["e"], {}), ["e"], {})


def _double_rounded(x: float) -> str:
    """A decimal just below the midpoint of two float32s that rounds to it as a double.

    ``numpy.float32(float(token))`` then rounds the tie up; a single correct rounding
    would go down. Design §4 asks for the double rounding (lstm_ee's).
    """
    a = np.float32(x)
    mid = (float(a) + float(np.nextafter(a, np.float32(np.inf)))) / 2
    with localcontext() as ctx:
        ctx.prec = 80
        token = str(Decimal(mid) - Decimal(mid) * Decimal("1e-30"))
    assert float(token) == mid and np.float32(float(token)) != a
    return token


TOKENS = ["1.25", "-0", "+7", ".5", "5.", "1E5", "nan", "-INF", "Infinity", " 2.5 ",
          "\t-3e-2 ", "1e-400", "1e400", "4.9e-324", "2.2250738585072011e-308",
          "9007199254740993", "123456789e22", "0.1e-22", "0.30000000000000004",
          "1.7976931348623157e308", "3.4028235677973366e38", "1.401298464324817e-45",
          _double_rounded(1.1), _double_rounded(3.3e-20), _double_rounded(7.7e30)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("quote_numbers", [True, False], ids=["quote-all", "bare-numbers"])
def test_quoted_and_bare_tokens_are_float_of_the_token(tmp_path, quote_numbers, dtype):
    rng = random.Random(5)
    lines = ["e,png.x"]
    for r in range(400):
        scalar = TOKENS[r % len(TOKENS)]
        prongs = ",".join(rng.choice(TOKENS) for _ in range(r % 4))
        lines.append((f'"{scalar}"' if quote_numbers else scalar) + f',"{prongs}"')
    path = tmp_path / "t.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(PrecisionWarning, match="holds integers that float"):  # 9007199254740993 > 2**53
        ds = read_csv(path, dtype=dtype, block_bytes=512)
    groups = {"png": ["png.x"]}
    assert_reads_as(ds, oracle(path, ["e"], groups, dtype), ["e"], groups)


# -- one decision for the whole input, wherever blocks and files end ---------------------
def _quote_all(path: Path, rows: list[list]) -> Path:
    with open(path, "w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(rows)
    return path


def _single_prongs(n_rows: int, start: int = 0) -> list[list]:
    """QUOTE_ALL rows whose prong cells hold at most one number each."""
    return [[r + 0.5, str(r) if r % 3 else "", str(-r) if r % 3 else ""]
            for r in range(start, start + n_rows)]


def test_prongs_single_in_the_sample_and_lists_later(tmp_path, monkeypatch):
    header = [["e", "png.a", "png.b"]]
    rows = _single_prongs(300) + [[1.0, "1,2", "3,4"]] + _single_prongs(20, 300)
    path = _quote_all(tmp_path / "t.csv", header + rows)
    groups = {"png": ["png.a", "png.b"]}
    want = oracle(path, ["e"], groups)
    whole = read_csv(path)  # the whole file is the sample
    assert_reads_as(whole, want, ["e"], groups)
    assert np.diff(whole.ragged("png")[1])[:6].tolist() == [0, 1, 1, 0, 1, 1]
    monkeypatch.setattr(csv_head, "SAMPLE_SIZE", 256)  # the sample sees no list
    for block_size in (64, 1000, 1 << 16):
        assert_same_dataset(read_csv(path, block_bytes=block_size), whole)


def test_multi_file_decides_once_for_all_files(tmp_path):
    header = [["e", "png.a", "png.b"]]
    singles = _quote_all(tmp_path / "singles.csv", header + _single_prongs(50))
    lists = _quote_all(tmp_path / "lists.csv", header + [[2.5, "1,2,3", "4,5,6"], [3.5, "", ""]])
    groups = {"png": ["png.a", "png.b"]}
    for paths in ([singles, lists], [lists, singles]):
        assert_reads_as(read_csv(paths, block_bytes=128), oracle(paths, ["e"], groups), ["e"],
                        groups)
    # alone, the file without a list holds three scalars: quoting does not make lists
    assert read_csv(singles).scalar_names == ["e", "png.a", "png.b"]


def test_a_quoted_prefix_sibling_of_lists_stays_ragged(tmp_path):
    # png.n holds single numbers or "" next to png.a's lists: a prong variable of its own
    # multiplicity (group png_2), not a scalar; calE, with the same cells, is a scalar
    rows = [["calE", "png.a", "png.n"]] + [[str(r) if r % 4 else "", ",".join(["1"] * (r % 3)),
                                            str(r) if r % 4 else ""] for r in range(40)]
    path = _quote_all(tmp_path / "t.csv", rows)
    groups = {"png": ["png.a"], "png_2": ["png.n"]}
    assert_reads_as(read_csv(path), oracle(path, ["calE"], groups), ["calE"], groups)


# -- files that quote text only (lstm_ee, QUOTE_NONNUMERIC) --------------------------------
def test_lstm_ee_style_one_prong_groups_stay_ragged(tmp_path):
    # bare scalars, every prong cell quoted: "" is an empty list, "0.5" a one-prong list
    path = tmp_path / "t.csv"
    path.write_text('e,png.a,png.b\n1.5,"0.5","7"\n2.5,"",""\n,"0.25","8"\n')
    groups = {"png": ["png.a", "png.b"]}
    assert_reads_as(read_csv(path), oracle(path, ["e"], groups), ["e"], groups)
    # declared, the same ambiguous columns read as scalars
    ds = read_csv(path, schema={"scalars": ["e", "png.a", "png.b"], "groups": {}})
    assert ds.scalar_names == ["e", "png.a", "png.b"]


def test_a_missing_value_written_as_quotes_among_bare_numbers_is_nan(tmp_path, monkeypatch):
    path = tmp_path / "t.csv"
    lines = ["e,x,png.a"] + [f'{r},"{r}.5","{r},1"' for r in range(200)] + ['"",2.5,""', '7,,"1"']
    path.write_text("\n".join(lines) + "\n")
    groups = {"png": ["png.a"]}
    want = oracle(path, ["e", "x"], groups)
    assert_reads_as(read_csv(path), want, ["e", "x"], groups)
    # x looks like a column of one-prong lists until a bare number turns up after the sample
    monkeypatch.setattr(csv_head, "SAMPLE_SIZE", 128)
    assert_reads_as(read_csv(path, block_bytes=256), want, ["e", "x"], groups)


def test_files_without_quotes_are_decided_by_lists_alone(tmp_path):
    # unchanged: with another list separator, a bare column of single numbers is a scalar
    path = tmp_path / "t.csv"
    path.write_text("e,png.a,png.b\n1,1|2,3\n2,,4\n3,5,\n")
    ds = read_csv(path, list_sep="|", dtype=np.float64)
    assert ds.scalar_names == ["e", "png.b"] and ds.groups == {"png": ["png.a"]}
    assert ds.ragged("png")[1].tolist() == [0, 2, 2, 3]
    assert np.isnan(ds.scalar("png.b")[2])
