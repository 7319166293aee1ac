"""``lstm-data bench --data PATH --spec SPEC.toml``: the small bench of a user's own data path,
and what ``lstm-data bench`` says where no checkout holds the suite."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lstm_data
from lstm_data.cli import main
from lstm_data.data.synthetic import PNG3D_VARS, SLICE_VARS, make_dataset

PACKAGE = Path(lstm_data.__file__).resolve().parent

ROWS = 300
BATCH = 64

SPEC = """\
[inputs.slice]
type = "scalars"
vars = {slice}

[inputs.png_fixed]
type = "ragged"
pad_value = nan
max_len = 4
vars = {png}

[inputs.png_per_batch]
type = "ragged"
pad_value = nan
vars = {png}

[targets.energy]
type = "scalars"
vars = ["trueE"]

[order]
shuffle = false
"""


@pytest.fixture(scope="module")
def own_data(tmp_path_factory):
    """A zarr store of NOvA-like rows and a spec with a fixed-width and a per-batch ragged output."""
    tmp = tmp_path_factory.mktemp("own")
    ds = make_dataset(ROWS, seed=3)
    ds.to_zarr(tmp / "d.zarr")
    spec = tmp / "spec.toml"
    spec.write_text(SPEC.format(slice=json.dumps(list(SLICE_VARS[:3])), png=json.dumps(list(PNG3D_VARS[:2]))))
    return ds, tmp / "d.zarr", spec


def test_own_bench_times_open_and_an_epoch_and_counts_the_padding(own_data, tmp_path, capsys):
    ds, store, spec = own_data
    out = tmp_path / "own.json"
    assert main(["bench", "--data", str(store), "--spec", str(spec), "--batch-size", str(BATCH),
                 "--runs", "2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["rows"] == ROWS and result["batches"] == math.ceil(ROWS / BATCH)
    assert result["batch_size"] == BATCH and result["runs"] == 2
    assert result["open_seconds"] > 0 and result["epoch_seconds"] > 0 and result["nbytes"] > 0
    lengths = np.diff(np.asarray(ds.offsets("png")))
    # fixed width: every row has 4 slots, the real ones are its prongs up to 4
    fixed = result["padding"]["png_fixed"]
    assert fixed["slots"] == ROWS * 4
    assert fixed["real"] == int(np.minimum(lengths, 4).sum())
    # per batch ([order] shuffle = false: consecutive rows): each batch as wide as its longest row
    per_batch = result["padding"]["png_per_batch"]
    chunks = [lengths[i:i + BATCH] for i in range(0, ROWS, BATCH)]
    assert per_batch["slots"] == sum(len(c) * int(c.max()) for c in chunks)
    assert per_batch["real"] == int(lengths.sum())
    assert per_batch["padded_per_real"] == pytest.approx((per_batch["slots"] - lengths.sum()) / lengths.sum())
    assert f"{per_batch['padded_per_real']:.3f} padded slots per real element" in printed
    assert "open (read)" in printed and "one epoch" in printed


def test_own_bench_refuses_the_suite_options_and_a_half_request(own_data, capsys):
    _, store, spec = own_data
    assert main(["bench", "--data", str(store), "--spec", str(spec), "--check"]) == 1
    assert "--check: options of the benchmark suite, not of --data" in capsys.readouterr().err
    assert main(["bench", "--data", str(store)]) == 1
    assert "--data and --spec go together" in capsys.readouterr().err
    assert main(["bench", "--only", "kernels", "--batch-size", "8"]) == 1
    assert "--batch-size: options of --data, not of the benchmark suite" in capsys.readouterr().err


@pytest.mark.slow
def test_without_a_checkout_bench_says_how_to_run_the_suite_and_still_times_own_data(own_data, tmp_path):
    """The package copied alone (as a wheel installs it): no ``bench`` beside it."""
    _, store, spec = own_data
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / "lstm_data",
                    ignore=shutil.ignore_patterns("__pycache__", "*.c"))
    env = dict(os.environ, PYTHONPATH=str(site))
    code = ("import sys, lstm_data; from lstm_data.cli import main; print(lstm_data.__file__); "
            "sys.exit(main(sys.argv[1:]))")

    def lstm_data_bench(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", code, "bench", *args], capture_output=True,
                              text=True, cwd=tmp_path, env=env)

    bare = lstm_data_bench()
    assert bare.stdout.splitlines()[0] == str(site / "lstm_data" / "__init__.py")
    assert bare.returncode == 2, bare.stderr
    assert "not installed with lstm_data" in bare.stderr
    assert "lstm-data bench --data PATH --spec SPEC.toml" in bare.stderr
    own = lstm_data_bench("--data", str(store), "--spec", str(spec), "--runs", "1")
    assert own.returncode == 0, own.stderr
    assert "padded slots per real element" in own.stdout


def test_in_the_checkout_the_suite_is_the_repositorys_bench():
    from lstm_data.cli.bench import checkout_root, load_suite

    root = checkout_root()
    assert root is not None and root == PACKAGE.parent
    suite = load_suite(root)
    assert os.path.dirname(suite.__file__) == str(root / "bench")
    assert "kernels" in suite.STAGES and lstm_data.__file__.startswith(str(root))
