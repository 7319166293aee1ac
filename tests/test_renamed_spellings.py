"""Every spelling renamed before the first release is an error naming the new spelling.

A keyword is an ``OptionError`` (a ``TypeError``, as Python says of an unknown keyword),
an attribute an ``AttributeError``, a command-line flag the command's usage error (exit
code 2). Each row of :data:`lstm_data._util.deprecation.RENAMED` has its case here, with
a real call on real files; the new spelling does what the old one did.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable

import pytest

import lstm_data
from lstm_data import Batches, BatchSpec, Order, open_batches, precompute
from lstm_data._util.deprecation import RENAMED
from lstm_data.cli import main
from lstm_data.io.csv.reader import read_csv
from lstm_data.io.ours.convert import convert_streaming
from lstm_data.scale.convert import convert_distributed
from lstm_data.store.read import PrecomputedBatches
from lstm_data.synthetic import write_csv
from tests.helpers import EXAMPLES, assert_same_dataset

DS_ROWS, DS_SEED = 600, 11  # the ``ds`` fixture (tests/conftest.py)
os.environ.setdefault("KERAS_BACKEND", "torch")  # the Keras cases, when Keras is installed


@pytest.fixture(scope="module")
def spec() -> BatchSpec:
    return BatchSpec.from_toml(EXAMPLES / "numu_v3.toml")


@pytest.fixture(scope="module")
def files(ds, spec, tmp_path_factory) -> dict[str, Path]:
    """The data as CSV and zarr, and a batch store of it."""
    root = tmp_path_factory.mktemp("renamed")
    write_csv(root / "d.csv", DS_ROWS, seed=DS_SEED)
    ds.to_zarr(root / "d.zarr")
    precompute(ds, spec, root / "b.zarr", Order(batch_size=100, seed=3), progress=False)
    return {"csv": root / "d.csv", "zarr": root / "d.zarr", "store": root / "b.zarr", "dir": root}


@pytest.fixture(scope="module")
def batches(ds, spec) -> Batches:
    return Batches(ds, spec, Order(batch_size=100, seed=3))


#: (where, old keyword) -> the call with the old spelling, given the fixtures
KEYWORDS: dict[tuple[str, str], Callable[..., Any]] = {
    ("lstm_data.open", "use_threads"): lambda f, **_: lstm_data.open(f["csv"], use_threads=False),
    ("lstm_data.open", "workers"): lambda f, **_: lstm_data.open(f["csv"], workers=2),
    ("lstm_data.open", "block_size"): lambda f, **_: lstm_data.open(f["csv"], block_size=1 << 16),
    ("lstm_data.open", "step_bytes"): lambda f, **_: lstm_data.open(f["csv"], step_bytes=1 << 16),
    ("read_csv", "block_size"): lambda f, **_: read_csv(f["csv"], block_size=1 << 16),
    ("convert", "shuffle"): lambda f, **_: lstm_data.convert(f["zarr"], f["dir"] / "c.zarr", shuffle=4),
    ("convert_streaming", "shuffle"): lambda f, **_: convert_streaming([str(f["zarr"])], f["dir"] / "s.zarr",
                                                                       shuffle=4),
    ("convert_distributed", "shuffle"): lambda f, **_: convert_distributed([str(f["zarr"])], f["dir"] / "d.zarr",
                                                                           client=None, shuffle=4),
    ("precompute", "workers"): lambda f, ds, spec, **_: precompute(ds, spec, f["store"], Order(batch_size=100, seed=3),
                                                                   progress=False, workers=2),
    ("precompute", "force"): lambda f, ds, spec, **_: precompute(ds, spec, f["store"], Order(batch_size=50),
                                                                 progress=False, force=True),
    ("precompute", "compress"): lambda f, ds, spec, **_: precompute(ds, spec, f["dir"] / "raw.zarr",
                                                                    Order(batch_size=100), progress=False,
                                                                    compress=False),
    ("open_batches", "shuffle"): lambda f, **_: open_batches(f["store"], shuffle=False),
    ("open_batches", "batch_size"): lambda f, **_: open_batches(f["store"], batch_size=100),
    ("open_batches", "seed"): lambda f, **_: open_batches(f["store"], seed=3),
    ("PrecomputedBatches", "shuffle"): lambda f, **_: PrecomputedBatches(f["store"], shuffle=False),
    ("iter", "workers"): lambda batches, **_: list(batches.iter(workers=2)),
}

#: (class, old attribute) -> the object read, given the fixtures
ATTRIBUTES: dict[tuple[str, str], Callable[..., Any]] = {
    ("PrecomputedBatches", "shuffle"): lambda f, **_: open_batches(f["store"]),
    ("PrecomputedBatches", "shard_layout"): lambda f, **_: open_batches(f["store"]),
    ("Batches", "shard_layout"): lambda batches, **_: batches,
    **{("ShardedBatches", name): (lambda batches, **_: batches.shard(0, 2))
       for name in ("batch_size", "shuffle", "nan_to", "seed", "layout")},
}

#: (command, old flag) -> the command line, given the files
FLAGS: dict[tuple[str, str], Callable[[dict[str, Path]], list[str]]] = {
    ("lstm-data convert", "--shuffle"): lambda f: ["convert", str(f["zarr"]), str(f["dir"] / "o.zarr"),
                                                   "--shuffle", "4"],
    ("lstm-data convert", "--force"): lambda f: ["convert", str(f["zarr"]), str(f["dir"] / "o.zarr"), "--force"],
    **{("lstm-data precompute", flag): (lambda f, flag=flag: [
        "precompute", "--data", str(f["zarr"]), "--spec", str(EXAMPLES / "numu_v3.toml"), "--out",
        str(f["dir"] / "p.zarr"), "--no-progress", flag]) for flag in ("--workers", "--force", "--no-compress")},
}

#: the cases in the optional libraries' tests below
OPTIONAL = {("read_parquet", "use_threads"), ("read_root", "step_bytes"), ("KerasBatches", "weights"),
            ("KerasBatches", "with_weights"), ("KerasBatches", "workers")}


def _new(where: str, old: str) -> str:
    return RENAMED[where][old]


def test_every_renamed_spelling_has_its_case_here():
    table = {(where, old) for where, olds in RENAMED.items() for old in olds}
    assert set(KEYWORDS) | set(ATTRIBUTES) | set(FLAGS) | OPTIONAL == table


@pytest.mark.parametrize("where, old", list(KEYWORDS), ids=[f"{w}({o}=)" for w, o in KEYWORDS])
def test_an_old_keyword_is_an_error_naming_the_new_one(where, old, files, ds, spec, batches):
    new = _new(where, old)
    with pytest.raises(lstm_data.OptionError) as info:
        KEYWORDS[where, old](f=files, ds=ds, spec=spec, batches=batches)
    message = str(info.value)
    assert message.startswith(f"{where}() got an unexpected keyword argument {old!r}: it is now {new}"), message
    assert isinstance(info.value, TypeError)  # as Python's own unknown keyword


@pytest.mark.parametrize("where, old", list(ATTRIBUTES), ids=[f"{w}.{o}" for w, o in ATTRIBUTES])
def test_an_old_attribute_is_an_error_naming_the_new_one(where, old, files, batches):
    obj = ATTRIBUTES[where, old](f=files, batches=batches)
    said = re.escape(f"{where!r} object has no attribute {old!r}: it is now .{_new(where, old)}")
    with pytest.raises(AttributeError, match=said):
        getattr(obj, old)
    with pytest.raises(AttributeError, match=said):
        setattr(obj, old, 1)
    assert not hasattr(obj, old)
    new = obj
    for part in _new(where, old).split("."):
        new = getattr(new, part)  # the new spelling reads


@pytest.mark.parametrize("where, old", list(FLAGS), ids=[f"{w} {o}" for w, o in FLAGS])
def test_an_old_flag_is_a_usage_error_naming_the_new_one(where, old, files, capsys):
    with pytest.raises(SystemExit) as info:
        main(FLAGS[where, old](files))
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"{where}: error: argument {old}: it is now {_new(where, old)}" in err, err
    with pytest.raises(SystemExit):
        main([where.split()[1], "--help"])
    assert not re.search(rf"(?<![\w-]){old}(?![\w-])", capsys.readouterr().out)  # hidden from --help


def test_the_new_spellings_work(files, ds, spec, batches, tmp_path):
    assert_same_dataset(lstm_data.open(files["csv"], threads=1, block_bytes=1 << 16),
                        read_csv(files["csv"], block_bytes=1 << 16))
    lstm_data.convert(files["zarr"], tmp_path / "c.zarr", shuffle_seed=4)
    assert precompute(ds, spec, files["store"], Order(batch_size=100, seed=3), progress=False, threads=2,
                      compression="zstd").reused
    assert open_batches(files["store"], order=Order(batch_size=100, seed=3), permute=False).permute is False
    assert PrecomputedBatches(files["store"], permute=False).permute is False
    assert len(list(batches.iter(threads=2))) == len(batches)
    shard = batches.shard(0, 2)
    assert shard.batches.seed == 3 and shard.batches.batch_size == 100
    base = ["precompute", "--data", str(files["zarr"]), "--spec", str(EXAMPLES / "numu_v3.toml"), "--out",
            str(tmp_path / "p.zarr"), "--no-progress", "--quiet", "--batch-size", "100"]
    assert main([*base, "--compression", "none", "--threads", "2"]) == 0
    assert main([*base, "--batch-size", "50", "--overwrite"]) == 0
    assert main(["convert", str(files["zarr"]), str(tmp_path / "o.zarr"), "--shuffle-seed", "4", "--quiet"]) == 0
    assert main(["convert", str(files["zarr"]), str(tmp_path / "o.zarr"), "--overwrite", "--quiet"]) == 0


def _keyword_error(where: str, old: str) -> str:
    return re.escape(f"{where}() got an unexpected keyword argument {old!r}: it is now {_new(where, old)}")


def test_read_parquet_use_threads(ds, tmp_path):
    pytest.importorskip("pyarrow")
    from lstm_data.io.parquet import read_parquet

    ds.to_parquet(tmp_path / "d.parquet")
    with pytest.raises(lstm_data.OptionError, match=_keyword_error("read_parquet", "use_threads")):
        read_parquet(tmp_path / "d.parquet", use_threads=False)
    assert_same_dataset(read_parquet(tmp_path / "d.parquet", threads=1), ds)


def test_read_root_step_bytes(tmp_path):
    pytest.importorskip("uproot")
    from lstm_data.io.root import read_root
    from tests.helpers import root_events, write_root

    path = write_root(tmp_path / "e.root", {"Events": root_events(200)})
    with pytest.raises(lstm_data.OptionError, match=_keyword_error("read_root", "step_bytes")):
        read_root(path, step_bytes=2000)
    assert len(read_root(path, block_bytes=2000)) == 200


@pytest.mark.slow  # importing Keras takes seconds
def test_keras_batches_weights(batches):
    pytest.importorskip("keras")
    pytest.importorskip("torch")
    from lstm_data.adapters.keras import KerasBatches

    with pytest.raises(lstm_data.OptionError, match=_keyword_error("KerasBatches", "weights")):
        KerasBatches(batches, weights=False)
    with pytest.raises(lstm_data.OptionError, match=_keyword_error("KerasBatches", "workers")):
        KerasBatches(batches, workers=2)  # Keras's word for what are threads here
    assert KerasBatches(batches, threads=2).threads == 2
    served = KerasBatches(batches, sample_weights=False)
    with pytest.raises(AttributeError, match=re.escape("'KerasBatches' object has no attribute 'with_weights': "
                                                       "it is now .sample_weights")):
        served.with_weights  # noqa: B018 - the read is the test
    assert served.sample_weights is False and len(served[0]) == 2
