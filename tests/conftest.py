"""Shared fixtures.

``backend`` runs a kernel test once per available backend (compiled and twin);
``twins`` gives both at once. ``ds`` is a seeded synthetic NOvA-like dataset,
one per test module: a module sets ``DS_ROWS`` and ``DS_SEED`` to choose it
(default 3000 rows, seed 7).
"""
from __future__ import annotations

import pytest

from lstm_data import kernels as _kernels
from lstm_data.data.synthetic import make_dataset


def _available_backends() -> list[str]:
    names = ["python"]
    try:
        _kernels.load_backend("cython")
        names.insert(0, "cython")
    except ImportError:
        pass
    return names


BACKENDS = _available_backends()


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
