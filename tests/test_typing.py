"""What type checkers see of the package: its real public names, and a wheel that says it is typed."""
from __future__ import annotations

import ast
import re
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import lstm_data

PACKAGE = Path(lstm_data.__file__).resolve().parent
REPO = PACKAGE.parent

#: a user's script under ``mypy --strict``: every public name is found, and keeps its type
_USER_CODE = '''
import lstm_data

ds = lstm_data.open("events.csv")
reveal_type(ds)
spec = lstm_data.BatchSpec(inputs={"x": lstm_data.Scalars(["a"])}, targets={"y": lstm_data.Ragged(["b"])})
batches = lstm_data.Batches(ds, spec, lstm_data.Order(batch_size=4))
reveal_type(batches)
reveal_type(batches[0])
reveal_type(lstm_data.open_batches("store.zarr"))
reveal_type(lstm_data.Schema)

# every batch sequence is a batch source, what the adapters take
from lstm_data.batching.epochs.source import BatchSource, ShardSource

sources: list[BatchSource] = [batches, batches.shard(0, 2), lstm_data.open_batches("store.zarr")]
shard: ShardSource = batches.shard(1, 2)
'''


def _revealed(output: str) -> list[str]:
    return re.findall(r'Revealed type is "(.*)"', output)


@pytest.mark.slow
def test_a_strict_type_checker_sees_the_real_public_names(tmp_path):
    api = pytest.importorskip("mypy.api")
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(_USER_CODE))
    out, err, status = api.run(["--strict", "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache"),
                                str(script)])
    assert status == 0, out + err  # no "does not explicitly export", no Any in a typed context
    ds, batches, item, stored, schema = _revealed(out)
    assert ds == "lstm_data.data.dataset.Dataset"
    assert batches == "lstm_data.batching.epochs.batches.Batches"
    assert item.startswith("tuple[dict[str, numpy.ndarray") and item.count("dict[str, ") == 3, item
    assert stored == "lstm_data.store.read.PrecomputedBatches"
    assert "lstm_data.io.schema.Schema" in schema


def test_every_lazy_name_is_imported_for_type_checkers():
    """The package root imports its public names lazily; a ``TYPE_CHECKING`` block imports each
    (``X as X``, which exports it) from where the lazy import finds it."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    typed: dict[str, tuple[str, str]] = {}
    lazy: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module is not None
                for alias in imp.names:
                    assert alias.asname == alias.name, f"{alias.name} is not exported (write 'X as X')"
                    typed[alias.name] = (imp.module, alias.name)
        elif isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "_LAZY":
            lazy = ast.literal_eval(node.value)
    assert lazy and typed == lazy


def test_the_wheel_holds_py_typed_and_the_kernel_stubs(tmp_path):
    """What setuptools puts in the wheel (``build_py``): the ``py.typed`` marker, and a stub
    beside every compiled kernel module."""
    pytest.importorskip("setuptools")
    build = tmp_path / "build"
    # build_py copies files only: the compiled core is not needed (nor Cython, which CI's
    # LSTM_DATA_REQUIRE_EXTENSION=1 would otherwise ask setup.py to import)
    env = {k: v for k, v in os.environ.items() if k != "LSTM_DATA_REQUIRE_EXTENSION"}
    done = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(build)], cwd=REPO,
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    built = build / "lstm_data"
    assert (built / "py.typed").is_file()
    kernels = sorted(p.stem for p in (PACKAGE / "kernels" / "_ext").glob("*.pyx"))
    stubs = sorted(p.stem for p in (built / "kernels" / "_ext").glob("*.pyi"))
    assert kernels and set(kernels) <= set(stubs), (kernels, stubs)
