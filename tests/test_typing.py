"""What type checkers see of the package: its real public names, and a wheel that says it is typed."""
from __future__ import annotations

import ast
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lstm_data
from tests.helpers import strict_mypy

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

# what batches and shards read off their pipeline, order or parent keeps its type
reveal_type(batches.spec)
reveal_type(batches.batch_size)
reveal_type(batches.shard(0, 2).varies_by_epoch)
'''


def _revealed(output: str) -> list[str]:
    return re.findall(r'Revealed type is "(.*)"', output)


@pytest.mark.slow
def test_a_strict_type_checker_sees_the_real_public_names(tmp_path):
    out, status = strict_mypy(tmp_path, _USER_CODE)
    assert status == 0, out  # no "does not explicitly export", no Any in a typed context
    ds, batches, item, stored, schema, spec, batch_size, varies = _revealed(out)
    assert ds == "lstm_data.data.dataset.Dataset"
    assert batches == "lstm_data.batching.epochs.batches.Batches"
    assert item.startswith("tuple[dict[str, numpy.ndarray") and item.count("dict[str, ") == 3, item
    assert stored == "lstm_data.store.read.PrecomputedBatches"
    assert "lstm_data.io.schema.Schema" in schema
    assert (spec, batch_size, varies) == ("lstm_data.batching.spec.batch_spec.BatchSpec", "int", "bool")


def test_every_lazy_name_is_imported_for_type_checkers():
    """The package root imports its public names lazily; a ``TYPE_CHECKING`` block imports each
    (``X as X``, which exports it) from where the lazy import finds it."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    typed: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module is not None
                for alias in imp.names:
                    assert alias.asname == alias.name, f"{alias.name} is not exported (write 'X as X')"
                    typed[alias.name] = (imp.module, alias.name)
    lazy = {name: (module, name) for name, module in lstm_data._LAZY.items()}
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


#: the public modules whose ``__all__`` is public API, besides the package root
_PUBLIC_MODULES = ("lstm_data.keras", "lstm_data.torch", "lstm_data.compat", "lstm_data.synthetic",
                   "lstm_data.errors", "lstm_data.adapters.weaver", "lstm_data.store.parts")
_ANY = re.compile(r"(?<![\w.])(typing\.)?Any\b")


def _public_callables():
    """``(qualified name, function)`` of every public function, class and public method (``__init__``
    included) that the package root and its public modules export."""
    import importlib
    import inspect

    modules = [lstm_data] + [importlib.import_module(m) for m in _PUBLIC_MODULES]
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                yield f"{module.__name__}.{name}", obj
            elif inspect.isclass(obj) and obj.__module__.startswith("lstm_data"):
                for klass in obj.__mro__:
                    if not klass.__module__.startswith("lstm_data"):
                        continue
                    for attr, value in vars(klass).items():
                        if attr.startswith("_") and attr != "__init__":
                            continue
                        func = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
                        if inspect.isfunction(func):
                            yield f"{module.__name__}.{name}.{attr}", func


def test_no_any_in_public_signatures():
    import inspect

    found = []
    for where, func in _public_callables():
        sig = inspect.signature(func)
        annotations = [(p.name, p.annotation) for p in sig.parameters.values()]
        annotations.append(("return", sig.return_annotation))
        for name, annotation in annotations:
            text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
            if annotation is not inspect.Parameter.empty and _ANY.search(text):
                found.append(f"{where}: {name}: {text}")
    assert not found, "Any in public signatures:\n" + "\n".join(sorted(set(found)))
