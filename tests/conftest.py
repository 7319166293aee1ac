"""Shared fixtures. ``backend`` runs a kernel test once per available backend."""
from __future__ import annotations

import pytest

from lstm_data import kernels as _kernels


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
