"""What a report and a spec's check say: counts spelt right at one (``1 batch``), every variable a
spec names wrongly at once (``sort_by`` named as such), and a dotted column read as a scalar explained
with the schema that reads it as a prong variable."""
from __future__ import annotations

import pytest

import lstm_data
from lstm_data import BatchSpec, Order, Ragged, Scalars
from lstm_data.cli import main
from lstm_data.errors import SchemaError

SPEC = """version = 2
[inputs.s]
type = "scalars"
vars = ["calE"]
[inputs.p]
type = "ragged"
max_len = 2
vars = ["png.calE"]
"""


@pytest.fixture()
def one(tmp_path):
    """Two rows, one group of one variable, and a scalar named like the group (``png.n``)."""
    (tmp_path / "one.csv").write_text('calE,png.calE,png.n\n1,"1,2",2\n4,"5",1\n')
    (tmp_path / "one.toml").write_text(SPEC)
    return tmp_path


def test_counts_of_one_are_singular_in_every_report(one, capsys):
    out = one / "one.zarr"
    assert main(["precompute", "--data", str(one / "one.csv"), "--spec", str(one / "one.toml"), "--batch-size", "4",
                 "--out", str(out)]) == 0
    assert f"1 batch, 2 rows -> {out}" in capsys.readouterr().out
    assert main(["inspect", str(one / "one.csv"), "--spec", str(one / "one.toml")]) == 0
    text = capsys.readouterr().out
    assert "columns: 2 scalars, 1 prong variable in 1 group\n" in text
    assert "group png (1 variable, 3 prongs):" in text and "1 batch per epoch" in text
    assert main(["inspect", str(out)]) == 0
    assert "batches: 1 of 4 rows (2 rows)" in capsys.readouterr().out
    ds = lstm_data.open(one / "one.csv")
    batches = lstm_data.Batches(ds, BatchSpec.from_toml(one / "one.toml"), Order(batch_size=4))
    assert repr(batches).startswith("Batches(1 batch of 4, 2 rows,")
    with pytest.raises(SchemaError, match=r"\(known: 1 prong variable\)"):
        lstm_data.Batches(ds, BatchSpec(inputs={"p": Ragged(["png.calX"], max_len=2)}))


def test_every_unknown_variable_is_named_at_once_with_its_close_match(one):
    ds = lstm_data.open(one / "one.csv")
    spec = BatchSpec(inputs={"s": Scalars(["calEE", "calE", "nhit"]),
                             "p": Ragged(["png.calE"], max_len=2, sort_by="png.calF")})
    with pytest.raises(SchemaError) as err:
        lstm_data.Batches(ds, spec)
    text = str(err.value)
    assert text.startswith("3 variables of the spec are not in the data as asked: ")
    assert "input 's': unknown scalar 'calEE'; did you mean 'calE'" in text
    assert "input 's': unknown scalar 'nhit'" in text
    assert "input 'p': sort_by: unknown prong variable 'png.calF'; did you mean 'png.calE'" in text
    assert err.value.variable == "calEE"


def test_a_bad_sort_by_alone_says_it_came_from_sort_by(one):
    ds = lstm_data.open(one / "one.csv")
    with pytest.raises(SchemaError, match=r"^input 'p': sort_by: unknown prong variable 'png.cal'; did you mean "
                                          r"'png.calE'"):
        lstm_data.Batches(ds, BatchSpec(inputs={"p": Ragged(["png.calE"], max_len=2, sort_by="png.cal")}))


def test_a_dotted_column_read_as_a_scalar_is_explained_with_the_schema_that_groups_it(tmp_path, capsys):
    path = tmp_path / "bare.csv"  # no quotes and one prong per row: every png.* column reads as a scalar
    path.write_text("calE,png.calE,png.E\n1,2,3\n4,5,6\n")
    spec = BatchSpec(inputs={"p": Ragged(["png.calE", "png.E"], max_len=2)})
    with pytest.raises(SchemaError) as err:
        lstm_data.Batches(lstm_data.open(path), spec)
    text = str(err.value)
    assert "input 'p': 'png.calE' is a scalar column; use Scalars for it, or read its group as one" in text
    assert "Columns named png.* belong to group 'png' by their name" in text
    assert text.count("schema={'groups': {'png': 'png.*'}}") == 1  # said once for both
    grouped = lstm_data.open(path, schema={"groups": {"png": "png.*"}})  # what it says works
    assert grouped.groups == {"png": ["png.calE", "png.E"]}
    lstm_data.Batches(grouped, spec)


def test_inspect_notes_a_scalar_named_like_a_group(one, capsys):
    assert main(["inspect", str(one / "one.csv"), "--no-stats"]) == 0
    out = capsys.readouterr().out
    assert ("note: png.n: named like group 'png' but read as a scalar (one number per row); if it is the group's "
            "prong variable, declare the group: --schema FILE.toml with [groups] png = \"png.*\"") in out
