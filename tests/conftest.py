"""Shared fixtures, and the ``kernels`` mark.

``backend`` runs a kernel test once per available backend (compiled and twin);
``twins`` gives both at once. ``ds`` is a seeded synthetic NOvA-like dataset,
one per test module: a module sets ``DS_ROWS`` and ``DS_SEED`` to choose it
(default 3000 rows, seed 7). ``numu`` is the shipped example, read once per run, and
``numu_zarr`` a copy of it in our zarr layout.

The tests of the kernels' callers (:data:`KERNEL_CALLERS`) are marked ``kernels``: they run
the kernels through the backend lstm_data chose, which ``LSTM_DATA_PURE_PYTHON=1`` switches to
the pure-Python twins, so CI runs them a second time that way (``-m "kernels and not slow"``).
A test that takes ``backend`` or ``twins`` picks its backends itself: the main pass runs it
on both already, and it is not marked.
"""
from __future__ import annotations

import gc
from pathlib import Path

import pytest

import lstm_data
from lstm_data import kernels as _kernels
from lstm_data.data.synthetic import make_dataset
from tests.helpers import EXAMPLES


def _available_backends() -> list[str]:
    names = ["python"]
    try:
        _kernels.load_backend("cython")
        names.insert(0, "cython")
    except ImportError:
        pass
    return names


BACKENDS = _available_backends()

TESTS = Path(__file__).resolve().parent

#: the tests that reach the kernels through lstm_data's own code: batches built in RAM and
#: from files, CSV text parsed, Parquet columns interleaved, stores precomputed
KERNEL_CALLERS = ("kernels/", "batching/", "io/test_csv", "io/test_exact_ints.py", "io/test_strict_ints.py",
                  "io/test_parquet", "store/test_precompute.py", "adapters/test_lstm_ee.py")


@pytest.hookimpl(tryfirst=True)  # before -m selects on the marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        where = item.path.relative_to(TESTS).as_posix() if item.path.is_relative_to(TESTS) else ""
        if where.startswith(KERNEL_CALLERS) and not {"backend", "twins"} & set(item.fixturenames):
            item.add_marker(pytest.mark.kernels)


def pytest_collection_finish(session):
    """Freeze what collection imported (torch, Keras, Dask, ...: ~500k objects that live to the end).

    A full garbage collection, a test's own ``gc.collect()`` or Python's periodic one, then scans
    only what the tests made: about a millisecond instead of a second or more per collection.
    """
    gc.collect()
    gc.freeze()


@pytest.fixture(params=BACKENDS)
def backend(request):
    """A namespace with every kernel of one backend (``.BACKEND`` names it)."""
    return _kernels.load_backend(request.param)


@pytest.fixture(scope="session")
def twins():
    """``(compiled, python)`` kernel namespaces; skips when the core is not built."""
    if "cython" not in BACKENDS:
        pytest.skip("compiled core not built")
    return _kernels.load_backend("cython"), _kernels.load_backend("python")


@pytest.fixture(scope="module")
def ds(request):
    """The module's synthetic dataset: ``DS_ROWS`` rows (default 3000) from ``DS_SEED`` (default 7)."""
    return make_dataset(getattr(request.module, "DS_ROWS", 3000), seed=getattr(request.module, "DS_SEED", 7))


@pytest.fixture(scope="session")
def numu():
    """``examples/numu_v3.csv.xz`` (5000 events), read once: the pure-Python twins take seconds."""
    return lstm_data.open(EXAMPLES / "numu_v3.csv.xz")


@pytest.fixture(scope="session")
def numu_zarr(numu, tmp_path_factory):
    """The shipped example in our zarr layout: for a command line that needs the data, not its CSV."""
    path = tmp_path_factory.mktemp("numu") / "numu_v3.zarr"
    numu.to_zarr(path)
    return path
