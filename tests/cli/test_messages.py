"""Messages that finish the job: each names what is wrong and the way out.

A misspelt flag (the command's usage and the close match; no abbreviations), the refusal to
replace an output (what is there, what --overwrite does), a column the data lacks (the close
match across every column and the schema file beside the data), open()'s misspelt keywords,
plain-text help, and inspect of a batch store.
"""
from __future__ import annotations

import ast
import json
import re
import shutil
import tomllib
from pathlib import Path

import pytest

import lstm_data
from lstm_data import BatchSpec, Order, Ragged, Scalars
from lstm_data.cli import COMMANDS, main
from lstm_data.data.synthetic import PNG3D_VARS, make_dataset
from lstm_data.errors import OptionError
from lstm_data.store.write import precompute
from tests.helpers import EXAMPLES

REPO = Path(__file__).resolve().parents[2]
SPEC = EXAMPLES / "numu_v3.toml"
NOVA = EXAMPLES / "nova_sample.h5"


def _fails(argv, capsys) -> str:
    """Run the CLI, expecting a usage error (exit 2); its stderr."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    return capsys.readouterr().err


def _error(argv, capsys) -> str:
    """Run the CLI, expecting an error (exit 1); its stderr."""
    assert main(argv) == 1
    return capsys.readouterr().err


# -- flags ---------------------------------------------------------------------------------------------------------
def test_a_misspelt_flag_gets_the_commands_usage_and_the_close_match(capsys):
    err = _fails(["precompute", "--data", "d.csv", "--spec", "s.toml", "--out", "o.zarr", "--batch-szie", "1024"],
                 capsys)
    assert err.startswith("usage: lstm-data precompute ")  # the command's usage, not the top level's
    assert "--batch-szie: did you mean --batch-size?" in err


def test_abbreviations_are_refused(capsys):
    err = _fails(["precompute", "--data", "d.csv", "--spec", "s.toml", "--out", "o.zarr", "--batch", "1024"], capsys)
    assert "unrecognized arguments: --batch 1024" in err and "did you mean --batch-size" in err
    err = _fails(["inspect", "x.csv", "--no-stat"], capsys)
    assert "usage: lstm-data inspect" in err and "did you mean --no-stats" in err


def test_a_misspelt_command_gets_the_close_command(capsys):
    err = _fails(["precompte", "--data", "d.csv"], capsys)
    assert "unknown command 'precompte'" in err and "did you mean precompute" in err  # (or predict, also close)


def _parser_calls(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
                "ArgumentParser", "add_parser"):
            yield node


def test_every_argument_parser_refuses_abbreviations():
    files = [p for d in ("lstm_data", "bench", "tools") for p in (REPO / d).rglob("*.py")]
    calls = [(p, node) for p in files for node in _parser_calls(p)]
    assert len(calls) > 10
    lenient = [f"{p.relative_to(REPO)}:{node.lineno}" for p, node in calls
               if not any(k.arg == "allow_abbrev" and getattr(k.value, "value", True) is False for k in node.keywords)]
    assert lenient == []


# -- help ----------------------------------------------------------------------------------------------------------
_MARKUP = re.compile(r"``|::|:(class|func|meth|mod|attr):|`[^`]+`")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_is_plain_text_and_true_of_every_format(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    assert not _MARKUP.search(text), _MARKUP.search(text)
    assert "CSV/HDF5/zarr" not in text and "HDF5 or zarr;" not in text


def test_the_top_level_help_shows_the_common_options(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "-q, --quiet" in text and "-v, --verbose" in text and "example" in text
    assert not _MARKUP.search(text)


# -- outputs that are not replaced ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small(tmp_path_factory):
    folder = tmp_path_factory.mktemp("small")
    make_dataset(300, seed=3).to_zarr(folder / "d.zarr")
    return folder / "d.zarr"


def test_the_overwrite_refusal_says_what_is_there_and_what_overwrite_does(small, tmp_path, capsys):
    out = tmp_path / "b.zarr"
    args = ["precompute", "--data", str(small), "--spec", str(SPEC), "--out", str(out), "-q"]
    assert main(args + ["--seed", "1"]) == 0
    capsys.readouterr()
    err = _error(args + ["--seed", "2"], capsys)
    assert "already exists: it is a batch store lstm_data precomputed with other settings" in err
    assert "seed: store has 1, asked for 2" in err and "--overwrite (overwrite=True) replaces it" in err
    assert "use --overwrite" not in err
    assert main(args + ["--seed", "2", "--overwrite"]) == 0

    converted = tmp_path / "c.zarr"
    assert main(["convert", str(small), str(converted), "-q"]) == 0
    capsys.readouterr()
    err = _error(["convert", str(small), str(converted), "-q"], capsys)
    assert "already exists: it is a zarr store of 300 rows that lstm_data wrote" in err
    assert "--overwrite (overwrite=True) replaces it" in err and "use --overwrite" not in err

    mine = tmp_path / "results.zarr"
    (mine / "sub").mkdir(parents=True)
    (mine / "notes.txt").write_text("mine")
    for extra in ([], ["--overwrite"]):  # with --overwrite too: what it is, and that it is never replaced
        err = _error(["precompute", "--data", str(small), "--spec", str(SPEC), "--out", str(mine), "-q", *extra],
                     capsys)
        assert "a directory that is not a zarr store (no zarr.json), holding 2 entries (notes.txt, sub)" in err
        assert "lstm_data never replaces" in err
    assert (mine / "notes.txt").read_text() == "mine"


# -- a column the data lacks -----------------------------------------------------------------------------------------
def test_a_nova_column_without_the_schema_names_the_close_match_and_the_schema_beside(tmp_path, capsys):
    err = _error(["inspect", str(NOVA), "--spec", str(SPEC), "--no-stats"], capsys)
    assert "unknown scalar 'calE'; did you mean 'rec.slc.calE'" in err
    beside = EXAMPLES / "nova_sample.toml"
    assert f"{beside}, a schema beside the data, names 'calE' (an alias of 'rec.slc.calE')" in err
    assert f"--schema {beside}" in err
    err = _error(["precompute", "--data", str(NOVA), "--spec", str(SPEC), "--out", str(tmp_path / "o.zarr")], capsys)
    assert "columns='calE' matches no column; did you mean 'rec.slc.calE'" in err
    assert f"{beside}, a schema beside the data, names 'calE'" in err
    # with the schema: it works
    assert main(["precompute", "--data", str(NOVA), "--spec", str(SPEC), "--schema", str(beside),
                 "--out", str(tmp_path / "o.zarr"), "-q"]) == 0


def test_without_a_schema_beside_only_the_close_match_is_named(tmp_path):
    alone = tmp_path / "alone.h5"
    shutil.copyfile(NOVA, alone)
    with pytest.raises(lstm_data.SchemaError) as err:
        lstm_data.Batches(lstm_data.open(alone), BatchSpec.from_toml(SPEC))
    assert "did you mean 'rec.slc.calE'" in str(err.value) and "schema" not in str(err.value)
    with pytest.raises(lstm_data.SchemaError, match=r"unknown prong variable 'calE'.*did you mean "
                                                     r"'rec.vtx.elastic.fuzzyk.png.calE'"):
        lstm_data.Batches(lstm_data.open(alone), BatchSpec(inputs={"p": Ragged(["calE"], max_len=3)}))


def test_a_schema_that_renames_a_table_is_named_for_its_variables(tmp_path):
    shutil.copyfile(NOVA, tmp_path / "run7.h5")
    (tmp_path / "run7.toml").write_text('[aliases]\npng = "rec.vtx.elastic.fuzzyk.png"\n')
    (tmp_path / "spec.toml").write_text('[inputs.x]\ntype = "scalars"\nvars = ["calE"]\n')  # a spec, not a schema
    with pytest.raises(lstm_data.SchemaError) as err:
        lstm_data.Batches(lstm_data.open(tmp_path / "run7.h5"),
                          BatchSpec(inputs={"p": Ragged(["png.calE"], max_len=3)}))
    text = str(err.value)
    assert "did you mean 'rec.vtx.elastic.fuzzyk.png.calE'" in text
    assert "run7.toml, a schema beside the data, names 'png.calE' (its table 'png' is an alias" in text
    assert "spec.toml" not in text


# -- open()'s keywords -------------------------------------------------------------------------------------------------
def test_open_suggests_its_parameters_and_lists_the_options_of_the_format_at_hand(tmp_path):
    csv = EXAMPLES / "numu_v3.csv.xz"
    with pytest.raises(OptionError) as err:
        lstm_data.open(csv, shema=EXAMPLES / "nova_sample.toml")
    text = str(err.value)
    assert "unknown keyword 'shema' (did you mean 'schema'? It is a parameter of lstm_data.open)" in text
    listed = text.split("and the options ", 1)[1].split(", ")
    assert {"sep", "list_sep", "threads", "dtype"} <= set(listed)
    assert not {"tree", "tables", "slice_table", "columns", "root"} & set(listed), listed
    with pytest.raises(OptionError, match=r"'tre' \(did you mean 'tree'\? It is an option of root data, not of csv\)"):
        lstm_data.open(csv, tre="Events")
    with pytest.raises(OptionError, match=r"for nova data it takes the parameters schema and read, and the options "
                                          r"aliases, columns"):
        lstm_data.open(NOVA, shema="x")


# -- inspect of a batch store ----------------------------------------------------------------------------------------
def test_inspect_shows_a_batch_store(tmp_path, capsys):
    spec = BatchSpec(inputs={"slice": Scalars(["calE", "nHit"]),
                             "png": Ragged(PNG3D_VARS[:4], max_len=5, lengths=True)},
                     targets={"target_total": Scalars(["trueE"])})
    store = tmp_path / "b.zarr"
    precompute(make_dataset(250, seed=2), spec, store, Order(batch_size=100, seed=4), progress=False)
    assert main(["inspect", str(store)]) == 0
    out = capsys.readouterr().out
    assert f"{store}: batch store" in out and "batches: 3 of 100 rows (250 rows)" in out
    for row in (r"png\s+input\s+\(B, 5, 4\)\s+float32", r"png_lengths\s+input\s+\(B,\)\s+int",
                r"target_total\s+target\s+\(B, 1\)\s+float32", r"target_total_weights\s+weight\s+\(B,\)"):
        assert re.search(row, out), row
    assert "[order]\n  batch_size = 100\n  seed = 4" in out and "version = 2" in out
    shown = out.split("spec:\n", 1)[1].replace("\n  ", "\n")  # the spec's TOML, indented
    assert BatchSpec.from_dict(tomllib.loads(shown)) == spec
    assert main(["inspect", str(store), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["n_batches"] == 3 and doc["outputs"]["png"] == {"role": "input", "shape": "(B, 5, 4)",
                                                               "dtype": "float32"}
