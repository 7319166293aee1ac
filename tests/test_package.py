"""The package as users and the layer rules see it: documented names, layers, import graph."""
from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import lstm_data

PACKAGE = Path(lstm_data.__file__).resolve().parent
REPO = PACKAGE.parent
LAYERS = ["_util", "kernels", "data", "io", "batching", "store", "scale", "adapters", "cli"]

#: every name the README and the design page show, by the module users import it from
DOCUMENTED = {
    "lstm_data": ["open", "Dataset", "InMemoryDataset", "BatchSpec", "Scalars", "Ragged", "Batches",
                  "open_batches", "precompute", "Schema", "ParseError", "SchemaError", "FormatError",
                  "BrokenRowsWarning", "__version__"],
    "lstm_data.kernels": ["BACKEND", "parse_float_lists", "pad_ragged", "BatchGather", "CsvBlockParser"],
    "lstm_data.compat": ["join_varr_arrays"],
    "lstm_data.synthetic": ["write_csv", "make_dataset", "SLICE_VARS", "PNG3D_VARS", "PNG2D_VARS"],
    "lstm_data.examples": ["write_examples", "example_files", "EXAMPLES"],
    "lstm_data.torch": ["TorchBatches"],
    "lstm_data.keras": ["KerasBatches", "keras_inputs"],
    "lstm_data.cli": ["main"],
}


@pytest.mark.parametrize("module", sorted(DOCUMENTED))
def test_every_documented_name_imports(module, monkeypatch):
    if module == "lstm_data.torch":
        pytest.importorskip("torch")
    if module == "lstm_data.keras":
        monkeypatch.setenv("KERAS_BACKEND", "torch")
        pytest.importorskip("keras")
    mod = importlib.import_module(module)
    missing = [name for name in DOCUMENTED[module] if not hasattr(mod, name)]
    assert not missing, f"{module} lacks {missing}"


def test_public_names_are_the_layers_objects():
    from lstm_data.batching.epochs.batches import Batches
    from lstm_data.io.dispatch import open as open_any
    from lstm_data.store.read import open_batches

    assert lstm_data.open is open_any and lstm_data.Batches is Batches
    assert lstm_data.open_batches is open_batches


def test_to_zarr_of_a_dataset_made_without_io_writes_our_layout(tmp_path):
    from lstm_data.data.synthetic import make_dataset

    ds = make_dataset(20, seed=1)
    ds.to_zarr(tmp_path / "d.zarr")
    ds.to_hdf5(tmp_path / "d.h5")
    assert lstm_data.open(tmp_path / "d.zarr").scalar("calE").tobytes() == ds.scalar("calE").tobytes()
    assert len(lstm_data.open(tmp_path / "d.h5")) == 20


def test_the_library_never_loads_the_benchmarks():
    code = ("import sys, lstm_data, lstm_data.io, lstm_data.batching, lstm_data.store, lstm_data.cli; "
            "from lstm_data.cli import bench, bench_own, convert, inspect, precompute; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'bench' or m.startswith('lstm_data.bench')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


def test_reading_hdf5_loads_no_zarr():
    """Opening an HDF5 or NOvA file imports neither zarr nor fsspec: their ~25 MB would count in the
    reader's peak memory (a floor of the benchmark suite) and their import second in every start."""
    code = ("import sys, lstm_data, lstm_data.io, lstm_data.io.nova, lstm_data.io.hdf5.reader; "
            "print(sorted(m for m in ('zarr', 'fsspec') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_benchmark_suite_lives_outside_the_package():
    """The suite is the top-level ``bench`` package of a checkout: not a package the wheel finds."""
    setuptools = pytest.importorskip("setuptools")
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = setuptools.find_packages(str(REPO), include=config["packages"]["find"]["include"])
    assert found and all(p == "lstm_data" or p.startswith("lstm_data.") for p in found), found
    assert not any(p.split(".")[1:2] == ["bench"] for p in found)
    assert not any("bench" in pattern for pattern in config["package-data"]["lstm_data"])
    assert (REPO / "bench" / "suite.py").is_file() and (REPO / "bench" / "floors.toml").is_file()
    assert not (REPO / "bench" / "floors.toml").is_symlink()


def _modules() -> dict[str, ast.Module]:
    trees = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        trees[name] = ast.parse(path.read_text(), str(path))
    return trees


def _imports(name: str, tree: ast.Module, is_package: bool):
    """``(imported module, imported names)`` of every ``from ... import`` in one module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield target, [alias.name for alias in node.names]


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def test_no_private_name_is_imported_across_layers():
    bad = []
    for name, tree in _modules().items():
        is_package = (PACKAGE / Path(*name.split(".")[1:]) / "__init__.py").exists()
        for target, names in _imports(name, tree, is_package):
            if not target.startswith("lstm_data") or _layer(target) in (None, _layer(name)):
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            private_module = [p for p in target.split(".")[2:] if p.startswith("_")]
            if private or private_module:
                bad.append(f"{name}: from {target} import {', '.join(names)}")
    assert not bad, "private names imported across layers:\n" + "\n".join(bad)


def test_compiled_kernels_never_import_the_twins():
    """import-linter cannot read .pyx/.pxd files: this test does."""
    sources = sorted((PACKAGE / "kernels" / "_ext").glob("*.p[xy]*"))
    assert any(p.suffix == ".pyx" for p in sources)
    pattern = re.compile(r"^\s*(from|c?import)\s+\S*(_py|_fallback)\b", re.M)
    bad = [f"{p.name}: {m.group(0).strip()}" for p in sources for m in pattern.finditer(p.read_text())]
    assert not bad, bad


def test_no_import_cycles():
    """No module imports itself through others when run (imports for type checkers only are
    left out: they never execute, and a function that takes a spec may name its type)."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("lstm_data", exclude_type_checking_imports=True)
    cycles = [m for m in graph.modules
              if any(graph.chain_exists(importer=dep, imported=m) for dep in graph.find_modules_directly_imported_by(m))]
    assert not cycles, f"modules on an import cycle: {sorted(cycles)}"


def test_import_linter_contracts_hold():
    """The layer contracts of pyproject.toml (also run by .ci/run as ``lint-imports``)."""
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter not installed (pip install -e '.[test]')")
    out = subprocess.run([exe], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout
