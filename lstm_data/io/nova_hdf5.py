"""NOvA HDF5 ntuple tables (placeholder while the reader is written)."""
from __future__ import annotations

from pathlib import Path


def is_nova_file(path: str | Path) -> bool:
    """Whether ``path`` holds NOvA-style tables (not yet recognised)."""
    return False
